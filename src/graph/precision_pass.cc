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

// The element count of a value's shape.
int64_t elements(const Graph& graph, ValueId v) {
  return graph.values[static_cast<size_t>(v)].shape.numel();
}

// Rebuilds the node list, adding casts where a reader's type differs from the value's.
class Bf16Rewriter {
 public:
  Bf16Rewriter(const Graph& graph, const ConvComputeType& compute_type)
      : out_(graph), compute_type_(compute_type) {
    out_.nodes.clear();
  }

  Result<Graph> run(const Graph& graph, ActivationPrecisionStats* stats) {
    for (const Node& original : graph.nodes) {
      Node node = original;
      IC_ASSIGN_OR_RETURN(const bool bf16, choose_bf16(node));
      const DType wanted = bf16 ? DType::bf16 : DType::f32;
      for (ValueId& input : node.inputs) {
        const DType have = out_.values[static_cast<size_t>(input)].dtype;
        if (have == wanted || (have != DType::f32 && have != DType::bf16)) continue;  // labels
        input = cast(input, wanted);
      }
      if (bf16) {
        for (ValueId output : node.outputs) {
          out_.values[static_cast<size_t>(output)].dtype = DType::bf16;
          ++stats_.bf16_values;
        }
      }
      for (ValueId output : node.outputs)
        out_.values[static_cast<size_t>(output)].producer = static_cast<NodeId>(out_.nodes.size());
      out_.nodes.push_back(std::move(node));
    }
    if (out_.logits != kNone && out_.values[static_cast<size_t>(out_.logits)].dtype == DType::bf16)
      out_.logits = cast(out_.logits, DType::f32);
    if (stats) *stats = stats_;
    return std::move(out_);
  }

 private:
  // Whether `node` (its desc updated to match) holds its activations in bf16.
  Result<bool> choose_bf16(Node& node) {
    const OpDesc as_given = node.desc;
    if (!std::visit(SetBf16{}, node.desc)) return false;
    if (!compute_type_) return true;
    if (auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      IC_ASSIGN_OR_RETURN(const DType compute, compute_type_(*conv));
      if (compute == DType::bf16) return true;
      node.desc = as_given;  // float32 activations
      std::get<Conv2dDesc>(node.desc).compute = DType::f32;
      ++stats_.float32_convolutions;
      return false;
    }
    // Any other op follows its largest float input (a graph input: the images, f32).
    ValueId largest = kNone;
    for (ValueId input : node.inputs) {
      const DType have = out_.values[static_cast<size_t>(input)].dtype;
      if (have != DType::f32 && have != DType::bf16) continue;
      if (largest == kNone || elements(out_, input) > elements(out_, largest)) largest = input;
    }
    if (largest != kNone && out_.values[static_cast<size_t>(largest)].dtype == DType::bf16)
      return true;
    node.desc = as_given;
    return false;
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
    ++stats_.casts;
    return id;
  }

  Graph out_;
  const ConvComputeType& compute_type_;
  std::map<std::pair<ValueId, DType>, ValueId> casts_made_;
  ActivationPrecisionStats stats_;
};

}  // namespace

Result<Graph> store_activations_in_bf16(const Graph& graph, ActivationPrecisionStats* stats,
                                        const ConvComputeType& compute_type) {
  for (const Node& node : graph.nodes) {
    if (is_int8_layer(node))
      return error("bf16 activations and int8 layers do not mix (", node.name, " is int8)");
  }
  return Bf16Rewriter(graph, compute_type).run(graph, stats);
}

}  // namespace ic
