// libFuzzer target: the nsys SQLite export importer on arbitrary database
// files (SQLite itself rejects most mutations; the ones it opens reach the
// schema checks and the table readers), then the analysis and two tables.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracer::analysis;
  const std::string path = tracer::fuzz::WriteInputFile("nsys", data, size);
  Trace trace;
  std::string error;
  if (importers::ImportNsysSqlite(path, &trace, &error)) {
    const AnalyzedTrace analyzed(trace, AttributionOptions{});
    const ReportOptions options;
    RenderTables({RangesTable(analyzed, options), KernelsTable(analyzed, options)},
                 OutputFormat::kText);
  }
  std::remove(path.c_str());
  return 0;
}
