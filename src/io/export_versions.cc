#include "io/export_versions.h"

#include <algorithm>
#include <filesystem>

#include "io/file_system.h"

namespace ic {

std::optional<int64_t> export_version_number(const std::string& name) {
  if (name.empty() || name.size() > 18) return std::nullopt;
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(name);
}

Result<std::vector<std::pair<int64_t, std::string>>> export_version_dirs(const std::string& dir) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(dir));
  std::vector<std::pair<int64_t, std::string>> versions;
  // A directory that does not exist (yet) holds nothing to serve, as one without a
  // `checkpoint` file: the callers say "no checkpoint in DIR", serve waits for one.
  IC_ASSIGN_OR_RETURN(bool is_dir, fs->is_directory(dir));
  if (!is_dir) return versions;
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->list(dir));
  for (const DirEntry& entry : entries) {
    if (!entry.is_directory) continue;
    if (std::optional<int64_t> number = export_version_number(entry.name))
      versions.emplace_back(*number, join_path(dir, entry.name));
  }
  std::sort(versions.rbegin(), versions.rend());
  return versions;
}

const std::vector<std::string>& export_marker_files() {
  static const std::vector<std::string> names = {"saved_model.pb", "model.onnx",
                                                 "model.safetensors"};
  return names;
}

namespace {

bool is_marker(const std::string& name) {
  const std::vector<std::string>& markers = export_marker_files();
  return std::find(markers.begin(), markers.end(), name) != markers.end();
}

// Every file under `from` into `to`, except the marker files directly in `from` (`markers`
// gets their names, when given: the top level's).
Status copy_tree_but_markers(FileSystem& from_fs, const std::string& from, FileSystem& to_fs,
                             const std::string& to, std::vector<std::string>* markers) {
  IC_RETURN_IF_ERROR(to_fs.make_dirs(to));
  IC_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, from_fs.list(from));
  for (const DirEntry& entry : entries) {
    const std::string source = join_path(from, entry.name);
    const std::string target = join_path(to, entry.name);
    if (entry.is_directory) {
      IC_RETURN_IF_ERROR(copy_tree_but_markers(from_fs, source, to_fs, target, nullptr));
    } else if (!entry.is_regular_file) {
      return error("cannot copy ", source, ": not a regular file");
    } else if (markers != nullptr && is_marker(entry.name)) {
      markers->push_back(entry.name);
    } else {
      IC_RETURN_IF_ERROR(copy_file(source, target));
    }
  }
  return Status();
}

// The copy itself: the files, then the extra files, then the markers.
Status copy_export_files(const std::string& from, const std::string& to,
                         const std::map<std::string, std::string>& extra_files) {
  IC_ASSIGN_OR_RETURN(FileSystem * from_fs, file_system_for(from));
  IC_ASSIGN_OR_RETURN(FileSystem * to_fs, file_system_for(to));
  std::vector<std::string> markers;
  IC_RETURN_IF_ERROR(copy_tree_but_markers(*from_fs, from, *to_fs, to, &markers));
  for (const auto& [name, contents] : extra_files) {
    const std::string path = join_path(to, name);
    IC_RETURN_IF_ERROR(to_fs->make_dirs(parent_path(path)));
    IC_RETURN_IF_ERROR(to_fs->write_atomically(path, {contents}));
  }
  for (const std::string& marker : markers)
    IC_RETURN_IF_ERROR(copy_file(join_path(from, marker), join_path(to, marker)));
  return Status();
}

}  // namespace

Result<std::string> copy_export_version(const std::string& from, const std::string& base_dir,
                                        int64_t version,
                                        const std::map<std::string, std::string>& extra_files) {
  IC_ASSIGN_OR_RETURN(FileSystem * fs, file_system_for(base_dir));
  const std::string final_dir = join_path(base_dir, std::to_string(version));
  if (fs->writes_appear_whole()) {
    IC_RETURN_IF_ERROR(copy_export_files(from, final_dir, extra_files)
                           .with_context("cannot copy " + from + " to " + final_dir));
    return final_dir;
  }
  const std::string temp = join_path(base_dir, "temp-" + std::to_string(version));
  std::error_code ec;
  std::filesystem::remove_all(*local_path(temp), ec);  // a copy a killed sweep left
  Status copied = copy_export_files(from, temp, extra_files);
  if (copied.ok()) copied = fs->rename(temp, final_dir);
  if (!copied.ok()) {
    std::filesystem::remove_all(*local_path(temp), ec);
    return copied.with_context("cannot copy " + from + " to " + final_dir);
  }
  return final_dir;
}

}  // namespace ic
