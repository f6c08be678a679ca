#include "graph/precision_pass.h"

#include <map>
#include <string>
#include <utility>

namespace ic {

namespace {

// Sets the desc's `activations` to bf16; false for descs without one (they stay f32).
struct SetBf16 {
  template <typename Desc>
  bool operator()(Desc& d) const {
    if constexpr (requires { d.activations; }) {
      d.activations = DType::bf16;
      return true;
    } else {
      return false;
    }
  }
};

bool is_int8_layer(const Node& node) {
  if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc)) return conv->int8.has_value();
  if (const auto* dense = std::get_if<DenseDesc>(&node.desc)) return dense->int8.has_value();
  return std::holds_alternative<QuantizeDesc>(node.desc);
}

// Rebuilds the node list, adding casts where a reader's type differs from the value's.
class Bf16Rewriter {
 public:
  explicit Bf16Rewriter(const Graph& graph) : out_(graph) { out_.nodes.clear(); }

  Result<Graph> run(const Graph& graph, ActivationPrecisionStats* stats) {
    for (const Node& original : graph.nodes) {
      Node node = original;
      const bool bf16 = std::visit(SetBf16{}, node.desc);
      const DType wanted = bf16 ? DType::bf16 : DType::f32;
      for (ValueId& input : node.inputs) {
        const DType have = out_.values[static_cast<size_t>(input)].dtype;
        if (have == wanted || (have != DType::f32 && have != DType::bf16)) continue;  // labels
        input = cast(input, wanted);
      }
      if (bf16) {
        for (ValueId output : node.outputs) {
          out_.values[static_cast<size_t>(output)].dtype = DType::bf16;
          ++bf16_values_;
        }
      }
      for (ValueId output : node.outputs)
        out_.values[static_cast<size_t>(output)].producer = static_cast<NodeId>(out_.nodes.size());
      out_.nodes.push_back(std::move(node));
    }
    if (out_.logits != kNone && out_.values[static_cast<size_t>(out_.logits)].dtype == DType::bf16)
      out_.logits = cast(out_.logits, DType::f32);
    if (stats) *stats = ActivationPrecisionStats{bf16_values_, casts_};
    return std::move(out_);
  }

 private:
  // The value `v` converted to `to`, made once per value and type.
  ValueId cast(ValueId v, DType to) {
    const auto key = std::make_pair(v, to);
    if (auto known = casts_made_.find(key); known != casts_made_.end()) return known->second;
    const ValueInfo info = out_.values[static_cast<size_t>(v)];
    const std::string name = info.name + (to == DType::bf16 ? "/to_bf16" : "/to_f32");
    const auto id = static_cast<ValueId>(out_.values.size());
    out_.values.push_back(ValueInfo{name, info.shape, to, static_cast<NodeId>(out_.nodes.size())});
    out_.nodes.push_back(Node{name, CastDesc{info.shape, info.dtype, to}, {v}, {id}, {}, {}});
    casts_made_.emplace(key, id);
    ++casts_;
    return id;
  }

  Graph out_;
  std::map<std::pair<ValueId, DType>, ValueId> casts_made_;
  int bf16_values_ = 0, casts_ = 0;
};

}  // namespace

Result<Graph> store_activations_in_bf16(const Graph& graph, ActivationPrecisionStats* stats) {
  for (const Node& node : graph.nodes) {
    if (is_int8_layer(node))
      return error("bf16 activations and int8 layers do not mix (", node.name, " is int8)");
  }
  return Bf16Rewriter(graph).run(graph, stats);
}

}  // namespace ic
