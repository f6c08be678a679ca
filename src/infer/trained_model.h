// A trained model as the programs after training see it (classify, export, serve): which
// checkpoint, its metadata, the options of its inference network, and the value of every
// parameter and batch-norm statistic under its TF-slim name. The exporters walk
// build_inference_graph()'s nodes with these values; the server compiles that graph.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "graph/graph.h"
#include "io/checkpoint_contents.h"
#include "models/model.h"
#include "train/model_state.h"

namespace ic {

struct TrainedModel {
  std::string checkpoint;  // the file or bundle prefix that was read
  int64_t global_step = 0;
  CheckpointMeta meta;
  // Inference: batch norm on moving statistics, no dropout, no loss; the auxiliary head is
  // kept (its tensors are in every Inception checkpoint) but nothing reads it.
  ModelOptions options;
  // Every parameter and state tensor of the network, f32, shapes as the graph's ParamInfo.
  // Each is its ExponentialMovingAverage shadow when the checkpoint has one (what evaluation
  // and classify use, moving statistics included), else the raw value.
  std::map<std::string, TensorEntry> weights;
};

// `checkpoint` when given (a bundle prefix model.ckpt-N, its .index, or a .safetensors file),
// else the newest checkpoint of `model_dir`. Errors name the directory or file.
Result<std::string> resolve_checkpoint(const std::string& model_dir, const std::string& checkpoint);

// Reads, checks (metadata ranges, finite values, every tensor the network needs with its
// shape) and returns the model. The file's own errors name the file.
Result<TrainedModel> load_trained_model(const std::string& model_dir,
                                        const std::string& checkpoint);

// The options of the inference network a checkpoint with `meta` was trained as.
Result<ModelOptions> inference_model_options(const CheckpointMeta& meta, int64_t batch_size);

// The inference graph of `model` for `batch_size` images.
Result<Graph> build_inference_graph(const TrainedModel& model, int64_t batch_size);

}  // namespace ic
