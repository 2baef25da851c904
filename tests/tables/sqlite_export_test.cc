// The SQLite export: seeds/000's SQL, copied verbatim into
// data/seeds000.sql, runs unchanged on an export of a hand-built trace and
// returns the rows derived here from the trace itself; column names match a
// real nsys export; the nsys importer reads the export back.
#include "libtracer/analysis/export/sqlite_export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::exporters {
namespace {

using Row = std::vector<std::string>;

std::vector<Row> Query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  std::vector<Row> rows;
  char* err = nullptr;
  const int rc = sqlite3_exec(
      db, sql.c_str(),
      [](void* out, int n, char** values, char**) {
        Row row;
        for (int i = 0; i < n; ++i) row.push_back(values[i] ? values[i] : "NULL");
        static_cast<std::vector<Row>*>(out)->push_back(std::move(row));
        return 0;
      },
      &rows, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return rows;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::getpid()) + ".sqlite"))
      .string();
}

// A step with two nested ranges on the main thread, a start/end range, a
// mark, a worker thread, a range with no kernel, a memcpy and a memset.
struct SmallTrace {
  Trace trace;
  SmallTrace() {
    testing::TraceFixture f(&trace);
    auto& p = f.P();
    p.header.session_start_wall_ns = 1700000000000000000ull;
    p.header.command_line = {"python3", "train.py"};
    const uint64_t step = f.Range("step", 1000, 9000);
    const uint64_t fwd = f.Range("forward", 1100, 4000, step);
    f.Kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_", 1500,
             1700, fwd, 1200, 30);
    f.Kernel("ampere_sgemm_128x64_nn", 1700, 2600, fwd, 1300, 40);
    const uint64_t bwd = f.Range("backward", 4000, 8000, step);
    f.Kernel("ampere_sgemm_128x64_nn", 4200, 5200, bwd, 4100, 25, 2, 2);  // worker thread
    f.Range("idle", 8100, 8200, step);
    f.Memcpy(1, 4096, 8300, 8400, step, 8250);
    MemsetRecord ms;
    ms.start_ns = 8500;
    ms.end_ns = 8550;
    ms.bytes = 64;
    ms.stream = 1;
    p.memsets.push_back(ms);
    RangeRecord se;
    se.id = 99;
    se.kind = RangeKind::kStartEnd;
    se.thread = 1;
    se.end_thread = 2;
    se.name = trace.strings.Intern("epoch");
    se.start_ns = 900;
    se.end_ns = 9500;
    p.ranges.push_back(se);
    MarkRecord mark;
    mark.time_ns = 3000;
    mark.thread = 1;
    mark.name = trace.strings.Intern("checkpoint");
    p.marks.push_back(mark);
  }
};

