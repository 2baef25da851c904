// libFuzzer target: the nsys SQLite export importer on arbitrary database
// files (SQLite itself rejects most mutations; the ones it opens reach the
// schema checks and the table readers, the direct one of
// sqlite_table_scan.h first), then the analysis and two tables. Before the
// import, every table of the file is also scanned directly, every column
// read as its declared type says: the scan's b-tree walk and record
// decoding on pages and values the importer's own tables would not reach.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"
#include "tests/fuzz/fuzz_import.h"

namespace {

namespace imp = tracer::analysis::importers;

void ScanEveryTable(const std::string& path) {
  imp::SqliteDb db;
  imp::SqliteFileMap file;
  std::string error;
  if (!db.Open(path, &error) || !file.Open(path, &error)) return;
  std::vector<std::string> tables;
  {
    imp::SqliteStatement st =
        db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table'", &error);
    while (st.valid() && st.Step()) tables.emplace_back(st.Text(0));
  }
  for (const std::string& t : tables) {
    std::vector<std::string> columns;
    std::vector<imp::ScanType> types;
    imp::SqliteStatement st = db.Prepare("PRAGMA table_info(\"" + t + "\")", &error);
    const int name = st.Column("name"), type = st.Column("type");
    while (st.valid() && st.Step() && columns.size() < 64) {
      columns.emplace_back(st.Text(name));
      const std::string_view declared = st.Text(type);
      types.push_back(declared == "TEXT"   ? imp::ScanType::kText
                      : declared == "REAL" ? imp::ScanType::kDouble
                                           : imp::ScanType::kInt);
    }
    imp::ScanPlan plan;
    if (!imp::PlanTableScan(&db, t, columns, types, &plan, &error)) continue;
    imp::TableScan scan(&file, plan);
    size_t bytes = 0;
    while (scan.Next()) {
      for (size_t i = 0; i < types.size(); ++i) {
        bytes += types[i] == imp::ScanType::kText ? scan.Text(i).size()
                                                  : static_cast<size_t>(scan.Int(i) & 1);
      }
    }
    (void)bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tracer::fuzz::ImportAnalyzeRender(
      "nsys", data, size,
      [](const std::string& path, tracer::analysis::Trace* trace, std::string* error) {
        ScanEveryTable(path);
        return imp::ImportNsysSqlite(path, trace, error);
      });
}
