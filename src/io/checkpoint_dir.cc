#include "io/checkpoint_dir.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

#include "io/file_system.h"
#include "io/safetensors.h"
#include "io/tensor_bundle.h"

namespace ic {
namespace {

constexpr char kStateFile[] = "checkpoint";
constexpr char kSafetensorsSuffix[] = ".safetensors";
constexpr char kIndexSuffix[] = ".index";
// A `checkpoint` index lists a few names; anything this large is not one.
constexpr uint64_t kMaxStateFileBytes = uint64_t{64} << 20;
constexpr char kTempMarker[] = ".tmp-";  // write_file_atomically's temp names: <path>.tmp-<pid>-<n>

std::string join(const std::string& dir, const std::string& name) { return join_path(dir, name); }

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Protobuf text-format string escaping (what MessageToString writes): \" \\ and octal escapes
// for bytes that are not printable ASCII.
std::string text_format_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u >= 0x7f) {
      out += '\\';
      out += static_cast<char>('0' + ((u >> 6) & 7));
      out += static_cast<char>('0' + ((u >> 3) & 7));
      out += static_cast<char>('0' + (u & 7));
    } else {
      out += c;
    }
  }
  return out;
}

// Parses a quoted text-format string value ("..." or '...'), undoing the C escapes.
std::optional<std::string> text_format_unquote(std::string_view v) {
  if (v.size() < 2 || (v.front() != '"' && v.front() != '\'') || v.back() != v.front()) {
    return std::nullopt;
  }
  v = v.substr(1, v.size() - 2);
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\') {
      out += v[i];
      continue;
    }
    if (++i >= v.size()) return std::nullopt;
    const char e = v[i];
    if (e >= '0' && e <= '7') {  // up to three octal digits
      int value = 0;
      size_t end = i;
      while (end < v.size() && end < i + 3 && v[end] >= '0' && v[end] <= '7') {
        value = value * 8 + (v[end] - '0');
        ++end;
      }
      i = end - 1;
      out += static_cast<char>(value);
    } else if (e == 'x') {  // up to two hex digits
      int value = 0, digits = 0;
      while (digits < 2 && i + 1 < v.size() &&
             std::isxdigit(static_cast<unsigned char>(v[i + 1]))) {
        const auto h = static_cast<unsigned char>(v[++i]);
        value = value * 16 + (std::isdigit(h) ? h - '0' : std::tolower(h) - 'a' + 10);
        ++digits;
      }
      if (digits == 0) return std::nullopt;
      out += static_cast<char>(value);
    } else {
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '"': out += '"'; break;
        case '\'': out += '\''; break;
        case '\\': out += '\\'; break;
        default: return std::nullopt;
      }
    }
  }
  return out;
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

Result<CheckpointState> parse_checkpoint_state(const std::string& text, const std::string& path) {
  CheckpointState state;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t colon = t.find(':');
    if (colon == std::string::npos)
      return data_loss(path, ":", number, ": expected 'field: value'");
    const std::string key = trim(std::string_view(t).substr(0, colon));
    const std::string value = trim(std::string_view(t).substr(colon + 1));
    if (key != "model_checkpoint_path" && key != "all_model_checkpoint_paths") {
      continue;  // timestamps and other fields newer TF versions add
    }
    const std::optional<std::string> unquoted = text_format_unquote(value);
    if (!unquoted) return data_loss(path, ":", number, ": malformed string value for ", key);
    if (key == "model_checkpoint_path") {
      state.model_checkpoint_path = *unquoted;
    } else {
      state.all_model_checkpoint_paths.push_back(*unquoted);
    }
  }
  return state;
}

// The prefix an entry of `checkpoint` (or a user's path) stands for: joined to model_dir
// unless absolute, without a .safetensors / .index suffix.
std::string prefix_of(const std::string& model_dir, const std::string& entry) {
  std::string path = entry.empty() || entry.front() == '/' || has_url_scheme(entry)
                         ? entry
                         : join(model_dir, entry);
  for (const std::string_view suffix :
       {std::string_view(kSafetensorsSuffix), std::string_view(kIndexSuffix)}) {
    if (ends_with(path, suffix)) {
      path.resize(path.size() - suffix.size());
      break;
    }
  }
  return path;
}

// An unreadable answer (a bucket that cannot be reached) counts as absent here; the read that
// follows reports the real error.
bool is_file(const std::string& path) {
  const Result<bool> found = path_exists(path);
  return found.ok() && *found;
}

