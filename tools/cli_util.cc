#include "tools/cli_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include "libtracer/analysis/importers/load_input.h"

namespace tracer::cli {

void AddViewOptions(CLI::App& sub, ViewOptions* options) {
  sub.add_option("--timeunit", options->time_unit,
                 "ns, us, ms or s: every duration column in this unit, named in its header "
                 "(as nsys stats --timeunit; csv too, json stays in ns). Default: text and md "
                 "pick one unit per column (its largest value under 10000), named in the "
                 "header, csv prints ns");
  sub.add_option("--columns", options->columns,
                 "Only these columns, in this order (comma separated; the csv header names or "
                 "the text headers). Default: every column, without those empty in every row "
                 "(text, md)");
}

bool BuildRenderOptions(std::string_view command, const ViewOptions& options,
                        const std::vector<analysis::Table>& tables, analysis::RenderOptions* out) {
  const std::string c(command);
  if (!options.time_unit.empty() && !analysis::ParseTimeUnit(options.time_unit, &out->time_unit)) {
    std::fprintf(stderr, "tracer %s: --timeunit: unknown unit '%s' (ns, us, ms, s)\n", c.c_str(),
                 options.time_unit.c_str());
    return false;
  }
  out->columns.clear();
  size_t start = 0;
  while (start <= options.columns.size() && !options.columns.empty()) {
    size_t end = options.columns.find(',', start);
    if (end == std::string::npos) end = options.columns.size();
    std::string name = options.columns.substr(start, end - start);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!name.empty()) out->columns.push_back(name);
    start = end + 1;
  }
  const std::vector<std::string> unknown = analysis::UnknownColumns(tables, *out);
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& u : unknown) names += (names.empty() ? "" : ", ") + u;
    std::string known;
    for (const auto& t : tables) {
      for (const auto& col : t.columns) {
        if (known.find(col.name) == std::string::npos)
          known += (known.empty() ? "" : " ") + col.name;
      }
    }
    std::fprintf(stderr, "tracer %s: --columns: no table has %s (columns: %s)\n", c.c_str(),
                 names.c_str(), known.c_str());
    return false;
  }
  return true;
}

void PrintWarnings(std::string_view command, const analysis::Trace& trace) {
  PrintWarnings(command, trace.warnings);
}

void PrintWarnings(std::string_view command, const std::vector<std::string>& warnings) {
  const std::string c(command);
  std::set<std::string> shown;
  for (const std::string& w : warnings) {
    if (shown.insert(w).second) {
      std::fprintf(stderr, "tracer %s: warning: %s\n", c.c_str(), w.c_str());
    }
  }
}

namespace {

// Inputs this large take long enough to read that a terminal user wants to
// see progress; smaller ones would only flicker.
constexpr off_t kProgressMinBytes = 64 << 20;

}  // namespace

// Redrawn when the percentage changes.
analysis::ReadProgress ProgressBar(std::string_view command, const std::string& file) {
  struct stat st;
  if (!isatty(STDERR_FILENO) || stat(file.c_str(), &st) != 0 || st.st_size < kProgressMinBytes) {
    return {};
  }
  const std::string label = "tracer " + std::string(command) + ": reading " + file;
  auto last = std::make_shared<int>(-1);
  return [label, last](uint64_t done, uint64_t total) {
    const int percent = total == 0 ? 100 : static_cast<int>(100 * done / total);
    if (percent == *last) return;
    *last = percent;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%%", label.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), percent);
    if (done >= total) std::fprintf(stderr, "\r\033[K");  // clear the line when done
    std::fflush(stderr);
  };
}

size_t LoadInputs(std::string_view command, const std::vector<std::string>& files,
                  analysis::Trace* trace, analysis::importers::ImportFields fields) {
  size_t read = 0;
  for (const std::string& file : files) {
    std::string error;
    if (analysis::LoadInput(file, trace, &error, ProgressBar(command, file), fields)) {
      ++read;
    } else {
      std::fprintf(stderr, "tracer %s: %s\n", std::string(command).c_str(), error.c_str());
    }
  }
  PrintWarnings(command, *trace);
  return read;
}

void AddNameOptions(CLI::App& sub, NameOptions* options) {
  sub.add_flag("--raw-names", options->raw,
               "Keep range names as recorded (default: PyTorch emit_nvtx per-call suffixes "
               "such as ', seq = 7, op_id = 42' are removed, rows aggregate per op)");
  sub.add_option("--name-rules", options->rules_file,
                 "Range-name rules '<regex> -> <name>' ($1.. = groups) or '<regex> -> [op]', "
                 "tried before the built-in ones (see data/range_names.rules)");
}

bool BuildNameRules(std::string_view command, const NameOptions& options,
                    analysis::RangeNameRules* rules) {
  rules->set_keep_raw(options.raw);
  if (options.rules_file.empty()) return true;
  if (Status s = rules->AddUserRulesFile(options.rules_file); !s.ok()) {
    std::fprintf(stderr, "tracer %s: %s\n", std::string(command).c_str(), s.message().c_str());
    return false;
  }
  return true;
}

void AddForceOverwrite(CLI::App& sub, bool* force) {
  sub.add_flag("--force-overwrite", *force,
               "Replace output files that already exist (without it an existing output is "
               "refused and left as it is)");
}

bool MayWrite(std::string_view command, const std::string& path, bool force) {
  if (force || path.empty() || path == "-") return true;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return true;
  std::fprintf(stderr,
               "tracer %s: %s already exists: not overwritten (remove it, choose another -o, or "
               "add --force-overwrite)\n",
               std::string(command).c_str(), path.c_str());
  return false;
}

bool WriteOutput(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  return static_cast<bool>(file);
}

}  // namespace tracer::cli
