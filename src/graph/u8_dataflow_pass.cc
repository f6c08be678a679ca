#include "graph/u8_dataflow_pass.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "graph/passes.h"
#include "graph/quantize_pass.h"

namespace ic {

namespace {

// A Quantize node of a float32 value (quantize_layers' kind), or nullptr.
const QuantizeDesc* f32_quantize(const Node& node) {
  const auto* q = std::get_if<QuantizeDesc>(&node.desc);
  return q != nullptr && q->source == DType::f32 ? q : nullptr;
}

class U8Dataflow {
 public:
  explicit U8Dataflow(InferenceGraph in)
      : in_(std::move(in)),
        graph_(in_.graph),
        consumers_(value_consumers(graph_)),
        read_by_caller_(read_after_forward(graph_)) {}

  InferenceGraph run() {
    // Decide first, on the graph as it is (each decision looks only downstream), then rewrite.
    std::vector<std::optional<float>> pool_scale(graph_.nodes.size());
    std::vector<std::optional<float>> concat_scale(graph_.nodes.size());
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const auto id = static_cast<NodeId>(n);
      pool_scale[n] = pool_input_scale(id);
      concat_scale[n] = u8_concat_scale(id);
    }
    std::vector<Node> nodes;
    nodes.reserve(graph_.nodes.size() + 16);
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      Node node = std::move(graph_.nodes[n]);
      if (const QuantizeDesc* q = f32_quantize(node)) {
        const ValueId x = node.inputs.at(0);
        const ValueId y = node.outputs.at(0);
        if (u8_scale_.count(x)) {  // x is now u8 itself: its readers read it
          alias_[y] = x;
          continue;
        }
        const auto key = std::make_pair(x, scale_key(q->scale));
        if (auto made = quantized_.find(key); made != quantized_.end()) {  // made earlier here
          alias_[y] = made->second;
          continue;
        }
        quantized_.emplace(key, y);
        u8_scale_[y] = q->scale;
        nodes.push_back(std::move(node));
      } else if (pool_scale[n]) {
        ValueId& x = node.inputs.at(0);
        x = u8_form(resolve(x), *pool_scale[n], nodes);
        std::get<Pool2dDesc>(node.desc).activations = DType::u8;
        make_u8(node.outputs.at(0), u8_scale_.at(x));
        ++in_.stats.u8_pools;
        nodes.push_back(std::move(node));
      } else if (concat_scale[n]) {
        const float s = *concat_scale[n];
        for (ValueId& x : node.inputs) x = u8_form(resolve(x), s, nodes);
        std::get<ConcatDesc>(node.desc).activations = DType::u8;
        make_u8(node.outputs.at(0), s);
        ++in_.stats.u8_concats;
        nodes.push_back(std::move(node));
      } else {
        for (ValueId& x : node.inputs) x = resolve(x);
        // An int8 layer whose Quantize node went reads the u8 value at that value's scale.
        std::optional<Int8Conv>* int8 = int8_fields(node);
        if (int8 != nullptr && *int8) {
          auto known = u8_scale_.find(node.inputs.at(0));
          if (known != u8_scale_.end()) (*int8)->input_scale = known->second;
        }
        nodes.push_back(std::move(node));
      }
    }
    graph_.nodes = std::move(nodes);
    graph_ = without_nodes(std::move(graph_), std::vector<bool>(graph_.nodes.size(), false));
    return std::move(in_);
  }

 private:
  // The scale of the first f32 Quantize node reading v; nullopt when none does.
  std::optional<float> quantize_reader_scale(ValueId v) const {
    for (NodeId reader : consumers_[static_cast<size_t>(v)])
      if (const QuantizeDesc* q = f32_quantize(graph_.nodes[static_cast<size_t>(reader)]))
        return q->scale;
    return std::nullopt;
  }

  // Whether pool `p`'s readers take u8: all f32 Quantize nodes, pools whose readers do, or (max
  // pools) concatenations that go u8.
  // Memoized, as u8_concat_scale: both ask about the nodes after them again and again.
  bool pool_readers_take_u8(NodeId p) const {
    if (auto known = pool_memo_.find(p); known != pool_memo_.end()) return known->second;
    const Node& node = graph_.nodes[static_cast<size_t>(p)];
    const auto* pool = std::get_if<Pool2dDesc>(&node.desc);
    const ValueId y = node.outputs.at(0);
    const std::vector<NodeId>& readers = consumers_[static_cast<size_t>(y)];
    bool takes = pool != nullptr && !pool->training && pool->activations == DType::f32 &&
                 !readers.empty() && !read_by_caller_[static_cast<size_t>(y)];
    for (NodeId reader : readers) {
      if (!takes) break;
      takes = f32_quantize(graph_.nodes[static_cast<size_t>(reader)]) != nullptr ||
              pool_readers_take_u8(reader) ||  // a pool after it (Inception's Branch_3)
              (pool->kind == PoolKind::max && u8_concat_scale(reader));
    }
    pool_memo_[p] = takes;
    return takes;
  }