// Deletes `path` if it exists; an error only when it exists and cannot be deleted.
Status remove_if_present(const std::string& path, const char* what) {
  Status removed = remove_file(path);
  return removed.ok() ? removed : removed.with_context(std::string("deleting ") + what);
}

// The bundle's files: the index first, so that no index ever describes missing data, then
// every data shard (<prefix>.data-*).
Status remove_bundle_files(const std::string& prefix) {
  IC_RETURN_IF_ERROR(remove_if_present(bundle_index_path(prefix), "checkpoint index"));
  const std::string data_start = base_name(prefix) + ".data-";
  IC_ASSIGN_OR_RETURN(const std::vector<std::string> data_files,
                      list_files(parent_path(prefix), data_start));
  Status status;
  for (const std::string& file : data_files) {
    if (status.ok()) status = remove_if_present(file, "checkpoint data");
  }
  return status;
}

// Every file of the checkpoint at `prefix`, in either format, and the .meta graph TensorFlow
// writes beside its own checkpoints (tf.train.Saver prunes it with them).
Status remove_checkpoint_files(const std::string& prefix) {
  Status status = remove_bundle_files(prefix);
  for (const char* suffix : {kSafetensorsSuffix, ".meta"}) {
    Status s = remove_if_present(prefix + suffix, "old checkpoint");
    if (status.ok()) status = s;
  }
  return status;
}

// The refusal save_checkpoint makes before replacing a checkpoint of the same step.
Status check_same_step_run(const std::string& prefix,
                           const std::map<std::string, std::string>& metadata) {
  const auto ours = metadata.find(kRunIdKey);
  if (ours == metadata.end()) return Status();
  for (const std::string& existing : {prefix, prefix + kSafetensorsSuffix}) {
    if (!checkpoint_exists(existing == prefix ? bundle_index_path(prefix) : existing)) continue;
    Result<CheckpointContents> old = read_checkpoint(existing);
    if (!old.ok()) continue;  // damaged: nothing worth keeping (recovery skipped it too)
    const auto theirs = old->metadata.find(kRunIdKey);
    if (theirs == old->metadata.end() || theirs->second == ours->second) continue;
    return already_exists(existing, ": a checkpoint of the same step from another run (run id ",
                          theirs->second, "; this run is ", ours->second,
                          ") is already there; not replacing it. Move it away, or train in "
                          "another --model_dir");
  }
  return Status();
}

}  // namespace

std::string checkpoint_prefix(const std::string& model_dir, int64_t step) {
  return join(model_dir, "model.ckpt-" + std::to_string(step));
}

std::string checkpoint_path(const std::string& model_dir, int64_t step, CheckpointFormat format) {
  const std::string prefix = checkpoint_prefix(model_dir, step);
  return format == CheckpointFormat::tf ? prefix : prefix + kSafetensorsSuffix;
}

std::optional<int64_t> checkpoint_step(const std::string& path) {
  std::string name = base_name(path);
  if (ends_with(name, kSafetensorsSuffix))
    name.resize(name.size() - std::strlen(kSafetensorsSuffix));
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size()) return std::nullopt;
  int64_t step = 0;
  const char* first = name.data() + dash + 1;
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last || *first == '-' || *first == '+') return std::nullopt;
  return step;
}

std::string resolve_checkpoint_path(const std::string& model_dir, const std::string& entry) {
  const std::string prefix = prefix_of(model_dir, entry);
  return is_file(bundle_index_path(prefix)) ? prefix : prefix + kSafetensorsSuffix;
}

bool checkpoint_exists(const std::string& path) {
  if (ends_with(path, kSafetensorsSuffix) || ends_with(path, kIndexSuffix)) return is_file(path);
  return is_file(bundle_index_path(path)) || is_file(path + kSafetensorsSuffix);
}

Result<CheckpointContents> read_checkpoint(const std::string& path) {
  if (ends_with(path, kSafetensorsSuffix)) return read_safetensors(path);
  const std::string prefix = prefix_of("", path);
  if (ends_with(path, kIndexSuffix) || is_file(bundle_index_path(prefix))) {
    return read_tensor_bundle(prefix);
  }
  if (is_file(prefix + kSafetensorsSuffix)) return read_safetensors(prefix + kSafetensorsSuffix);
  return not_found("no checkpoint at ", path, " (neither ", bundle_index_path(prefix), " nor ",
                   prefix, kSafetensorsSuffix, " exists)");
}