TEST(SqliteExport, SeedsSqlRunsVerbatimAndAttributesKernels) {
  SmallTrace st;
  const std::string path = TempPath("seeds000");
  std::string error;
  ASSERT_TRUE(WriteSqlite(st.trace, path, &error)) << error;

  const std::string sql =
      reports::ReadTextFile(TRACER_SOURCE_DIR "/tests/tables/data/seeds000.sql").value();
  auto rows = Query(path, sql);

  // Expected, from the trace: every NVTX range or mark (end NULL for marks:
  // the ON clause is NULL, so a NULL-joined row) joined with every kernel
  // whose launch call starts inside it; ranges without one give one row of
  // NULLs (LEFT JOIN).
  const ProcessTrace& p = st.trace.processes[0];
  std::vector<Row> expected;
  auto kernels_in = [&](uint64_t start, uint64_t end) {
    std::vector<Row> out;
    for (const KernelRecord& k : p.kernels) {
      for (const ApiRecord& a : p.api_calls) {
        if (a.correlation_id != k.correlation_id) continue;
        if (start <= a.start_ns && end >= a.start_ns) {
          out.push_back({"", std::to_string(a.start_ns), std::to_string(a.end_ns),
                         std::to_string(k.start_ns), std::to_string(k.end_ns),
                         std::string(st.trace.strings.Get(k.name))});
        }
      }
    }
    return out;
  };
  for (const RangeRecord& r : p.ranges) {
    auto ks = kernels_in(r.start_ns, r.end_ns);
    if (ks.empty()) ks.push_back({"", "NULL", "NULL", "NULL", "NULL", "NULL"});
    for (auto& k : ks) {
      k[0] = std::string(st.trace.strings.Get(r.name));
      expected.push_back(k);
    }
  }
  expected.push_back({"checkpoint", "NULL", "NULL", "NULL", "NULL", "NULL"});
  // demangledName holds the demangled form of the mangled kernel name.
  for (auto& row : expected) {
    if (row[5].rfind("_ZN2at6native29vectorized", 0) == 0) {
      row[5] =
          "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> "
          ">(int, at::native::FillFunctor<float>)";
    }
  }
  std::sort(rows.begin(), rows.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(rows, expected);
  // Spot check of the hand-derived facts: 3 kernels under step, 2 under
  // forward, the worker-thread kernel under backward (by time, as the SQL
  // joins), none under idle.
  auto count = [&](const std::string& name) {
    return std::count_if(rows.begin(), rows.end(),
                         [&](const Row& r) { return r[0] == name && r[5] != "NULL"; });
  };
  EXPECT_EQ(count("step"), 3);
  EXPECT_EQ(count("forward"), 2);
  EXPECT_EQ(count("backward"), 1);
  EXPECT_EQ(count("idle"), 0);
  EXPECT_EQ(count("epoch"), 3);
  std::filesystem::remove(path);
}

TEST(SqliteExport, TablesAndValuesFollowNsys) {
  SmallTrace st;
  const std::string path = TempPath("values");
  std::string error;
  ASSERT_TRUE(WriteSqlite(st.trace, path, &error)) << error;
  const int64_t main_tid = NsysGlobalId(100, 100);
  auto rows = Query(path,
                    "SELECT eventType, rangeId, text, globalTid, endGlobalTid FROM NVTX_EVENTS "
                    "ORDER BY start");
  ASSERT_EQ(rows.size(), 6u);  // 5 ranges + 1 mark
  EXPECT_EQ(rows[0], (Row{"60", "99", "epoch", std::to_string(main_tid),
                          std::to_string(NsysGlobalId(100, 101))}));
  EXPECT_EQ(rows[1], (Row{"59", "NULL", "step", std::to_string(main_tid), "NULL"}));
  EXPECT_EQ(Query(path, "SELECT eventType FROM NVTX_EVENTS WHERE text = 'checkpoint'"),
            (std::vector<Row>{{"34"}}));
  EXPECT_EQ(Query(path,
                  "SELECT s.value, t.globalTid FROM ThreadNames t JOIN StringIds s ON "
                  "s.id = t.nameId ORDER BY t.globalTid"),
            (std::vector<Row>{{"main", std::to_string(main_tid)},
                              {"worker", std::to_string(NsysGlobalId(100, 101))}}));
  EXPECT_EQ(Query(path,
                  "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON "
                  "s.id = k.shortName ORDER BY k.start LIMIT 1"),
            (std::vector<Row>{{"vectorized_elementwise_kernel"}}));
  EXPECT_EQ(Query(path,
                  "SELECT streamId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start = "
                  "4200"),
            (std::vector<Row>{{"8", std::to_string(NsysGlobalId(100, 0))}}));
  EXPECT_EQ(Query(path, "SELECT bytes, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
            (std::vector<Row>{{"4096", "1"}}));
  EXPECT_EQ(Query(path, "SELECT bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"),
            (std::vector<Row>{{"64"}}));
  EXPECT_EQ(Query(path, "SELECT count(*), min(eventClass) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
            (std::vector<Row>{{"4", "0"}}));
  std::filesystem::remove(path);
}

// Every column of a real nsys export's table exists in ours with the same
// declared type, in the same order.
TEST(SqliteExport, ColumnsMatchARealNsysExport) {
  const std::string real = TRACER_SHARED_DIR "/data/nsys/h100_2gpu_mfu.sqlite";
  if (!std::filesystem::exists(real)) GTEST_SKIP() << "no " << real;
  SmallTrace st;
  const std::string path = TempPath("columns");
  std::string error;
  ASSERT_TRUE(WriteSqlite(st.trace, path, &error)) << error;
  for (const char* table :
       {"StringIds", "ThreadNames", "PROCESSES", "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "TARGET_INFO_CUDA_STREAM",
        "TARGET_INFO_SESSION_START_TIME", "META_DATA_EXPORT", "ENUM_NSYS_EVENT_TYPE"}) {
    const std::string sql =
        std::string("SELECT name, type, \"notnull\" FROM pragma_table_info('") + table + "')";
    EXPECT_EQ(Query(path, sql), Query(real, sql)) << table;
  }
  std::filesystem::remove(path);
}

TEST(SqliteExport, NsysImporterReadsItBack) {
  SmallTrace st;
  const std::string path = TempPath("roundtrip");
  std::string error;
  ASSERT_TRUE(WriteSqlite(st.trace, path, &error)) << error;
  Trace back;
  ASSERT_TRUE(importers::ImportNsysSqlite(path, &back, &error)) << error;
  ASSERT_EQ(back.processes.size(), 1u);
  const ProcessTrace& p = back.processes[0];
  EXPECT_EQ(p.header.pid, 100u);
  EXPECT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.ranges.size(), 5u);
  EXPECT_EQ(p.api_calls.size(), 4u);
  EXPECT_EQ(p.memcpys.size(), 1u);
  EXPECT_EQ(p.memsets.size(), 1u);
  std::set<std::tuple<std::string, uint64_t, uint64_t>> a, b;
  for (const auto& r : st.trace.processes[0].ranges) {
    a.insert({std::string(st.trace.strings.Get(r.name)), r.start_ns, r.end_ns});
  }
  for (const auto& r : p.ranges)
    b.insert({std::string(back.strings.Get(r.name)), r.start_ns, r.end_ns});
  EXPECT_EQ(a, b);
  std::filesystem::remove(path);
}

TEST(SqliteExport, UnwritablePathIsAClearError) {
  SmallTrace st;
  std::string error;
  EXPECT_FALSE(WriteSqlite(st.trace, "/nonexistent-dir/x.sqlite", &error));
  EXPECT_NE(error.find("/nonexistent-dir/x.sqlite"), std::string::npos) << error;
}

}  // namespace
}  // namespace tracer::analysis::exporters
