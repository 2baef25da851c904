// Registers the `tracer export` formats of libtracer/analysis/export/:
// nsys-compatible SQLite and a directory of CSV tables (export_registry.h).
#include "libtracer/analysis/export/csv_export.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/export/export_registry.h"

namespace tracer::cli {
namespace {

const analysis::ExportFormatRegistrar kSqlite{
    {"sqlite",
     "SQLite with Nsight Systems' tables and columns (CUPTI_ACTIVITY_KIND_KERNEL, "
     "CUPTI_ACTIVITY_KIND_RUNTIME, NVTX_EVENTS, StringIds, ...): SQL written for nsys exports "
     "runs unchanged",
     ".sqlite", analysis::exporters::WriteSqlite}};

const analysis::ExportFormatRegistrar kCsv{
    {"csv", "a directory with every report table as <table>.csv (raw ns, stable columns)", "_csv",
     analysis::exporters::WriteCsv}};

}  // namespace
}  // namespace tracer::cli
