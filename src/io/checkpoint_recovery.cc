#include "io/checkpoint_recovery.h"

#include <algorithm>
#include <map>
#include <regex>

#include "io/checkpoint_dir.h"
#include "io/file_system.h"

namespace ic {
namespace {

// Steps of the complete checkpoints among model_dir's files, newest first, each resolved to
// its path (a bundle's prefix when its .index exists, else the .safetensors file). Temporary
// files of an interrupted save (".tmp-…") do not match.
std::vector<std::pair<int64_t, std::string>> checkpoints_on_disk(const std::string& model_dir) {
  static const std::regex kName(R"(model\.ckpt-(\d{1,18})\.(index|safetensors))");
  std::map<int64_t, std::string, std::greater<>> found;
  const Result<std::vector<std::string>> files = list_files(model_dir, "model.ckpt-");
  for (const std::string& file : files.ok() ? *files : std::vector<std::string>()) {
    std::smatch m;
    const std::string name = base_name(file);
    if (!std::regex_match(name, m, kName)) continue;
    const int64_t step = std::stoll(m[1].str());
    const std::string path = resolve_checkpoint_path(model_dir, "model.ckpt-" + m[1].str());
    if (checkpoint_exists(path)) found.emplace(step, path);
  }
  return {found.begin(), found.end()};
}

}  // namespace

Result<std::optional<ResumePoint>> find_resume_point(const std::string& model_dir,
                                                     const CheckpointCheck& usable) {
  ResumePoint point;
  std::vector<std::pair<int64_t, std::string>> candidates = checkpoints_on_disk(model_dir);
  const std::string index_file = join_path(model_dir, "checkpoint");

  // What the index names, if it can be read; it is one candidate among the files.
  std::optional<std::string> listed;
  const Result<std::optional<CheckpointState>> state = read_checkpoint_state(model_dir);
  if (!state.ok()) {
    if (candidates.empty()) return state.status();
    point.notes.push_back("Warning: " + state.status().message() +
                          "; recovering the newest usable checkpoint from the files");
  } else if (!state->has_value() || (*state)->model_checkpoint_path.empty()) {
    if (candidates.empty()) return std::optional<ResumePoint>();
    point.notes.push_back("Warning: " + index_file +
                          (state->has_value() ? " is empty" : " is missing") +
                          " but checkpoint files exist; recovering the newest usable one");
  } else {
    listed = resolve_checkpoint_path(model_dir, (*state)->model_checkpoint_path);
    if (!checkpoint_exists(*listed)) {
      if (candidates.empty()) {
        return data_loss(index_file, " names ", (*state)->model_checkpoint_path, " but ", *listed,
                         " does not exist");
      }
      point.notes.push_back("Warning: " + index_file + " names " + *listed +
                            ", which does not exist; recovering from the files");
      listed.reset();
    } else if (std::none_of(candidates.begin(), candidates.end(),
                            [&](const auto& c) { return c.second == *listed; })) {
      // Named by an absolute path elsewhere, or with a name the files do not follow.
      const int64_t step = checkpoint_step(*listed).value_or(-1);
      candidates.emplace_back(step, *listed);
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
    }
  }

  std::vector<std::string> refused;
  for (const auto& [step, path] : candidates) {
    Result<CheckpointContents> contents = read_checkpoint(path);
    Status status = contents.ok() ? usable(*contents, path) : contents.status();
    if (!status.ok()) {
      point.notes.push_back("Warning: skipping checkpoint " + path + ": " + status.message());
      refused.push_back(status.message());
      continue;
    }
    if (listed && path != *listed) {
      point.notes.push_back("Note: resuming from " + path + ", not " + *listed + " which " +
                            index_file + " names" +
                            (step > checkpoint_step(*listed).value_or(-1)
                                 ? " (a newer complete save the index missed)"
                                 : ""));
    }
    point.path = path;
    point.contents = std::move(contents).value();
    return std::optional<ResumePoint>(std::move(point));
  }
  std::string reasons;
  for (const std::string& r : refused) reasons += "\n  " + r;
  return data_loss("no usable checkpoint in ", model_dir, " (", refused.size(),
                   " found, none readable; starting over would overwrite them):", reasons);
}

}  // namespace ic
