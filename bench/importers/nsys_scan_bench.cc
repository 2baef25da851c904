// The rows of an nsys export read straight from the file (TableScan,
// sqlite_table_scan.h) against the same rows stepped through sqlite3 (what
// nsys_read_floor times: the floor of any reader built on the library), and
// the report's import (ImportNsysSqlite, ImportFields::kReported) reading
// the rows directly against the same import reading them all through SQL
// (NsysRowReader::kSql, the reading of the importer before the scan), all
// in one process, interleaved, so that every figure meets the same load.
// Prints the best and the median of each (wall and CPU ms) and the ratios.
//
//   nsys_scan_bench EXPORT.sqlite... [--repeats N] [--only K]
//
// --only K: run the K-th reading alone (0..3, in the order printed), to
// profile it.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common/cpu_time.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"

namespace {

namespace imp = tracer::analysis::importers;

using tracer::bench::ProcessCpuSeconds;

// The tables and columns nsys_read_floor steps (the default report's).
struct Read {
  const char* table;
  std::vector<std::string> columns;
  std::vector<imp::ScanType> types;
};
const std::vector<Read>& Reads() {
  using T = imp::ScanType;
  static const std::vector<Read> kReads = {
      {"StringIds", {"id", "value"}, {T::kInt, T::kText}},
      {"CUPTI_ACTIVITY_KIND_RUNTIME",
       {"start", "end", "globalTid", "correlationId", "nameId", "eventClass"},
       {T::kInt, T::kInt, T::kInt, T::kInt, T::kInt, T::kInt}},
      {"CUPTI_ACTIVITY_KIND_KERNEL",
       {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
        "demangledName"},
       std::vector<T>(8, T::kInt)},
      {"CUPTI_ACTIVITY_KIND_MEMCPY",
       {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes",
        "copyKind"},
       std::vector<T>(9, T::kInt)},
      {"CUPTI_ACTIVITY_KIND_MEMSET",
       {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes"},
       std::vector<T>(8, T::kInt)},
      {"NVTX_EVENTS",
       {"start", "end", "eventType", "globalTid", "text", "textId", "domainId"},
       {T::kInt, T::kInt, T::kInt, T::kInt, T::kText, T::kInt, T::kInt}},
  };
  return kReads;
}

// nsys_read_floor's reading: every row of each SELECT stepped, every value
// fetched. Returns a checksum (rows + values).
int64_t SqlFloor(const std::string& path, size_t* rows) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::exit(1);
  }
  sqlite3_exec(db, "PRAGMA mmap_size = 1099511627776", nullptr, nullptr, nullptr);
  int64_t sum = 0;
  *rows = 0;
  for (const Read& r : Reads()) {
    std::string sql = "SELECT ";
    for (size_t i = 0; i < r.columns.size(); ++i) sql += (i ? ", \"" : "\"") + r.columns[i] + "\"";
    sql += std::string(" FROM ") + r.table;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) continue;
    const int n = sqlite3_column_count(st);
    while (sqlite3_step(st) == SQLITE_ROW) {
      ++*rows;
      for (int i = 0; i < n; ++i) {
        if (sqlite3_column_type(st, i) == SQLITE_TEXT) {
          sum += sqlite3_column_bytes(st, i);
        } else {
          sum += sqlite3_column_int64(st, i);
        }
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return sum;
}

// The same rows and values through TableScan (the schema through the
// library, as the importer does); *gave_up counts tables it could not read.
int64_t ScanFloor(const std::string& path, size_t* rows, int* gave_up) {
  imp::SqliteDb db;
  std::string error;
  if (!db.Open(path, &error)) std::exit(1);
  auto file = std::make_shared<imp::SqliteFileMap>();
  if (!file->Open(path, &error)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
    std::exit(1);
  }
  int64_t sum = 0;
  *rows = 0;
  *gave_up = 0;
  for (const Read& r : Reads()) {
    if (!db.HasTable(r.table)) continue;
    imp::ScanPlan plan;
    if (!imp::PlanTableScan(&db, r.table, r.columns, r.types, &plan, &error)) {
      ++*gave_up;
      continue;
    }
    imp::TableScan scan(file.get(), std::move(plan));
    while (scan.Next()) {
      ++*rows;
      for (size_t i = 0; i < r.columns.size(); ++i) {
        sum += r.types[i] == imp::ScanType::kText ? static_cast<int64_t>(scan.Text(i).size())
                                                  : scan.Int(i);
      }
    }
    if (scan.failed()) ++*gave_up;
  }
  return sum;
}

void Import(const std::string& path, imp::NsysRowReader reader) {
  tracer::analysis::Trace trace;
  std::string error;
  if (!imp::ImportNsysSqlite(path, &trace, &error, imp::ImportFields::kReported, reader)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::exit(1);
  }
}

struct Samples {
  std::vector<double> wall, cpu;
  double Best(const std::vector<double>& v) const { return *std::min_element(v.begin(), v.end()); }
  double Median(std::vector<double> v) const {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

void Bench(const std::string& path, int repeats, int only) {
  size_t sql_rows = 0, scan_rows = 0;
  int gave_up = 0;
  int64_t sql_sum = 0, scan_sum = 0;
  const std::vector<std::pair<const char*, std::function<void()>>> fns = {
      {"SQL floor (sqlite3_step, nsys_read_floor's reads)",
       [&] { sql_sum = SqlFloor(path, &sql_rows); }},
      {"scan floor (TableScan, the same reads)",
       [&] { scan_sum = ScanFloor(path, &scan_rows, &gave_up); }},
      {"report import, rows through SQL", [&] { Import(path, imp::NsysRowReader::kSql); }},
      {"report import, rows read directly", [&] { Import(path, imp::NsysRowReader::kDirect); }},
  };
  std::vector<Samples> s(fns.size());
  for (int i = 0; i < repeats; ++i) {
    for (size_t f = 0; f < fns.size(); ++f) {
      if (only >= 0 && static_cast<size_t>(only) != f) continue;
      const double c0 = ProcessCpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      fns[f].second();
      const auto t1 = std::chrono::steady_clock::now();
      s[f].wall.push_back(std::chrono::duration<double>(t1 - t0).count() * 1e3);
      s[f].cpu.push_back((ProcessCpuSeconds() - c0) * 1e3);
    }
  }
  if (only >= 0) return;
  std::printf("%s: %zu rows (SQL) / %zu rows (scan), checksums %s, %d table(s) not scanned\n",
              path.c_str(), sql_rows, scan_rows, sql_sum == scan_sum ? "equal" : "DIFFER", gave_up);
  std::printf("%-52s %9s %9s %9s %9s\n", "ms, best and median of each", "wall", "(med)", "CPU",
              "(med)");
  for (size_t f = 0; f < fns.size(); ++f) {
    std::printf("%-52s %9.2f %9.2f %9.2f %9.2f\n", fns[f].first, s[f].Best(s[f].wall),
                s[f].Median(s[f].wall), s[f].Best(s[f].cpu), s[f].Median(s[f].cpu));
  }
  auto ratio = [&](size_t a, size_t b, const char* what) {
    std::printf("%-52s wall %.2fx (median %.2fx)  CPU %.2fx (median %.2fx)\n", what,
                s[a].Best(s[a].wall) / s[b].Best(s[b].wall),
                s[a].Median(s[a].wall) / s[b].Median(s[b].wall),
                s[a].Best(s[a].cpu) / s[b].Best(s[b].cpu),
                s[a].Median(s[a].cpu) / s[b].Median(s[b].cpu));
  };
  ratio(0, 1, "SQL floor / scan floor:");
  ratio(2, 3, "import through SQL / import reading directly:");
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20, only = -1;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc) {
      only = std::atoi(argv[++i]);
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: nsys_scan_bench EXPORT.sqlite... [--repeats N]\n");
    return 2;
  }
  for (const std::string& f : files) Bench(f, repeats, only);
  return 0;
}