  // The scale pool `p` pools u8 at, when it goes u8: its input's, which is a u8 concatenation,
  // or has a Quantize node; a max pool's input without one gets one at its readers' scale.
  std::optional<float> pool_input_scale(NodeId p) const {
    if (!pool_readers_take_u8(p)) return std::nullopt;
    const Node& node = graph_.nodes[static_cast<size_t>(p)];
    const ValueId x = node.inputs.at(0);
    const NodeId producer = graph_.values[static_cast<size_t>(x)].producer;
    if (producer != kNone) {
      if (std::optional<float> s = u8_concat_scale(producer)) return s;
      if (std::optional<float> s = pool_input_scale(producer)) return s;  // a u8 pool's scale
    }
    if (std::optional<float> s = quantize_reader_scale(x)) return s;
    if (std::get<Pool2dDesc>(node.desc).kind != PoolKind::max) return std::nullopt;
    return quantize_reader_scale(node.outputs.at(0));  // nullopt: its readers are concatenations
  }

  // The scale concatenation `c` writes u8 at: the one scale of its readers, Quantize nodes and
  // concatenations that go u8 (Inception v3's Mixed_7b concatenates its branches' own
  // concatenations), when every other reader is a pool that takes u8. Memoized: the answers of
  // later nodes are asked repeatedly.
  std::optional<float> u8_concat_scale(NodeId c) const {
    if (auto known = concat_memo_.find(c); known != concat_memo_.end()) return known->second;
    const Node& node = graph_.nodes[static_cast<size_t>(c)];
    const auto* concat = std::get_if<ConcatDesc>(&node.desc);
    const ValueId y = node.outputs.at(0);
    std::optional<float> scale;
    bool fits = concat != nullptr && concat->activations == DType::f32 &&
                !read_by_caller_[static_cast<size_t>(y)];
    const auto agree = [&](float s) {
      if (scale && *scale != s) fits = false;
      scale = s;
    };
    for (NodeId reader : consumers_[static_cast<size_t>(y)]) {
      if (!fits) break;
      if (const QuantizeDesc* q = f32_quantize(graph_.nodes[static_cast<size_t>(reader)])) {
        agree(q->scale);
      } else if (std::optional<float> s = u8_concat_scale(reader)) {
        agree(*s);
      } else if (!pool_readers_take_u8(reader)) {
        fits = false;
      }
    }
    const std::optional<float> answer = fits ? scale : std::nullopt;
    concat_memo_[c] = answer;
    return answer;
  }

  ValueId resolve(ValueId v) const {
    auto it = alias_.find(v);
    return it == alias_.end() ? v : it->second;
  }

  void make_u8(ValueId v, float scale) {
    graph_.values[static_cast<size_t>(v)].dtype = DType::u8;
    u8_scale_[v] = scale;
  }

  // v as u8 at `scale`: v itself when it is u8 at that scale; else a Quantize node (a float32
  // v, made once per value and scale) or a requantize (a u8 v at another scale) appended to
  // `nodes`.
  ValueId u8_form(ValueId v, float scale, std::vector<Node>& nodes) {
    auto known = u8_scale_.find(v);
    if (known != u8_scale_.end() && known->second == scale) return v;
    const auto key = std::make_pair(v, scale_key(scale));
    if (auto made = quantized_.find(key); made != quantized_.end()) return made->second;
    const ValueInfo source = graph_.values[static_cast<size_t>(v)];
    QuantizeDesc q{source.shape, scale, kInt8ActivationMax};
    std::string name = source.name + "/quantize";
    if (known != u8_scale_.end()) {
      q.source = DType::u8;
      q.source_scale = known->second;
      name = source.name + "/requantize";
      ++in_.stats.requantized;
    }
    graph_.values.push_back(ValueInfo{name, source.shape, DType::u8, kNone});
    const auto out = static_cast<ValueId>(graph_.values.size() - 1);
    nodes.push_back(Node{name, q, {v}, {out}, {}, {}});
    quantized_.emplace(key, out);
    u8_scale_[out] = scale;
    return out;
  }

  InferenceGraph in_;
  Graph& graph_;
  const std::vector<std::vector<NodeId>> consumers_;
  const std::vector<bool> read_by_caller_;
  mutable std::map<NodeId, std::optional<float>> concat_memo_;
  mutable std::map<NodeId, bool> pool_memo_;
  std::map<ValueId, ValueId> alias_;   // a removed Quantize node's output -> what replaces it
  std::map<ValueId, float> u8_scale_;  // every u8 value so far -> its scale
  std::map<std::pair<ValueId, uint32_t>, ValueId> quantized_;  // (value, scale) -> its u8 form
};

}  // namespace

InferenceGraph pools_and_concats_in_u8(InferenceGraph in) {
  return U8Dataflow(std::move(in)).run();
}

}  // namespace ic
