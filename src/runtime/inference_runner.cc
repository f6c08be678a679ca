#include "runtime/inference_runner.h"

#include <algorithm>

namespace ic {

Result<std::unique_ptr<InferenceRunner>> InferenceRunner::create(
    Backend& backend, const InferenceModel& model, const std::vector<int64_t>& batch_sizes,
    const InferenceGraphOptions& options) {
  if (batch_sizes.empty()) return invalid_argument("InferenceRunner: no batch size");
  std::vector<int64_t> sizes = batch_sizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.front() < 1) return invalid_argument("bad batch size ", sizes.front(), " (1 or more)");

  const ParamSource source = [&](const std::string& name) {
    auto it = model.weights.find(name);
    if (it == model.weights.end()) return ParamBytes{};
    return ParamBytes{it->second.bytes.data(), it->second.bytes.size()};
  };
  std::unique_ptr<InferenceRunner> runner(new InferenceRunner(backend));
  runner->image_floats_ = int64_t{model.meta.height} * model.meta.width * 3;
  runner->num_classes_ = model.meta.num_classes;
  for (int64_t size : sizes) {
    IC_ASSIGN_OR_RETURN(Graph graph, build_inference_graph(model, size));
    Result<InferenceGraph> inference = prepare_inference_graph(graph, source, options);
    if (!inference.ok()) return inference.status().with_context(model.checkpoint);
    // The folded values do not depend on the batch size: the first graph's upload serves all.
    if (runner->graphs_.empty()) {
      IC_ASSIGN_OR_RETURN(runner->params_, upload_params(backend, *inference));
      runner->pass_stats_ = inference->stats;
    }
    Compiled c;
    c.batch_size = size;
    c.graph = std::move(inference->graph);
    IC_ASSIGN_OR_RETURN(c.compiled, CompiledGraph::compile(c.graph, backend, runner->params_.layout,
                                                           runner->params_.binding()));
    runner->graphs_.push_back(std::move(c));
  }
  return runner;
}

std::vector<int64_t> InferenceRunner::batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const Compiled& c : graphs_) sizes.push_back(c.batch_size);
  return sizes;
}

void InferenceRunner::run(int64_t batch_size, const float* images, float* logits) {
  auto it = std::find_if(graphs_.begin(), graphs_.end(),
                         [&](const Compiled& c) { return c.batch_size == batch_size; });
  CompiledGraph& graph = *it->compiled;
  const size_t n = static_cast<size_t>(batch_size);
  backend_.upload(graph.images(), images, n * static_cast<size_t>(image_floats_) * sizeof(float));
  graph.forward(StepContext{});
  backend_.download(logits, graph.logits(), n * static_cast<size_t>(num_classes_) * sizeof(float));
}

}  // namespace ic
