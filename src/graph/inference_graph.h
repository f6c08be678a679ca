// The graph the inference programs (classify, serve, the benchmark) run, and the values they
// upload for it. From a model's inference graph for one batch size (models/ builds it with
// training = false) and the trained values of its parameters:
//   1. dropout removed (the identity), nodes the logits do not need removed (aux heads);
//   2. batch norms folded into the convolutions before them (inference_passes.h), ReLUs
//      fused into those convolutions, unused parameters dropped;
//   3. every kernel forward only, convolution weights constant (a backend converts them
//      into its own format once), convolution implementations chosen by timing;
//   4. with options.activations = bf16, the activations held in bf16 between ops.
// The result has its own parameters ("<conv>/folded_weights", "<conv>/folded_bias" and the
// unfolded ones it still reads) with their values on the host. Neither depends on the batch
// size: the graphs of several batch sizes can share one upload_params().
//
//   IC_ASSIGN_OR_RETURN(Graph graph, build_model(options));   // options.batch_size = N
//   IC_ASSIGN_OR_RETURN(InferenceGraph inference, prepare_inference_graph(graph, source));
//   IC_ASSIGN_OR_RETURN(DeviceParams params, upload_params(backend, inference));
//   IC_ASSIGN_OR_RETURN(auto compiled, CompiledGraph::compile(inference.graph, backend,
//                                                             params.layout, params.binding()));
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/inference_passes.h"
#include "graph/param_layout.h"
#include "graph/precision_pass.h"
#include "graph/quantize_pass.h"

namespace ic {

struct InferenceGraphOptions {
  // false: no folding or fusion (the graph computes exactly what the model graph does, on
  // forward-only kernels), for comparisons.
  bool fold_batch_norm = true;
  // Convolution implementations chosen by timing each once when the graph is compiled;
  // false (or IC_CONV_TIMING=0 in the environment) keeps the backend's fixed choice.
  bool time_algorithms = true;
  // bf16: convolutions compute in bfloat16 where the backend has it (else float32).
  DType compute = DType::f32;
  // bf16: every activation between two ops is held in bfloat16 (graph/precision_pass.h), for a
  // backend whose kernels take them (Backend::supports_bf16_activations); f32 otherwise.
  DType activations = DType::f32;
  // With bf16 activations: where set, a convolution this says computes in float32 (the backend
  // timed it faster so: Backend::conv_compute_type) keeps float32 activations, and so do the ops
  // around it (graph/precision_pass.h); unset, every activation is bf16.
  ConvComputeType conv_compute_type;
  // Set: the layers it names run in int8 (graph/quantize_pass.h), after folding.
  std::optional<QuantizationTable> int8;
  // With int8: where set, a convolution of the table this turns down (the backend timed its
  // float32 plan faster: Backend::int8_conv_pays) stays float32. Unset: every layer named is int8.
  Int8Pays int8_pays;
  // Between int8 layers, pools and concatenations move u8 (pools_and_concats_in_u8), and int8
  // convolutions that only int8 layers read write u8 themselves (write_int8_outputs: the same
  // bytes); false keeps a Quantize node before every int8 layer, for comparisons.
  bool int8_outputs = true;
  // Where set (and folding is on, without int8): a depthwise convolution after a pointwise one
  // runs inside it where this says the backend takes the fused desc (Backend::fuses_depthwise;
  // inference_passes.h's fuse_depthwise_into_pointwise). Unset: no such fusion.
  std::function<bool(const Conv2dDesc&)> fuses_depthwise;
};

// One parameter's value as a checkpoint holds it: shape.numel() float32s, row-major,
// little-endian. data = nullptr: the parameter is missing.
struct ParamBytes {
  const void* data = nullptr;
  size_t bytes = 0;
};
// The value of the parameter named `name` (TF-slim's names: "InceptionV3/.../weights").
// With TrainedModel::weights, a std::map<std::string, TensorEntry>:
//   [&](const std::string& name) {
//     auto it = weights.find(name);
//     return it == weights.end() ? ParamBytes{} : ParamBytes{it->second.bytes.data(),
//                                                            it->second.bytes.size()};
//   }
using ParamSource = std::function<ParamBytes(const std::string& name)>;

// The inference graph of `graph` (an inference graph: training = false) with the values of
// its parameters. Fails naming the parameter when `source` lacks one or has the wrong size.
Result<InferenceGraph> prepare_inference_graph(const Graph& graph, const ParamSource& source,
                                               const InferenceGraphOptions& options = {});

// The values of `graph`'s parameters read from `source`, per ParamId.
Result<ParamValues> read_param_values(const Graph& graph, const ParamSource& source);

// An inference graph's values on a device, in the ParamLayout CompiledGraph::compile reads.
struct DeviceParams {
  ParamLayout layout;
  DeviceBuffer weights, state;
  ParamBinding binding() const;
};
Result<DeviceParams> upload_params(Backend& backend, const InferenceGraph& inference);

}  // namespace ic
