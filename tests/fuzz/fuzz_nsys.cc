// libFuzzer target: the nsys SQLite export importer on arbitrary database
// files (SQLite itself rejects most mutations; the ones it opens reach the
// schema checks and the table readers), then the analysis and two tables.
#include <cstddef>
#include <cstdint>
#include <string>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "tests/fuzz/fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tracer::fuzz::ImportAnalyzeRender(
      "nsys", data, size,
      [](const std::string& path, tracer::analysis::Trace* trace, std::string* error) {
        return tracer::analysis::importers::ImportNsysSqlite(path, trace, error);
      });
}
