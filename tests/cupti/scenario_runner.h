// Runs the fake driver on a scenario as its own process, with the tracer
// injected the way libcuda and NVTX find it (CUDA_INJECTION64_PATH,
// NVTX_INJECTION64_PATH) and libcupti chosen by TRACER_CUPTI_LIBRARY, and
// returns its exit status, stderr and the trace it wrote.
#pragma once

#include <map>
#include <string>

#include "tests/cupti/trace_reader.h"

namespace tracer::testing {

struct ScenarioRun {
  int exit_code = -1;
  std::string stderr_text;
  std::string trace_path;
  TraceContents trace;
  // Lines of stderr that start with "tracer: ".
  int TracerLines(const std::string& containing = "") const;
};

// env entries override the defaults (fake libcupti, output under a temp dir).
ScenarioRun RunScenario(const std::string& scenario,
                        const std::map<std::string, std::string>& env = {});

}  // namespace tracer::testing
