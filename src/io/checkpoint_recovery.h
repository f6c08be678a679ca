// Finding the checkpoint a training run resumes from without ever losing work. TensorFlow
// trusts the `checkpoint` file: deleted or emptied, a rerun starts from scratch and overwrites
// the saves it did not see. Here the files themselves decide when the index cannot:
//   - `checkpoint` missing, empty or unreadable while checkpoint files exist: the newest
//     complete checkpoint among the files is used, and a note says so;
//   - a complete checkpoint newer than the one `checkpoint` names (a crash between writing a
//     save and updating the index) is used, with a note;
//   - a checkpoint that cannot be read (truncated, a CRC mismatch) or that `usable` refuses
//     (metadata out of range, NaN weights) is skipped for the next older one, with a warning;
//   - when checkpoint files exist but none is usable, an error: starting over would overwrite
//     them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint_contents.h"

namespace ic {

struct ResumePoint {
  std::string path;                // as resolve_checkpoint_path gives it
  CheckpointContents contents;     // already read and checked
  std::vector<std::string> notes;  // what was recovered or skipped, for the log
};

// A caller's check of a checkpoint it could read (e.g. its metadata and values).
using CheckpointCheck = std::function<Status(const CheckpointContents&, const std::string& path)>;

// nullopt for a fresh model_dir (no `checkpoint` file and no checkpoint files).
Result<std::optional<ResumePoint>> find_resume_point(const std::string& model_dir,
                                                     const CheckpointCheck& usable);

}  // namespace ic
