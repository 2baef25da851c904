// The nsys importer reads each table on a thread and connection of its own
// (PrefetchedRows, started before the first table is imported): the rows
// come back as SQLite gives them, over several blocks, and every failure
// (a table or column missing, a SELECT that cannot be prepared, a damaged
// file) is one clear line, the same one a reading of the tables one after
// another gives, never a crash or a hang. Also ParallelFor, which computes
// the processes' analyses side by side.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/prefetched_rows.h"
#include "libtracer/analysis/model/parallel_for.h"
#include "tests/importers/nsys_test_schema.h"

namespace tracer::analysis::importers {
namespace {

class TempDb {
 public:
  explicit TempDb(const std::string& sql) {
    static int counter = 0;
    path_ =
        (std::filesystem::temp_directory_path() / ("tracer_concurrent_" + std::to_string(getpid()) +
                                                   "_" + std::to_string(counter++) + ".sqlite"))
            .string();
    std::filesystem::remove(path_);
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << (err != nullptr ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  ~TempDb() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// n rows of (i, text of i or NULL every 7th, i / 4.0, NULL every 3rd).
std::string NumberedRows(int n) {
  return "CREATE TABLE t (i INTEGER, s TEXT, d REAL, m INTEGER);"
         "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < " +
         std::to_string(n) +
         ") INSERT INTO t SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'row ' || i || "
         "substr('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 1, i % 40) END, i / 4.0, "
         "CASE WHEN i % 3 = 0 THEN NULL ELSE i END FROM c;";
}

std::string Expected(int i) {
  return "row " + std::to_string(i) + std::string(static_cast<size_t>(i % 40), 'x');
}

void CheckNumberedRows(PrefetchedRows& rows, int n) {
  const int i = rows.Column("i"), s = rows.Column("s"), d = rows.Column("d"), m = rows.Column("m");
  ASSERT_GE(i, 0);
  ASSERT_GE(s, 0);
  int seen = 0;
  while (rows.Step()) {
    ASSERT_EQ(rows.Int(i), seen);
    if (seen % 7 == 0) {
      EXPECT_TRUE(rows.IsNull(s)) << seen;
    } else {
      EXPECT_FALSE(rows.IsNull(s)) << seen;
      EXPECT_EQ(rows.Text(s), Expected(seen));
    }
    EXPECT_EQ(rows.Double(d), seen / 4.0);
    EXPECT_EQ(rows.IsNull(m), seen % 3 == 0) << seen;
    if (seen % 3 != 0) {
      EXPECT_EQ(rows.Int(m), seen);
    }
    ++seen;
  }
  EXPECT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(seen, n);
}

// More rows than one block (2048): text, doubles and NULLs survive the
// blocks' reuse.
TEST(PrefetchedRowsTest, TextDoubleAndNullColumnsOverManyBlocks) {
  const int n = 5000;
  TempDb db(NumberedRows(n));
  const std::string sql = "SELECT m AS m, d AS d, s AS s, i AS i FROM t ORDER BY i";
  {
    PrefetchedRows rows;
    rows.StartOpen(db.path(), sql, 0, {"m"}, {"s"}, {"d"});
    std::string error;
    ASSERT_TRUE(rows.WaitOpened(&error)) << error;
    CheckNumberedRows(rows, n);
  }
  {
    // Opened here, a bounded queue (the streaming importer's way).
    PrefetchedRows rows;
    std::string error;
    ASSERT_TRUE(rows.Open(db.path(), sql, &error, 1)) << error;
    rows.TrackNulls(rows.Column("m"));
    rows.TrackText(rows.Column("s"));
    rows.TrackDouble(rows.Column("d"));
    rows.Start();
    CheckNumberedRows(rows, n);
  }
  {
    // Opened here and read on this thread a block at a time (the streaming
    // importer's prescan of a table the file scan does not read).
    PrefetchedRows rows;
    std::string error;
    ASSERT_TRUE(rows.Open(db.path(), sql, &error)) << error;
    rows.TrackNulls(rows.Column("m"));
    rows.TrackText(rows.Column("s"));
    rows.TrackDouble(rows.Column("d"));
    rows.StartInline();
    rows.Start();  // after StartInline: no thread
    CheckNumberedRows(rows, n);
    EXPECT_FALSE(rows.Step());  // and stays at the end
    EXPECT_TRUE(rows.ok());
  }
}

// Read inline, a statement that fails while stepping says so, as the
// thread's reading does.
TEST(PrefetchedRowsTest, InlineReadingSaysAStepError) {
  TempDb db(NumberedRows(3000));
  PrefetchedRows rows;
  std::string error;
  // abs() of the smallest integer overflows: an error at that row.
  ASSERT_TRUE(rows.Open(db.path(),
                        "SELECT CASE WHEN i = 2500 THEN abs(-9223372036854775807 - 1) ELSE i END "
                        "AS i FROM t ORDER BY i",
                        &error))
      << error;
  rows.StartInline();
  int seen = 0;
  while (rows.Step()) ++seen;
  EXPECT_FALSE(rows.ok());
  EXPECT_NE(rows.error().find("overflow"), std::string::npos) << rows.error();
  EXPECT_LT(seen, 3000);
}

// ReadNow (a small table, read through the caller's connection before the
// import starts): the same rows, NULLs, texts and doubles as a thread's
// reading, and a SELECT that cannot be prepared said the same way.
TEST(PrefetchedRowsTest, ReadNowThroughTheCallersConnection) {
  const int n = 5000;
  TempDb db(NumberedRows(n));
  SqliteDb connection;
  std::string error;
  ASSERT_TRUE(connection.Open(db.path(), &error)) << error;
  PrefetchedRows rows;
  rows.ReadNow(&connection, "SELECT m AS m, d AS d, s AS s, i AS i FROM t ORDER BY i", {"m"}, {"s"},
               {"d"});
  ASSERT_TRUE(rows.WaitOpened(&error)) << error;
  CheckNumberedRows(rows, n);
  // The connection stays usable by its owner.
  SqliteStatement count = connection.Prepare("SELECT count(*) FROM t", &error);
  ASSERT_TRUE(count.Step()) << error;
  EXPECT_EQ(count.Int(0), n);

  PrefetchedRows missing_table;
  missing_table.ReadNow(&connection, "SELECT x FROM nowhere", {}, {}, {});
  EXPECT_FALSE(missing_table.WaitOpened(&error));
  EXPECT_EQ(error, db.path() + ": SQL error: no such table: nowhere");
  EXPECT_FALSE(missing_table.Step());
}

// IntValue / DoubleValue / TextValue (one lookup of the column) answer as
// IsNull with Int / Double / Text.
TEST(SqliteStatementTest, ValueReadsMatchTheColumnReads) {
  TempDb db(NumberedRows(100));
  SqliteDb connection;
  std::string error;
  ASSERT_TRUE(connection.Open(db.path(), &error)) << error;
  SqliteStatement st = connection.Prepare("SELECT i, s, d, m FROM t ORDER BY i", &error);
  int seen = 0;
  while (st.Step()) {
    for (int col = 0; col < 4; ++col) {
      int64_t i = -1;
      double d = -1;
      std::string_view t = "unset";
      EXPECT_EQ(st.IntValue(col, &i), !st.IsNull(col));
      EXPECT_EQ(st.DoubleValue(col, &d), !st.IsNull(col));
      EXPECT_EQ(st.TextValue(col, &t), !st.IsNull(col));
      if (!st.IsNull(col)) {
        EXPECT_EQ(i, st.Int(col));
        EXPECT_EQ(d, st.Double(col));
        EXPECT_EQ(t, st.Text(col));
      }
    }
    ++seen;
  }
  EXPECT_EQ(seen, 100);
}

TEST(PrefetchedRowsTest, OpenAndPrepareFailuresAreSaid) {
  TempDb db(NumberedRows(10));
  PrefetchedRows missing_table;
  missing_table.StartOpen(db.path(), "SELECT x FROM nowhere", 0, {}, {}, {});
  std::string error;
  EXPECT_FALSE(missing_table.WaitOpened(&error));
  EXPECT_EQ(error, db.path() + ": SQL error: no such table: nowhere");
  EXPECT_FALSE(missing_table.Step());

  PrefetchedRows no_file;
  const std::string path = db.path() + ".absent";
  no_file.StartOpen(path, "SELECT i FROM t", 0, {}, {}, {});
  EXPECT_FALSE(no_file.WaitOpened(&error));
  EXPECT_EQ(error.rfind(path + ": cannot open as SQLite:", 0), 0u) << error;
}

// A reader dropped before its rows were read stops and is joined (no hang,
// no use of freed memory under the sanitizers).
TEST(PrefetchedRowsTest, DroppedUnreadIsJoined) {
  TempDb db(NumberedRows(5000));
  for (size_t queued : {size_t{0}, size_t{1}}) {
    PrefetchedRows rows;
    rows.StartOpen(db.path(), "SELECT i AS i FROM t", queued, {}, {}, {});
    std::string error;
    ASSERT_TRUE(rows.WaitOpened(&error)) << error;
    ASSERT_TRUE(rows.Step());
  }
}

// The synthetic export the tests import: the shared test schema
// (nsys_test_schema.h), one runtime call and the kernel it launched, in
// process 1 (globalPid / globalTid 281474993487872: VM id 1, pid 1, tid 0).
std::string OneKernelExport() {
  return std::string(kNsysSchema) + R"(
INSERT INTO StringIds (id, value) VALUES (1, 'cudaLaunchKernel'), (2, 'gemm');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
  (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
  VALUES (10, 20, 0, 281474993487872, 1, 1, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
  (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName)
  VALUES (30, 40, 0, 1, 7, 1, 281474993487872, 2);
)";
}

// n NVTX ranges named "op i" (distinct names, as emit_nvtx writes).
std::string NvtxRows(int n) {
  return "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < " +
         std::to_string(n) +
         ") INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
         "SELECT 100 + i * 10, 105 + i * 10, 59, 'aten::mm, op_id = ' || i, 281474993487872 "
         "FROM c;";
}

TEST(NsysConcurrentImportTest, EveryRowOfEveryTable) {
  const int n = 6000;  // several blocks of the NVTX reader
  TempDb db(OneKernelExport() + NvtxRows(n));
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(db.path(), &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 1u);
  const ProcessTrace& p = trace.processes[0];
  ASSERT_EQ(p.ranges.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(trace.strings.Get(p.ranges[i].name), "aten::mm, op_id = " + std::to_string(i));
    ASSERT_EQ(p.ranges[i].start_ns, static_cast<uint64_t>(100 + i * 10));
  }
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(trace.strings.Get(p.kernels[0].name), "gemm");
  EXPECT_EQ(p.header.device, "0");  // noted from the kernel rows
  ASSERT_EQ(p.api_calls.size(), 1u);
}

// With the tables read side by side, the error is still the first one a
// reading in order (runtime, kernels, copies, sets, syncs, NVTX) meets.
TEST(NsysConcurrentImportTest, TheFirstSchemaErrorInTableOrderIsReported) {
  Trace trace;
  std::string error;
  {
    // NVTX_EVENTS without text or textId, and a kernel table without
    // demangledName: the kernel table is read first.
    TempDb db(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,"
        " contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER,"
        " globalTid INTEGER);");
    EXPECT_FALSE(ImportNsysSqlite(db.path(), &trace, &error));
    EXPECT_EQ(error, db.path() +
                         ": not an nsys export: table CUPTI_ACTIVITY_KIND_KERNEL has no column "
                         "'demangledName'");
  }
  {
    TempDb db(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER,"
        " globalTid INTEGER);");
    EXPECT_FALSE(ImportNsysSqlite(db.path(), &trace, &error));
    EXPECT_EQ(error, db.path() +
                         ": not an nsys export: table NVTX_EVENTS has neither column 'text' nor "
                         "'textId'");
  }
  {
    TempDb db(
        "CREATE TABLE StringIds (id INTEGER, value TEXT);"
        "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT);");
    EXPECT_FALSE(ImportNsysSqlite(db.path(), &trace, &error));
    EXPECT_EQ(error,
              db.path() + ": not an nsys export: table NVTX_EVENTS has no column 'globalTid'");
  }
  EXPECT_TRUE(trace.processes.empty());
}

// Damaged NVTX_EVENTS pages (zeroed, as a cut or overwritten copy leaves
// them) while the other tables read fine: one line naming the file and the
// table, no process half imported.
TEST(NsysConcurrentImportTest, DamagedNvtxPagesAreOneClearError) {
  TempDb good(OneKernelExport() + NvtxRows(20000));
  std::ifstream in(good.path(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  // The NVTX rows, written last, are most of the file: zero a run of pages
  // in its second half.
  ASSERT_GT(bytes.size(), 100000u);
  const size_t page = 4096, from = (bytes.size() / 2 / page) * page;
  std::fill(bytes.begin() + static_cast<long>(from),
            bytes.begin() + static_cast<long>(from + 8 * page), '\0');
  const std::string bad = good.path() + ".bad";
  std::ofstream(bad, std::ios::binary) << bytes;
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportFile(bad, &trace, &error));
  EXPECT_EQ(error, bad + ": error reading table NVTX_EVENTS: database disk image is malformed");
  EXPECT_TRUE(trace.processes.empty());
  std::filesystem::remove(bad);
}

TEST(ParallelForTest, EveryIndexOnceAndTheErrorRethrown) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{37}}) {
    std::vector<std::atomic<int>> calls(n);
    ParallelFor(n, [&](size_t i) { ++calls[i]; });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(calls[i].load(), 1) << i;
  }
  std::atomic<int> done{0};
  EXPECT_THROW(ParallelFor(8,
                           [&](size_t i) {
                             ++done;
                             if (i == 5) throw std::runtime_error("five");
                           }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 8) << "the other calls still ran";
}

}  // namespace
}  // namespace tracer::analysis::importers
