#include "infer/calibration.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "data/input_pipeline.h"
#include "graph/compiled_graph.h"
#include "graph/inference_graph.h"

namespace ic {

namespace {

// What calibration learns about the value one layer reads.
struct InputRange {
  int64_t floats_per_row = 0;  // numel / batch
  double sum_of_batch_max = 0.0;
  int64_t batches = 0;
  float min = std::numeric_limits<float>::infinity();
};

// The layers worth quantizing: convolutions and dense layers, by name, with their output
// channels and the name of the weight parameter in model.weights (before folding).
struct Candidate {
  int64_t channels = 0;
  std::string weights;  // "<layer>/weights"
};

std::map<std::string, Candidate> candidates(const Graph& model_graph) {
  std::map<std::string, Candidate> out;
  for (const Node& node : model_graph.nodes) {
    int64_t channels = 0;
    if (const auto* conv = std::get_if<Conv2dDesc>(&node.desc)) {
      channels = conv->out_channels;
    } else if (const auto* dense = std::get_if<DenseDesc>(&node.desc)) {
      channels = dense->out_features;
    } else {
      continue;
    }
    out[node.name] =
        Candidate{channels, model_graph.params.at(static_cast<size_t>(node.params.at(0))).name};
  }
  return out;
}

}  // namespace

std::string training_data_dir(const CheckpointMeta& meta) {
  std::istringstream flags(meta.flags);
  std::string flag;
  const std::string key = "--data_dir=";
  while (flags >> flag)
    if (flag.rfind(key, 0) == 0) return flag.substr(key.size());
  return {};
}

Result<QuantizationTable> calibrate_int8(Backend& backend, const InferenceModel& model,
                                         const CalibrationOptions& options) {
  if (options.data_dir.empty())
    return invalid_argument("int8 calibration needs TFRecord images (--calibration_data)");
  if (options.images < 1 || options.batch_size < 1)
    return invalid_argument("int8 calibration: images (", options.images, ") and batch size (",
                            options.batch_size, ") must be positive");
  const int64_t batch = std::min(options.batch_size, options.images);
  IC_ASSIGN_OR_RETURN(Graph model_graph, build_inference_graph(model, batch));
  const ParamSource source = [&](const std::string& name) {
    auto it = model.weights.find(name);
    if (it == model.weights.end()) return ParamBytes{};
    return ParamBytes{it->second.bytes.data(), it->second.bytes.size()};
  };
  InferenceGraphOptions graph_options;
  graph_options.time_algorithms = false;  // a few batches: timing would cost more than it saves
  Result<InferenceGraph> inference = prepare_inference_graph(model_graph, source, graph_options);
  if (!inference.ok()) return inference.status().with_context(model.checkpoint);
  IC_ASSIGN_OR_RETURN(DeviceParams params, upload_params(backend, *inference));
  IC_ASSIGN_OR_RETURN(auto compiled, CompiledGraph::compile(inference->graph, backend,
                                                            params.layout, params.binding()));

  const std::map<std::string, Candidate> layers = candidates(model_graph);
  // One range per value: the branches of an Inception block read one value, which is looked
  // at once per batch, not once per branch.
  std::map<std::string, ValueId> reads;  // layer -> the value it reads
  std::map<ValueId, InputRange> ranges;
  for (const Node& node : inference->graph.nodes) {
    if (layers.count(node.name) == 0) continue;
    const ValueId x = node.inputs.at(0);
    reads[node.name] = x;
    ranges[x].floats_per_row =
        inference->graph.values.at(static_cast<size_t>(x)).shape.numel() / batch;
  }

  InputOptions in;
  in.data_dir = options.data_dir;
  in.training = false;
  in.eval_file_prefix = options.file_prefix;
  in.batch_size = batch;
  in.height = model.meta.height;
  in.width = model.meta.width;
  in.max_eval_images = options.images;
  in.num_classes = 0;  // calibration reads no label: any labelled images serve
  Result<std::unique_ptr<InputPipeline>> pipeline = InputPipeline::create(in);
  if (!pipeline.ok())
    return pipeline.status().with_context("int8 calibration data " + options.data_dir);

  int64_t seen = 0;
  std::vector<float> host;
  std::set<ValueId> observed;  // this batch's
  while (seen < options.images) {
    IC_ASSIGN_OR_RETURN(std::shared_ptr<const Batch> next, (*pipeline)->next());
    if (next == nullptr) break;
    if (next->valid == 0) continue;
    backend.upload(compiled->images(), next->images.data(), next->images.size() * sizeof(float));
    observed.clear();
    compiled->forward_observing(
        StepContext{}, [&](const std::string& name, const std::vector<const void*>& inputs) {
          auto read = reads.find(name);
          if (read == reads.end() || !observed.insert(read->second).second) return;
          InputRange& r = ranges.at(read->second);
          host.resize(static_cast<size_t>(r.floats_per_row * batch));
          backend.download(host.data(), inputs.at(0), host.size() * sizeof(float));
          float batch_max = -std::numeric_limits<float>::infinity();
          for (int64_t row = 0; row < batch; ++row) {
            if (next->labels[static_cast<size_t>(row)] < 0) continue;  // padding, undecodable
            const float* x = host.data() + row * r.floats_per_row;
            const auto [lo, hi] = std::minmax_element(x, x + r.floats_per_row);
            r.min = std::min(r.min, *lo);
            batch_max = std::max(batch_max, *hi);
          }
          r.sum_of_batch_max += batch_max;
          ++r.batches;
        });
    seen += next->valid;
  }
  if (seen == 0)
    return invalid_argument("int8 calibration read no image from ", options.data_dir, "/",
                            options.file_prefix, "*");

  QuantizationTable table;
  table.calibration_images = std::min(seen, options.images);
  table.calibration_data = options.data_dir + "/" + options.file_prefix + "*";
  for (const auto& [name, x] : reads) {
    const InputRange& r = ranges.at(x);
    const double mean_max =
        r.batches > 0 ? r.sum_of_batch_max / static_cast<double>(r.batches) : 0.0;
    if (r.min < 0.f || !(mean_max > 0.0)) continue;  // signed or dead input: stays float32
    const Candidate& layer = layers.at(name);
    auto w = model.weights.find(layer.weights);
    if (w == model.weights.end())
      return not_found(model.checkpoint, ": no tensor ", layer.weights, " for int8 layer ", name);
    std::vector<float> weights(w->second.bytes.size() / sizeof(float));
    std::memcpy(weights.data(), w->second.bytes.data(), weights.size() * sizeof(float));
    table.layers[name] = LayerQuantization{static_cast<float>(mean_max / kInt8ActivationMax),
                                           per_channel_weight_scales(weights, layer.channels)};
  }
  return table;
}

Status calibrate_on_cpu(InferenceModel& model, CalibrationOptions options, int num_threads) {
  if (options.data_dir.empty()) options.data_dir = training_data_dir(model.meta);
  if (options.data_dir.empty())
    return invalid_argument("int8 needs calibration images (--calibration_data): ",
                            model.checkpoint, " does not record the --data_dir it was trained on");
  BackendOptions backend_options;
  backend_options.num_threads = num_threads;
  IC_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, make_backend(backend_options));
  IC_ASSIGN_OR_RETURN(QuantizationTable table, calibrate_int8(*backend, model, options));
  model.int8 = std::move(table);
  return Status();
}

}  // namespace ic
