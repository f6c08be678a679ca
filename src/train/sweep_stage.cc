// What both ways of running a stage share: the variants' directories and command lines.
#include "train/sweep_stage.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "core/mix64.h"
#include "io/checkpoint_dir.h"
#include "io/file_system.h"

namespace ic {
namespace {

bool has_flag(const std::vector<FlagSetting>& flags, const std::string& name) {
  return std::any_of(flags.begin(), flags.end(),
                     [&](const FlagSetting& f) { return f.first == name; });
}

// The staging directory of a sweep on an object store: one per sweep directory, so that a sweep
// run again on this machine finds what a killed one left. Its name is the URL made safe (cut
// to 100 characters) and a hash of the whole URL, so that gs://a/b_c and gs://a/b/c, or two
// long URLs alike at the start, do not share one.
std::string staging_dir(const std::string& sweep_dir) {
  std::string name;
  for (char c : sweep_dir.substr(0, 100))
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  uint64_t hash = 0;
  for (char c : sweep_dir) hash = mix64(hash ^ static_cast<unsigned char>(c));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return (std::filesystem::temp_directory_path() / "inception-sweep" / (name + "-" + hex)).string();
}

constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;

// The staged file of `name` for `v` (an object-store sweep only).
std::string staged_log_path(const SweepOptions& options, const SweepVariant& v,
                            const std::string& name) {
  return join_path(join_path(staging_dir(options.sweep_dir), v.name), name);
}

// The file's bytes, or nullopt when it does not exist (one request, not a check and a read).
Result<std::optional<std::string>> read_if_there(const std::string& path) {
  Result<std::string> bytes = read_file_to_string(path, kMaxLogBytes);
  if (bytes.ok()) return std::optional<std::string>(std::move(*bytes));
  if (bytes.status().code() == StatusCode::not_found) return std::optional<std::string>();
  return bytes.status();
}

}  // namespace

Result<std::string> running_log_path(const SweepOptions& options, const SweepVariant& v,
                                     const std::string& name) {
  if (local_path(options.sweep_dir)) return join_path(variant_dir(options.sweep_dir, v), name);
  const std::string path = staged_log_path(options, v, name);
  std::error_code ec;
  std::filesystem::create_directories(parent_path(path), ec);
  if (ec)
    return error("cannot create ", parent_path(path), " for the trainers' logs: ", ec.message());
  return path;
}

Status publish_log(const SweepOptions& options, const SweepVariant& v, const std::string& name) {
  if (local_path(options.sweep_dir)) return Status();
  const std::string staged = staged_log_path(options, v, name);
  IC_ASSIGN_OR_RETURN(std::optional<std::string> added, read_if_there(staged));
  if (!added) return Status();  // nothing staged since the last publish
  const std::string target = join_path(variant_dir(options.sweep_dir, v), name);
  IC_ASSIGN_OR_RETURN(std::optional<std::string> earlier, read_if_there(target));
  IC_RETURN_IF_ERROR(write_file_atomically(target, {earlier.value_or(""), *added}));
  IC_RETURN_IF_ERROR(remove_file(staged));
  // The variant's staging directory, then the sweep's, when nothing else is staged there.
  std::error_code ec;
  const std::filesystem::path variant_staging = std::filesystem::path(staged).parent_path();
  if (std::filesystem::remove(variant_staging, ec))
    std::filesystem::remove(variant_staging.parent_path(), ec);
  return Status();
}

std::string variant_dir(const std::string& sweep_dir, const SweepVariant& v) {
  return join_path(sweep_dir, v.name);
}

std::string flags_text(const std::vector<FlagSetting>& flags) {
  std::string text;
  for (const auto& [name, value] : flags)
    text += (text.empty() ? "--" : " --") + name + "=" + value;
  return text;
}

std::vector<std::string> variant_command(const SweepConfig& config, const SweepOptions& options,
                                         const SweepVariant& v, int threads, int64_t steps) {
  const std::string dir = variant_dir(options.sweep_dir, v);
  std::vector<std::string> args = {join_path(options.bin_dir, v.trainer)};
  for (const auto& [name, value] : config.base) args.push_back("--" + name + "=" + value);
  for (const auto& [name, value] : v.flags)
    if (name != kSweepModelKey) args.push_back("--" + name + "=" + value);  // v.trainer's
  if (!has_flag(config.base, "num_threads") && !has_flag(v.flags, "num_threads"))
    args.push_back("--num_threads=" + std::to_string(threads));
  args.push_back("--mode=train_and_eval");
  args.push_back("--train_steps=" + std::to_string(config.train_steps));
  if (steps < config.train_steps) args.push_back("--stop_at_step=" + std::to_string(steps));
  args.push_back("--model_dir=" + join_path(dir, "model"));
  args.push_back("--export_dir=" + join_path(dir, "export"));
  args.push_back(std::string("--export_best=") + choice_name(config.metric));
  args.push_back(std::string("--export_best_mode=") + choice_name(config.mode));
  args.push_back("--exports_to_keep=1");
  return args;
}

Status stage_failed(const StageEnd& end) {
  if (end.failures.empty() && end.failed_elsewhere == 0) return Status();
  std::string names;
  for (const std::string& n : end.failures) names += (names.empty() ? "" : ", ") + n;
  if (end.failed_elsewhere > 0)
    names +=
        (names.empty() ? "" : ", and ") + std::to_string(end.failed_elsewhere) + " in other groups";
  return error("sweep: ", end.failures.size() + end.failed_elsewhere, " variant(s) failed: ", names,
               " (each one's train.log says why)");
}

int64_t trained_step(const std::string& variant_dir) {
  Result<std::optional<std::string>> latest = latest_checkpoint(join_path(variant_dir, "model"));
  return latest.ok() && latest->has_value() ? checkpoint_step(**latest).value_or(-1) : -1;
}

}  // namespace ic
