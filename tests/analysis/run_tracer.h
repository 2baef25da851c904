// Runs the `tracer` CLI (TRACER_BIN) as a user would, for the tests that
// check what it prints and its exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout, or stdout + stderr when merged
  std::string err;  // stderr when not merged
};

// `tracer ARGS`; merge_stderr sends stderr into out, in the order written.
inline CliRun RunTracerCli(const std::string& args, bool merge_stderr) {
  const std::string err_path = TraceFileBuilder::TempPath("cli_stderr");
  const std::string cmd =
      std::string(TRACER_BIN) + " " + args + (merge_stderr ? " 2>&1" : " 2>" + err_path);
  CliRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!merge_stderr) {
    std::ifstream in(err_path);
    r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::remove(err_path.c_str());
  }
  return r;
}

}  // namespace tracer::analysis::testing
