// Fuzz helper of the importer targets: the input goes to a file (importers
// read paths), is imported, and what was imported is analysed and rendered
// as the ranges and kernels tables, the path `tracer report` takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/fuzz/fuzz_input_file.h"

namespace tracer::fuzz {

// import(path, &trace, &error) -> bool, as the importers' entry points.
template <typename Import>
int ImportAnalyzeRender(const char* stem, const uint8_t* data, size_t size, Import import) {
  using namespace tracer::analysis;
  const std::string path = WriteInputFile(stem, data, size);
  Trace trace;
  std::string error;
  if (import(path, &trace, &error)) {
    const AnalyzedTrace analyzed(trace, AttributionOptions{});
    const ReportOptions options;
    RenderTables({RangesTable(analyzed, options), KernelsTable(analyzed, options)},
                 OutputFormat::kText);
  }
  std::remove(path.c_str());
  return 0;
}

}  // namespace tracer::fuzz
