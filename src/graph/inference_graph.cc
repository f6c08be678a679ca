#include "graph/inference_graph.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "graph/passes.h"
#include "graph/precision_pass.h"
#include "graph/u8_dataflow_pass.h"

namespace ic {

namespace {

// Every kernel forward only; convolution weights constant, implementations timed.
void mark_forward_only(Graph& graph, const InferenceGraphOptions& options) {
  for (Node& node : graph.nodes) {
    if (auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      conv->training = false;
      conv->constant_weights = true;
      conv->time_algorithms = options.time_algorithms;
      conv->compute = options.compute;
    } else if (auto* dense = std::get_if<DenseDesc>(&node.desc)) {
      dense->training = false;
    } else if (auto* pool = std::get_if<Pool2dDesc>(&node.desc)) {
      pool->training = false;
    }
  }
}

}  // namespace

Result<ParamValues> read_param_values(const Graph& graph, const ParamSource& source) {
  ParamValues values(graph.params.size());
  for (size_t p = 0; p < graph.params.size(); ++p) {
    const ParamInfo& param = graph.params[p];
    const ParamBytes bytes = source(param.name);
    if (bytes.data == nullptr) return error("no value for parameter ", param.name);
    const auto count = static_cast<size_t>(param.shape.numel());
    if (bytes.bytes != count * sizeof(float))
      return error("parameter ", param.name, " ", param.shape.str(), " needs ",
                   count * sizeof(float), " bytes of float32, the value has ", bytes.bytes);
    values[p].resize(count);
    if (count > 0) std::memcpy(values[p].data(), bytes.data, bytes.bytes);
  }
  return values;
}

Result<InferenceGraph> prepare_inference_graph(const Graph& graph, const ParamSource& source,
                                               const InferenceGraphOptions& options) {
  if (graph.training)
    return error("prepare_inference_graph needs an inference graph (training = false)");
  IC_ASSIGN_OR_RETURN(ParamValues values, read_param_values(graph, source));
  PassStats dropout;
  InferenceGraph inference{remove_identity_dropout(graph, &dropout), std::move(values), {}};
  inference.stats.removed_identity_dropout = dropout.removed_identity_dropout;
  inference = remove_dead_nodes(std::move(inference));
  if (options.fold_batch_norm) {
    const InferencePassStats before = inference.stats;
    IC_ASSIGN_OR_RETURN(inference, fold_batch_norm(inference.graph, inference.values));
    inference.stats.removed_identity_dropout += before.removed_identity_dropout;
    inference.stats.removed_dead_nodes += before.removed_dead_nodes;
    inference = fuse_conv_activations(std::move(inference));
    // Not for int8: its calibrated input scales are the pools' outputs'.
    if (!options.int8) inference = pool_after_pointwise_conv(std::move(inference));
  }
  inference = remove_unused_params(std::move(inference));
  mark_forward_only(inference.graph, options);
  if (options.int8) {
    IC_ASSIGN_OR_RETURN(inference,
                        quantize_layers(std::move(inference), *options.int8, options.int8_pays));
    if (options.int8_outputs) {
      inference = pools_and_concats_in_u8(std::move(inference));
      inference = write_int8_outputs(std::move(inference));
    }
  }
  if (options.activations == DType::bf16) {
    ActivationPrecisionStats bf16;
    IC_ASSIGN_OR_RETURN(inference.graph, store_activations_in_bf16(inference.graph, &bf16,
                                                                   options.conv_compute_type));
    inference.stats.bf16_activations = bf16.bf16_values;
    inference.stats.casts = bf16.casts;
    inference.stats.float32_convolutions = bf16.float32_convolutions;
  } else if (options.activations != DType::f32) {
    return error("activations in ", dtype_name(options.activations),
                 ": an inference graph holds them in f32 or bf16");
  }
  // Last: it needs the final types (float32 only) and each layer's own output for int8's scales.
  if (options.fold_batch_norm && !options.int8 && options.fuses_depthwise)
    inference = fuse_depthwise_into_pointwise(std::move(inference), options.fuses_depthwise);
  return inference;
}

ParamBinding DeviceParams::binding() const {
  return ParamBinding{weights.as<float>(), state.as<float>(), nullptr};
}

Result<DeviceParams> upload_params(Backend& backend, const InferenceGraph& inference) {
  IC_RETURN_IF_ERROR(check_param_values(inference.graph, inference.values));
  DeviceParams params;
  params.layout = ParamLayout::plan(inference.graph);
  // At least one float each, so the binding's pointers are never null.
  IC_ASSIGN_OR_RETURN(params.weights,
                      backend.allocate(std::max<size_t>(params.layout.trainable_count, 1) * 4));
  IC_ASSIGN_OR_RETURN(params.state,
                      backend.allocate(std::max<size_t>(params.layout.state_count, 1) * 4));
  for (size_t p = 0; p < inference.graph.params.size(); ++p) {
    const std::vector<float>& value = inference.values[p];
    float* arena =
        inference.graph.params[p].trainable ? params.weights.as<float>() : params.state.as<float>();
    backend.upload(arena + params.layout.offset[p], value.data(), value.size() * sizeof(float));
  }
  backend.synchronize();
  return params;
}

}  // namespace ic
