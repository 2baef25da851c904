// libFuzzer target: the Kineto (PyTorch profiler) JSON importer, plain or
// gzipped (the importer tells them apart by content), then the analysis and
// the ranges and kernels tables of what it imported.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "libtracer/analysis/importers/kineto_json_importer.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracer::analysis;
  const std::string path = tracer::fuzz::WriteInputFile("kineto", data, size);
  Trace trace;
  std::string error;
  if (importers::ImportKinetoJson(path, &trace, &error)) {
    const AnalyzedTrace analyzed(trace, AttributionOptions{});
    const ReportOptions options;
    RenderTables({RangesTable(analyzed, options), KernelsTable(analyzed, options)},
                 OutputFormat::kText);
  }
  std::remove(path.c_str());
  return 0;
}
