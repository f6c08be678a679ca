#include "runtime/inference_runner.h"

#include <algorithm>
#include <chrono>
#include <limits>

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
    }
    Compiled c;
    c.batch_size = size;
    c.stats = inference->stats;
    c.graph = std::move(inference->graph);
    IC_ASSIGN_OR_RETURN(c.compiled, CompiledGraph::compile(c.graph, backend, runner->params_.layout,
                                                           runner->params_.binding()));
    c.slice = size;
    runner->graphs_.push_back(std::move(c));
  }
  if (runner->graphs_.size() > 1 && options.time_algorithms && compile_timing_allowed())
    runner->choose_slices_by_timing();
  return runner;
}

size_t InferenceRunner::index_of(int64_t batch_size) const {
  return static_cast<size_t>(
      std::find_if(graphs_.begin(), graphs_.end(),
                   [&](const Compiled& c) { return c.batch_size == batch_size; }) -
      graphs_.begin());
}

void InferenceRunner::choose_slices_by_timing() {
  // Zero images: the time of a forward does not depend on the pixels.
  const int64_t largest = graphs_.back().batch_size;
  const std::vector<float> images(static_cast<size_t>(largest * image_floats_), 0.f);
  std::vector<float> logits(static_cast<size_t>(largest * num_classes_));
  // The first run of each graph converts weights and touches the arena. Then three rounds
  // time every graph once in turn, and each keeps its fastest: on a shared machine a slow
  // spell then lands on all sizes alike instead of on whichever was being timed.
  for (Compiled& c : graphs_) {
    run(c.batch_size, images.data(), logits.data());
    c.seconds_per_image = std::numeric_limits<double>::infinity();
  }
  for (int round = 0; round < 3; ++round) {
    for (Compiled& c : graphs_) {
      const auto start = std::chrono::steady_clock::now();
      run(c.batch_size, images.data(), logits.data());
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      c.seconds_per_image =
          std::min(c.seconds_per_image, seconds / static_cast<double>(c.batch_size));
    }
  }
  for (size_t i = 0; i < graphs_.size(); ++i) {
    // Slices must beat the whole batch by a clear margin: timings on a shared machine are
    // noisy, and the whole batch is what the caller compiled.
    double best = graphs_[i].seconds_per_image * 0.9;
    for (size_t j = 0; j < i; ++j) {
      if (graphs_[i].batch_size % graphs_[j].batch_size == 0 &&
          graphs_[j].seconds_per_image < best) {
        best = graphs_[j].seconds_per_image;
        graphs_[i].slice = graphs_[j].batch_size;
      }
    }
  }
}

int64_t InferenceRunner::slice_of(int64_t batch_size) const {
  const size_t i = index_of(batch_size);
  return i < graphs_.size() ? graphs_[i].slice : 0;
}

Status InferenceRunner::run_as_slices(int64_t batch_size, int64_t slice) {
  if (index_of(batch_size) == graphs_.size() || index_of(slice) == graphs_.size())
    return invalid_argument("batch ", batch_size, " as slices of ", slice,
                            ": both must be compiled batch sizes");
  if (slice > batch_size || batch_size % slice != 0)
    return invalid_argument("batch ", batch_size, " as slices of ", slice, ": ", slice,
                            " does not divide it");
  graphs_[index_of(batch_size)].slice = slice;
  return Status();
}

std::string InferenceRunner::how_it_runs(int64_t batch_size) const {
  const int64_t slice = slice_of(batch_size);
  if (slice == batch_size) return "whole";
  return std::to_string(batch_size / slice) + "x" + std::to_string(slice);
}

std::string InferenceRunner::slices_summary() const {
  std::string summary;
  for (auto c = graphs_.rbegin(); c != graphs_.rend(); ++c) {
    if (c->slice == c->batch_size) continue;
    if (!summary.empty()) summary += ", ";
    summary += std::to_string(c->batch_size) + " as " + std::to_string(c->batch_size / c->slice) +
               " x " + std::to_string(c->slice);
  }
  return summary;
}

double InferenceRunner::timed_seconds(int64_t batch_size) const {
  return graphs_[index_of(slice_of(batch_size))].seconds_per_image *
         static_cast<double>(batch_size);
}

std::vector<int64_t> InferenceRunner::batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const Compiled& c : graphs_) sizes.push_back(c.batch_size);
  return sizes;
}

void InferenceRunner::run(int64_t batch_size, const float* images, float* logits) {
  const int64_t slice = graphs_[index_of(batch_size)].slice;
  CompiledGraph& graph = *graphs_[index_of(slice)].compiled;
  const size_t in_floats = static_cast<size_t>(slice * image_floats_);
  const size_t out_floats = static_cast<size_t>(slice * num_classes_);
  for (int64_t done = 0; done < batch_size; done += slice) {
    backend_.upload(graph.images(), images, in_floats * sizeof(float));
    graph.forward(StepContext{});
    backend_.download(logits, graph.logits(), out_floats * sizeof(float));
    images += in_floats;
    logits += out_floats;
  }
}

}  // namespace ic
