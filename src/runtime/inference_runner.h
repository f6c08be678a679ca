// A trained model made ready to answer on one backend: the inference graph
// (graph/inference_graph.h: batch norm folded into the convolutions, ReLUs fused, forward-only
// kernels, timed convolution plans) compiled once per batch size, over ONE upload of its
// values that every batch size shares. classify and serve run their batches through it.
//
// A batch may run as slices: batch/s runs of the compiled graph of s images. A network bound
// by memory (MobileNet's, EfficientNet's depthwise blocks) whose activations for a large
// batch overflow the caches runs faster so; one bound by arithmetic (Inception) does not.
// Where several sizes are compiled and timing is on (InferenceGraphOptions::time_algorithms
// and IC_CONV_TIMING not 0), create() times every compiled graph (three rounds, each graph
// once per round, the fastest kept) and runs every batch size as the slices with the least
// time per image. Slices of one image give that image's logits
// of the size-1 graph, bit for bit; another compiled size may round differently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "graph/compiled_graph.h"
#include "graph/inference_graph.h"
#include "runtime/inference_model.h"

namespace ic {

class InferenceRunner {
 public:
  // Compiles `model` for each of `batch_sizes` (each 1 or more). Errors name the checkpoint.
  static Result<std::unique_ptr<InferenceRunner>> create(Backend& backend,
                                                         const InferenceModel& model,
                                                         const std::vector<int64_t>& batch_sizes,
                                                         const InferenceGraphOptions& options = {});

  // The compiled batch sizes, ascending.
  std::vector<int64_t> batch_sizes() const;
  int64_t image_floats() const { return image_floats_; }  // H * W * 3 of one image
  int64_t num_classes() const { return num_classes_; }
  // What the inference passes did to the smallest batch size's graph. The graphs of every batch
  // size are made alike but for the choices timed per shape (a depthwise convolution fused into
  // the pointwise one before it where that runs faster: see the other overload).
  const InferencePassStats& pass_stats() const { return graphs_.front().stats; }
  // What they did to the graph of `batch_size` (one of batch_sizes()).
  const InferencePassStats& pass_stats(int64_t batch_size) const {
    return graphs_[index_of(batch_size)].stats;
  }

  // Runs `batch_size` (one of batch_sizes()) preprocessed images [batch_size, H, W, 3] and
  // writes their logits [batch_size, num_classes]. One caller at a time.
  void run(int64_t batch_size, const float* images, float* logits);

  // The inference graph compiled for `batch_size` (one of batch_sizes()) and its kernels, for
  // reports (multiply-adds, the arena, IC_PROFILE).
  const Graph& graph(int64_t batch_size) const { return graphs_[index_of(batch_size)].graph; }
  const CompiledGraph& compiled_graph(int64_t batch_size) const {
    return *graphs_[index_of(batch_size)].compiled;
  }

  // The compiled size whose graph runs `batch_size` (itself: the whole batch at once).
  int64_t slice_of(int64_t batch_size) const;
  // Runs `batch_size` as slices of `slice` images from now on: both compiled, `slice` divides
  // `batch_size` (tests and benchmarks; create() chooses by timing).
  Status run_as_slices(int64_t batch_size, int64_t slice);
  // How `batch_size` runs, as one word: "whole" or "8x4" (8 runs of the graph of 4).
  std::string how_it_runs(int64_t batch_size) const;
  // The sizes that run as slices, "32 as 8 x 4, 16 as 4 x 4"; "" when every batch runs whole.
  std::string slices_summary() const;
  // Seconds `batch_size` took as it runs, from create()'s timing; 0 when create() timed
  // nothing (one size, or timing off).
  double timed_seconds(int64_t batch_size) const;

 private:
  explicit InferenceRunner(Backend& backend) : backend_(backend) {}
  struct Compiled {
    int64_t batch_size = 0;
    int64_t slice = 0;             // the compiled size that runs it (batch_size: itself)
    double seconds_per_image = 0;  // this graph's, as timed by create(); 0: not timed
    Graph graph;                   // the inference graph the kernels were compiled from
    InferencePassStats stats;      // what the inference passes did to it
    std::unique_ptr<CompiledGraph> compiled;
  };
  size_t index_of(int64_t batch_size) const;  // graphs_.size() when not compiled
  // Times every graph (a warm-up, then three rounds) and gives each size the slices of least
  // time per image.
  void choose_slices_by_timing();

  Backend& backend_;
  DeviceParams params_;
  std::vector<Compiled> graphs_;  // ascending batch size
  int64_t image_floats_ = 0, num_classes_ = 0;
};

}  // namespace ic
