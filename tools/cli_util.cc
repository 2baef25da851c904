#include "tools/cli_util.h"

#include <cstdio>
#include <fstream>
#include <set>

#include "libtracer/analysis/load_input.h"

namespace tracer::cli {

void PrintWarnings(std::string_view command, const analysis::Trace& trace) {
  const std::string c(command);
  std::set<std::string> shown;
  for (const std::string& w : trace.warnings) {
    if (shown.insert(w).second) {
      std::fprintf(stderr, "tracer %s: warning: %s\n", c.c_str(), w.c_str());
    }
  }
}

size_t LoadInputs(std::string_view command, const std::vector<std::string>& files,
                  analysis::Trace* trace) {
  size_t read = 0;
  for (const std::string& file : files) {
    std::string error;
    if (analysis::LoadInput(file, trace, &error)) {
      ++read;
    } else {
      std::fprintf(stderr, "tracer %s: %s\n", std::string(command).c_str(), error.c_str());
    }
  }
  PrintWarnings(command, *trace);
  return read;
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