std::string checkpoint_state_text(const CheckpointState& state) {
  std::string text =
      "model_checkpoint_path: \"" + text_format_escape(state.model_checkpoint_path) + "\"\n";
  for (const std::string& p : state.all_model_checkpoint_paths) {
    text += "all_model_checkpoint_paths: \"" + text_format_escape(p) + "\"\n";
  }
  return text;
}

Result<std::optional<CheckpointState>> read_checkpoint_state(const std::string& model_dir) {
  const std::string path = join(model_dir, kStateFile);
  IC_ASSIGN_OR_RETURN(const bool present, path_exists(path));
  if (!present) return std::optional<CheckpointState>();
  Result<std::string> text = read_file_to_string(path, kMaxStateFileBytes);
  if (!text.ok()) return text.status();
  IC_ASSIGN_OR_RETURN(CheckpointState state, parse_checkpoint_state(*text, path));
  return std::optional<CheckpointState>(std::move(state));
}

Status save_checkpoint(const std::string& model_dir, int64_t step,
                       const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorView>& tensors, int keep_max,
                       CheckpointFormat format) {
  IC_RETURN_IF_ERROR(make_dirs(model_dir));

  const std::string prefix = checkpoint_prefix(model_dir, step);
  IC_RETURN_IF_ERROR(check_same_step_run(prefix, metadata));
  if (format == CheckpointFormat::tf) {
    IC_RETURN_IF_ERROR(write_tensor_bundle(prefix, metadata, tensors));
    // The bundle now wins resolution; a same-step safetensors file would only linger.
    IC_RETURN_IF_ERROR(remove_if_present(prefix + kSafetensorsSuffix, "replaced checkpoint"));
  } else {
    IC_RETURN_IF_ERROR(write_safetensors(prefix + kSafetensorsSuffix, metadata, tensors));
    // A same-step bundle would win resolution over the new file: it must go.
    IC_RETURN_IF_ERROR(remove_bundle_files(prefix));
  }

  IC_ASSIGN_OR_RETURN(std::optional<CheckpointState> previous, read_checkpoint_state(model_dir));
  const std::string name = base_name(prefix);  // "model.ckpt-<step>"
  CheckpointState state;
  state.model_checkpoint_path = name;
  std::vector<std::string> to_delete;
  if (previous) {
    for (const std::string& entry : previous->all_model_checkpoint_paths) {
      if (prefix_of(model_dir, entry) != prefix) state.all_model_checkpoint_paths.push_back(entry);
    }
  }
  state.all_model_checkpoint_paths.push_back(name);
  if (keep_max <= 0) {
    state.all_model_checkpoint_paths = {name};
  } else {
    const size_t keep = static_cast<size_t>(keep_max);
    while (state.all_model_checkpoint_paths.size() > keep) {
      to_delete.push_back(state.all_model_checkpoint_paths.front());
      state.all_model_checkpoint_paths.erase(state.all_model_checkpoint_paths.begin());
    }
  }
  const std::string text = checkpoint_state_text(state);
  IC_RETURN_IF_ERROR(write_file_atomically(join(model_dir, kStateFile), {text}));

  // Only now, with `checkpoint` no longer naming them, may old files go.
  Status status;
  for (const std::string& entry : to_delete) {
    Status removed = remove_checkpoint_files(prefix_of(model_dir, entry));
    if (status.ok()) status = removed;
  }
  // Temp files of saves that were interrupted (a crash between create and rename).
  // (Object stores write whole objects and leave none; listing costs a request there.)
  if (local_path(model_dir)) {
    const Result<std::vector<std::string>> files = list_files(model_dir);
    for (const std::string& path : files.ok() ? *files : std::vector<std::string>()) {
      const std::string file = base_name(path);
      const bool ours = file.rfind("model.ckpt-", 0) == 0 || file.rfind(kStateFile, 0) == 0;
      if (ours && file.find(kTempMarker) != std::string::npos) (void)remove_file(path);
    }
  }
  return status;
}

Result<std::optional<std::string>> latest_checkpoint(const std::string& model_dir) {
  IC_ASSIGN_OR_RETURN(std::optional<CheckpointState> state, read_checkpoint_state(model_dir));
  if (!state || state->model_checkpoint_path.empty()) return std::optional<std::string>();
  const std::string path = resolve_checkpoint_path(model_dir, state->model_checkpoint_path);
  if (!checkpoint_exists(path)) {
    // The index and the files disagree: the model_dir is damaged, not empty.
    return data_loss(join(model_dir, kStateFile), " names ", state->model_checkpoint_path, " but ",
                     path, " does not exist");
  }
  return std::optional<std::string>(path);
}

}  // namespace ic
