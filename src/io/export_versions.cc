#include "io/export_versions.h"

#include <algorithm>

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

}  // namespace ic
