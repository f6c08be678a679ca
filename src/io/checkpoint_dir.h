// TensorFlow's checkpoint bookkeeping in a model_dir. Each save is a prefix
// model_dir/model.ckpt-<step> in one of two formats (--checkpoint_format):
//   tf           <prefix>.index + <prefix>.data-00000-of-00001, TensorFlow's V2 bundle
//                (io/tensor_bundle.h), the default: TensorFlow's own tools read a model_dir
//   safetensors  <prefix>.safetensors (io/safetensors.h)
// and the text file model_dir/checkpoint, exactly as tf.train.Saver writes it:
//     model_checkpoint_path: "model.ckpt-1200"
//     all_model_checkpoint_paths: "model.ckpt-800"
//     all_model_checkpoint_paths: "model.ckpt-1200"
// Paths in `checkpoint` are relative to model_dir (TF's save_relative_paths); absolute ones
// written by other tools are honoured. A prefix stands for its bundle when <prefix>.index
// exists, else for <prefix>.safetensors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint_contents.h"

namespace ic {

// What save_checkpoint writes (the trainers' --checkpoint_format: tf or safetensors).
enum class CheckpointFormat { tf, safetensors };

// model_dir/model.ckpt-<step>
std::string checkpoint_prefix(const std::string& model_dir, int64_t step);
// The path a save of `format` is known by: the prefix for tf (as TensorFlow's
// latest_checkpoint returns it), model_dir/model.ckpt-<step>.safetensors for safetensors.
std::string checkpoint_path(const std::string& model_dir, int64_t step, CheckpointFormat format);

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
// Resolves a path from `checkpoint` (or given by a user) to the checkpoint it names: the
// prefix when <prefix>.index exists, else <prefix>.safetensors. An entry ending in .index or
// .safetensors names that file's checkpoint.
std::string resolve_checkpoint_path(const std::string& model_dir, const std::string& entry);
// Whether `path` (as resolve_checkpoint_path returns it) names a checkpoint on disk.
bool checkpoint_exists(const std::string& path);

// Reads either format: a path ending in .safetensors is that file, one ending in .index is
// that bundle, a prefix is its bundle when <prefix>.index exists, else <prefix>.safetensors.
// Errors name the file and what is wrong: not_found when the checkpoint is not there (or was
// deleted while read: a trainer pruning it), data_loss when its bytes are damaged.
Result<CheckpointContents> read_checkpoint(const std::string& path);

// The metadata key of the run a checkpoint belongs to: random at a run's first start, kept
// across its resumes (train/run_loop.cc).
inline constexpr char kRunIdKey[] = "run_id";

// Writes the checkpoint of `step` in `format` (each file atomically: temp file, fsync, rename;
// for tf the data file before the index), removes that step's files of the other format,
// then rewrites `checkpoint` atomically with it as the latest, then deletes the oldest
// checkpoints beyond keep_max, every file of each (keep_max <= 0 keeps every file and lists
// only the newest, as TF's max_to_keep=0), and removes temp files that an interrupted save
// left behind. A crash at any point leaves `checkpoint` naming a complete checkpoint. Saving
// a step that is already listed replaces it and moves it to the end -- but never another run's:
// when `metadata` has a kRunIdKey and a readable checkpoint of the same step (either format)
// carries a different one, nothing is written and the error (already_exists) names that file.
// (A damaged file, or one without a run id, written by an older program, is replaced.)
Status save_checkpoint(const std::string& model_dir, int64_t step,
                       const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorView>& tensors, int keep_max = 5,
                       CheckpointFormat format = CheckpointFormat::tf);

// The checkpoint that `checkpoint` names as the latest (resolve_checkpoint_path: a prefix for
// a bundle, a .safetensors path otherwise), or nullopt when there is no `checkpoint` file (a
// fresh model_dir). An error when `checkpoint` is malformed or names a checkpoint that does
// not exist (resuming from scratch would silently lose work).
Result<std::optional<std::string>> latest_checkpoint(const std::string& model_dir);

}  // namespace ic
