// Registers the `tracer export` formats of libtracer/analysis/export/:
// nsys-compatible SQLite and a directory of CSV tables (export_registry.h).
#include "libtracer/analysis/export/csv_export.h"
#include "libtracer/analysis/export/export_registry.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/export/sqlite_tables.h"

namespace tracer::cli {
namespace {

const analysis::ExportFormatRegistrar kSqlite{
    {"sqlite",
     "SQLite with Nsight Systems' tables and columns (CUPTI_ACTIVITY_KIND_KERNEL, "
     "CUPTI_ACTIVITY_KIND_RUNTIME, NVTX_EVENTS, StringIds, ...): SQL written for nsys exports "
     "runs unchanged",
     ".sqlite",
     [](const analysis::Trace& trace, const std::string& path,
        const std::vector<analysis::Table>& tables, std::string* error) {
       return analysis::exporters::WriteSqlite(trace, path, error) &&
              analysis::exporters::AppendSqliteTables(tables, path, error);
     }}};

const analysis::ExportFormatRegistrar kCsv{
    {"csv", "a directory with every report table as <table>.csv (raw ns, stable columns)", "_csv",
     [](const analysis::Trace& trace, const std::string& dir,
        const std::vector<analysis::Table>& tables,
        std::string* error) { return analysis::exporters::WriteCsv(trace, dir, error, tables); }}};

}  // namespace
}  // namespace tracer::cli
