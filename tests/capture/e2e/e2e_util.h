// Helpers of the end-to-end tests: run a program under the tracer with a
// given environment and load path, and check a parsed trace's invariants.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/capture/trace_file_reader.h"

namespace tracer::testing {

enum class LoadPath { kNvtxInjectionEnv, kPreload, kNone };

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string err;     // the program's stderr
};

// Runs argv with the current environment minus every TRACER_*, NVTX/CUDA
// injection and LD_PRELOAD variable, plus `env`, plus the load path's
// variable pointing at libtracer.so.
RunResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, LoadPath load);

// A fresh directory under TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> List() const;

 private:
  std::string path_;
};

// Invariants of every well-formed trace: framing, definitions before use,
// unique ids, end >= start, push/pop children inside their parents on the
// same thread with depth = parent depth + 1. Adds gtest failures.
void ExpectWellFormed(const ParsedTrace& t, bool expect_footer = true);

std::map<std::string, size_t> CountByName(const ParsedTrace& t);
uint64_t FooterValue(const proto::Footer& f, const std::string& section, const std::string& name);

}  // namespace tracer::testing
