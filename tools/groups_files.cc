#include "tools/groups_files.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <set>
#include <system_error>

namespace tracer::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kSuffix[] = ".groups";

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> GroupsDirs() {
  std::vector<std::string> dirs;
  if (const std::string exe = ExecutableDir(); !exe.empty()) {
    dirs.push_back((fs::path(exe) / ".." / "share" / "tracer" / "groups").lexically_normal());
  }
#ifdef TRACER_SOURCE_DIR
  // Last: an installed copy wins over the checkout the binary was built from.
  dirs.push_back((fs::path(TRACER_SOURCE_DIR) / "data" / "groups").string());
#endif
  return dirs;
}

std::string ResolveGroupsFile(const std::string& arg, std::string* error) {
  if (IsRegularFile(arg)) return arg;
  std::error_code dir_ec;
  if (fs::is_directory(arg, dir_ec)) {
    *error = "--groups: cannot read " + arg + ": is a directory, not a groups file";
    return "";
  }
  // A name, not a path: a missing path is reported as such below.
  const bool is_name = !arg.empty() && arg.find('/') == std::string::npos;
  const std::string file = EndsWith(arg, kSuffix) ? arg : arg + kSuffix;
  std::set<std::string> known;
  for (const std::string& dir : GroupsDirs()) {
    if (is_name && IsRegularFile(fs::path(dir) / file)) return (fs::path(dir) / file).string();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (EndsWith(name, kSuffix))
        known.insert(name.substr(0, name.size() - (sizeof(kSuffix) - 1)));
    }
  }
  std::string names;
  for (const std::string& n : known) names += (names.empty() ? "" : ", ") + n;
  *error = "--groups: '" + arg + "' is neither a file nor a known groups name (known: " +
           (names.empty() ? "none installed" : names) + ")";
  return "";
}

}  // namespace tracer::cli
