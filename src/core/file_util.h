// Files: whole-file reads, crash-safe writes (temp file, fsync, rename) and path checks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata {

StatusOr<std::string> ReadFile(const std::string& path);
// Writes to "<path>.tmp.<pid>", fsyncs it, renames it over `path` and fsyncs the directory.
Status WriteFileAtomic(const std::string& path, std::string_view contents);
Status FsyncDirectory(const std::string& dir);
bool FileExists(const std::string& path);
bool IsDirectory(const std::string& path);
std::string JoinPath(std::string_view a, std::string_view b);
std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
// Whether `path`, once symlinks and ".." are resolved, lies inside directory `dir`.
bool PathIsInside(const std::string& path, const std::string& dir);
// Shell-style glob (*, ?, [..]) over the file system; results sorted.
StatusOr<std::vector<std::string>> Glob(const std::string& pattern);
Status MakeDirs(const std::string& path);

}  // namespace strata
