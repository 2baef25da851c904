// `tracer import FILE -o OUT.trace`: converts an nsys SQLite export or a
// Kineto (PyTorch profiler) JSON trace into our stream format, one file per
// imported process.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/stream_writer.h"
#include "tools/cli_util.h"
#include "tools/command.h"

namespace tracer::cli {
namespace {

struct ImportArgs {
  std::string input;
  std::string output;
  bool quiet = false;
  bool force_overwrite = false;
};

int RunImport(const ImportArgs& args) {
  analysis::Trace trace;
  std::string error;
  if (!analysis::importers::ImportFile(args.input, &trace, &error)) {
    std::fprintf(stderr, "tracer import: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& w : trace.warnings) {
    std::fprintf(stderr, "tracer import: warning: %s\n", w.c_str());
  }
  if (trace.processes.empty()) {
    std::fprintf(stderr, "tracer import: %s: no process with records found\n", args.input.c_str());
    return 1;
  }
  std::vector<std::string> paths;
  for (const analysis::ProcessTrace& p : trace.processes) {
    paths.push_back(
        analysis::importers::ProcessOutputPath(args.output, p.header.pid, trace.processes.size()));
  }
  // All checked before any is written: a refusal leaves no partial import.
  for (const std::string& path : paths) {
    if (!MayWrite("import", path, args.force_overwrite)) return 1;
  }
  for (size_t i = 0; i < trace.processes.size(); ++i) {
    const analysis::ProcessTrace& p = trace.processes[i];
    const std::string& path = paths[i];
    if (!analysis::importers::WriteProcessStream(trace, i, path, &error)) {
      std::fprintf(stderr, "tracer import: %s\n", error.c_str());
      return 1;
    }
    if (!args.quiet) {
      std::printf(
          "%s: pid %u (%s): %zu ranges, %zu kernels, %zu memcpys, %zu memsets, %zu API "
          "calls\n",
          path.c_str(), p.header.pid, p.header.source.c_str(), p.ranges.size(), p.kernels.size(),
          p.memcpys.size(), p.memsets.size(), p.api_calls.size());
      for (const auto& [name, value] : p.counters) {
        std::printf("  %s: %llu\n", name.c_str(), static_cast<unsigned long long>(value));
      }
    }
  }
  return 0;
}

const Registrar kImport{Command{
    "import",
    "Convert an nsys SQLite export or a PyTorch profiler (Kineto) JSON trace to a .trace stream",
    60, [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<ImportArgs>();
      sub.add_option("file", args->input, "nsys .sqlite export or Kineto .json / .json.gz trace")
          ->required();
      sub.add_option("-o,--output", args->output,
                     "output stream; with several processes %p (pid) or OUT.<pid>.trace; an "
                     "existing file is refused unless --force-overwrite")
          ->required();
      AddForceOverwrite(sub, &args->force_overwrite);
      sub.add_flag("-q,--quiet", args->quiet, "print nothing on success");
      return [args]() { return RunImport(*args); };
    }}};

}  // namespace
}  // namespace tracer::cli
