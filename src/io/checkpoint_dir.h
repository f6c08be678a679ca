// TensorFlow's checkpoint bookkeeping in a model_dir, with safetensors files:
//   model_dir/model.ckpt-<step>.safetensors   one per save (see io/safetensors.h)
//   model_dir/checkpoint                       text, exactly as tf.train.Saver writes it:
//     model_checkpoint_path: "model.ckpt-1200"
//     all_model_checkpoint_paths: "model.ckpt-800"
//     all_model_checkpoint_paths: "model.ckpt-1200"
// Paths in `checkpoint` are relative to model_dir (TF's save_relative_paths); absolute ones
// written by other tools are honoured. A name without ".safetensors" means that file plus it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/safetensors.h"

namespace ic {

// model_dir/model.ckpt-<step>.safetensors
std::string checkpoint_path(const std::string& model_dir, int64_t step);

// The step in "…/model.ckpt-1200" or "…/model.ckpt-1200.safetensors" (the digits after the last
// '-' of the file name, as the reference's int(basename.split('-')[1])); nullopt otherwise.
std::optional<int64_t> checkpoint_step(const std::string& path);

// The parsed `checkpoint` file; paths as written there (usually "model.ckpt-N").
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;  // oldest first
};
// nullopt when model_dir has no `checkpoint` file; an error when it is unreadable/malformed.
Result<std::optional<CheckpointState>> read_checkpoint_state(const std::string& model_dir);
// The text TF writes for `state` (what save_checkpoint puts in `checkpoint`).
std::string checkpoint_state_text(const CheckpointState& state);
// Resolves a path from `checkpoint` to the safetensors file it names.
std::string resolve_checkpoint_path(const std::string& model_dir, const std::string& entry);

// Writes model.ckpt-<step>.safetensors atomically, then rewrites `checkpoint` atomically with
// it as the latest, then deletes the oldest checkpoints beyond keep_max (keep_max <= 0 keeps
// every file and lists only the newest, as TF's max_to_keep=0), and removes temp files that
// an interrupted save left behind. A crash at any point leaves `checkpoint` naming a complete
// file. Saving a step that is already listed replaces it and moves it to the end.
Status save_checkpoint(const std::string& model_dir, int64_t step,
                       const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorView>& tensors, int keep_max = 5);

// The safetensors file that `checkpoint` names as the latest, or nullopt when there is no
// `checkpoint` file (a fresh model_dir). An error when `checkpoint` is malformed or names a
// file that does not exist (resuming from scratch would silently lose work).
Result<std::optional<std::string>> latest_checkpoint(const std::string& model_dir);

}  // namespace ic
