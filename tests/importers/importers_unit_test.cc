// Unit tests of the importers on small synthetic inputs written by the tests
// themselves: exact microsecond -> ns conversion, range nesting, format
// detection, output naming, and the clear errors on inputs that are not (or
// no longer) what they claim to be.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/kineto_event.h"
#include "libtracer/analysis/importers/kineto_json_importer.h"
#include "libtracer/analysis/importers/kineto_tokenizer.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/range_nesting.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/stream_writer.h"
#include "tests/importers/nsys_test_schema.h"

namespace tracer::analysis::importers {
namespace {

// A scratch file removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix) {
    path_ =
        (std::filesystem::temp_directory_path() / ("tracer_importers_" + std::to_string(getpid()) +
                                                   "_" + std::to_string(counter_++) + suffix))
            .string();
    std::filesystem::remove(path_);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

// Runs SQL statements on a new SQLite file.
void MakeDb(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

uint64_t Ns(const std::string& text) {
  uint64_t ns = 0;
  EXPECT_TRUE(MicrosTextToNs(text.data(), text.size(), &ns)) << text;
  return ns;
}

TEST(MicrosTextToNsTest, KeepsNanosecondsThatADoubleWouldLose) {
  // As a double this epoch value has a 0.25 us resolution.
  EXPECT_EQ(Ns("1712195495505543.2"), 1712195495505543200ull);
  EXPECT_EQ(Ns("1712195495505543.217"), 1712195495505543217ull);
  EXPECT_EQ(Ns("63.813"), 63813u);
  EXPECT_EQ(Ns("41"), 41000u);
  EXPECT_EQ(Ns("0.5"), 500u);
  EXPECT_EQ(Ns("1.2345"), 1235u);  // a 4th decimal rounds
  EXPECT_EQ(Ns("1.2344"), 1234u);
  uint64_t ns = 0;
  EXPECT_FALSE(MicrosTextToNs("-1.0", 4, &ns));
  EXPECT_FALSE(MicrosTextToNs("1e3", 3, &ns));
  EXPECT_FALSE(MicrosTextToNs("", 0, &ns));
  EXPECT_FALSE(MicrosTextToNs("99999999999999999999", 20, &ns));  // overflows as ns
}

RangeRecord Range(uint32_t thread, uint64_t start, uint64_t end, uint32_t name,
                  RangeKind kind = RangeKind::kPushPop) {
  RangeRecord r;
  r.thread = thread;
  r.start_ns = start;
  r.end_ns = end;
  r.name = name;
  r.kind = kind;
  return r;
}

TEST(RangeNestingTest, ParentsByTimePerThreadAndPartialOverlapsCounted) {
  std::vector<RangeRecord> ranges = {
      Range(1, 60, 120, 4),  // D: starts inside A, ends after it (partial overlap)
      Range(1, 20, 30, 3),   // C inside B
      Range(1, 0, 100, 1),   // A
      Range(2, 15, 25, 5),   // E: other thread, top level
      Range(1, 10, 50, 2),   // B inside A
      Range(1, 10, 50, 6, RangeKind::kStartEnd),  // start/end: never nested
  };
  const NestingResult result = AssignRangeIdsAndNesting(&ranges);
  EXPECT_EQ(result.partial_overlaps, 1u);
  std::map<uint32_t, const RangeRecord*> by_name;
  for (const RangeRecord& r : ranges) by_name[r.name] = &r;
  // Ids follow start order, the enclosing range first on ties.
  EXPECT_EQ(by_name[1]->id, 1u);
  EXPECT_EQ(by_name[1]->parent_id, 0u);
  EXPECT_EQ(by_name[2]->parent_id, by_name[1]->id);
  EXPECT_EQ(by_name[3]->parent_id, by_name[2]->id);
  EXPECT_EQ(by_name[3]->depth, 2u);
  EXPECT_EQ(by_name[4]->parent_id, by_name[1]->id);  // open at D's start
  EXPECT_EQ(by_name[5]->parent_id, 0u);
  EXPECT_EQ(by_name[6]->parent_id, 0u);
  EXPECT_EQ(by_name[6]->depth, 0u);
  std::set<uint64_t> ids;
  for (const RangeRecord& r : ranges) ids.insert(r.id);
  EXPECT_EQ(ids.size(), ranges.size());
  EXPECT_EQ(ids.count(0), 0u);
}

TEST(ImportFormatTest, DetectsByContentNotExtension) {
  EXPECT_EQ(DetectImportFormat(std::string_view("SQLite format 3\0xxxx", 20)),
            ImportFormat::kNsysSqlite);
  EXPECT_EQ(DetectImportFormat("\x1f\x8b\x08"), ImportFormat::kKinetoJson);
  EXPECT_EQ(DetectImportFormat("  \n {\"traceEvents\""), ImportFormat::kKinetoJson);
  EXPECT_EQ(DetectImportFormat("[{"), ImportFormat::kKinetoJson);
  EXPECT_EQ(DetectImportFormat(std::string_view("TRACER\0\1", 8)), ImportFormat::kUnknown);
  EXPECT_EQ(DetectImportFormat("hello"), ImportFormat::kUnknown);
  EXPECT_EQ(DetectImportFormat(""), ImportFormat::kUnknown);
}

TEST(ImportFormatTest, UnknownFileIsAClearError) {
  TempFile f(".txt");
  WriteText(f.path(), "hello world\n");
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportFile(f.path(), &trace, &error));
  EXPECT_NE(error.find("unknown format"), std::string::npos) << error;
  EXPECT_FALSE(ImportFile(f.path() + ".missing", &trace, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  EXPECT_TRUE(trace.processes.empty());
}

TEST(StreamWriterTest, OutputPathPerProcess) {
  EXPECT_EQ(ProcessOutputPath("out.trace", 7, 1), "out.trace");
  EXPECT_EQ(ProcessOutputPath("out.trace", 7, 2), "out.7.trace");
  EXPECT_EQ(ProcessOutputPath("out", 7, 2), "out.7");
  EXPECT_EQ(ProcessOutputPath("run-%p.trace", 7, 2), "run-7.trace");
  EXPECT_EQ(ProcessOutputPath("run-%p.trace", 7, 1), "run-7.trace");
}

// --- nsys ------------------------------------------------------------------

// Synthetic exports are written with kNsysSchema (nsys_test_schema.h): what
// `nsys export` writes, reduced to the tables and columns the importer reads.

// globalTid of pid p, tid t (VM id 1 in the high bits, as in real exports).
std::string Gid(uint64_t pid, uint64_t tid) {
  return std::to_string((uint64_t{1} << 48) | (pid << 24) | tid);
}

TEST(SqliteStatementTest, ColumnsAreFoundByTheirName) {
  TempFile f(".sqlite");
  MakeDb(f.path(), "CREATE TABLE t (x INTEGER, y TEXT); INSERT INTO t VALUES (7, 'seven');");
  SqliteDb db;
  std::string error;
  ASSERT_TRUE(db.Open(f.path(), &error)) << error;
  SqliteStatement st =
      db.Prepare("SELECT \"y\" AS \"y\", NULL AS \"z\", \"x\" AS \"x\" FROM t", &error);
  ASSERT_TRUE(st.valid()) << error;
  const int x = st.Column("x"), y = st.Column("y"), z = st.Column("z");
  EXPECT_EQ(x, 2);
  EXPECT_EQ(y, 0);
  EXPECT_EQ(z, 1);
  EXPECT_EQ(st.Column("missing"), -1);
  ASSERT_TRUE(st.Step());
  EXPECT_EQ(st.Int(x), 7);
  EXPECT_EQ(st.Text(y), "seven");
  EXPECT_TRUE(st.IsNull(z));
  EXPECT_EQ(db.Columns("t"), (std::vector<std::string>{"x", "y"}));
}

TEST(NsysImporterTest, SyntheticExportMapsEveryKind) {
  TempFile f(".sqlite");
  const std::string g = Gid(500, 500), w = Gid(500, 501), other = Gid(600, 600);
  MakeDb(f.path(),
         std::string(kNsysSchema) +
             // Sparse ids, as in schema 3.x exports.
             "INSERT INTO StringIds VALUES (0,'[Unknown]'),(900000,'cudaLaunchKernel_v7000'),"
             "(900001,'gemm_kernel'),(900002,'registered range'),(900003,'main'),"
             "(900004,'cuLaunchKernel');"
             "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100,110,0," +
             g + ",7,900000,0),(300,320,1," + w + ",8,900004,0),(100,105,0," + other +
             ",7,900000,0);"
             "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (150,250,1,1,13,7,(" +
             g + ">>24)<<24,900001,4,1,1,128,1,1,0,0,32),(400,450,1,1,14,8,(" + g +
             ">>24)<<24,900001,4,1,1,128,1,1,0,0,32),(160,170,0,1,7,7,(" + other +
             ">>24)<<24,900001,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);"
             "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,domainId) "
             "VALUES (10,NULL,75,'mydomain'," +
             g +
             ",5);"
             "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,domainId,color) "
             "VALUES (50,500,59,'outer'," +
             g + ",5,255),(60,200,59,NULL," + g + ",0,0),(70,80,34,'a mark'," + g +
             ",0,0);"
             "UPDATE NVTX_EVENTS SET textId = 900002 WHERE start = 60;"
             "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,endGlobalTid,"
             "domainId) VALUES (90,NULL,60,'unclosed async'," +
             g + "," + w +
             ",0);"
             "INSERT INTO ThreadNames VALUES (900003,20," +
             g + ");");
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(f.path(), &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 2u);  // pids 500 and 600, in pid order
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(p.header.pid, 500u);
  EXPECT_EQ(trace.processes[1].header.pid, 600u);
  EXPECT_EQ(p.header.source, "nsys-sqlite");

  ASSERT_EQ(p.api_calls.size(), 2u);
  EXPECT_EQ(trace.strings.Get(p.api_calls[0].name), "cudaLaunchKernel_v7000");
  EXPECT_EQ(p.api_calls[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(p.api_calls[1].domain, ApiDomain::kDriver);
  EXPECT_EQ(p.threads[p.api_calls[0].thread].os_tid, 500u);
  EXPECT_EQ(trace.strings.Get(p.threads[p.api_calls[0].thread].name), "main");
  EXPECT_EQ(p.threads[p.api_calls[1].thread].os_tid, 501u);

  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(trace.strings.Get(p.kernels[0].name), "gemm_kernel");
  EXPECT_EQ(p.kernels[0].correlation_id, 7u);
  EXPECT_EQ(p.streams[p.kernels[0].stream].device, 1u);
  EXPECT_EQ(p.streams[p.kernels[0].stream].stream, 13u);
  EXPECT_NE(p.kernels[0].stream, p.kernels[1].stream);
  EXPECT_EQ(p.kernels[0].launch_config, p.kernels[1].launch_config);  // deduplicated
  EXPECT_EQ(p.launch_configs[p.kernels[0].launch_config].block[0], 128u);
  EXPECT_EQ(p.launch_configs[p.kernels[0].launch_config].registers_per_thread, 32u);
  EXPECT_EQ(trace.processes[1].kernels.size(), 1u);
  EXPECT_EQ(trace.processes[1].kernels[0].launch_config, 0u);

  ASSERT_EQ(p.ranges.size(), 3u);
  const RangeRecord& outer = p.ranges[0];
  const RangeRecord& inner = p.ranges[1];
  const RangeRecord& async = p.ranges[2];
  EXPECT_EQ(trace.strings.Get(outer.name), "outer");
  EXPECT_EQ(trace.strings.Get(p.domain_names.at(5)), "mydomain");
  EXPECT_EQ(outer.domain, 5u);
  EXPECT_EQ(outer.color, 255u);
  EXPECT_EQ(trace.strings.Get(inner.name), "registered range");  // via textId
  EXPECT_EQ(inner.parent_id, outer.id);
  EXPECT_EQ(inner.depth, 1u);
  EXPECT_EQ(async.kind, RangeKind::kStartEnd);
  EXPECT_EQ(p.threads[async.end_thread].os_tid, 501u);
  EXPECT_TRUE(async.flags & kRangeFlagUnclosed);
  EXPECT_EQ(async.end_ns, 500u) << "an unclosed range ends at the export's last timestamp";
  EXPECT_EQ(p.counters.at("import_unclosed_ranges"), 1u);
  ASSERT_EQ(p.marks.size(), 1u);
  EXPECT_EQ(trace.strings.Get(p.marks[0].name), "a mark");
}

// The payload of an NVTX row: the first non-NULL of the payload columns, in
// the order of nsys' union members, read as its type; exports that lack some
// of those columns (older schemas) or all of them still import.
TEST(NsysImporterTest, NvtxPayloadIsTheFirstNonNullPayloadColumn) {
  const std::string g = Gid(500, 500);
  auto import = [&](const std::string& columns, const std::string& rows, Trace* trace) {
    TempFile f(".sqlite");
    MakeDb(f.path(), std::string(kNsysSchema) + columns + rows);
    std::string error;
    EXPECT_TRUE(ImportNsysSqlite(f.path(), trace, &error)) << error;
    std::map<std::string, PayloadValue> by_name;
    for (const RangeRecord& r : trace->processes.at(0).ranges) {
      by_name[std::string(trace->strings.Get(r.name))] = r.payload;
    }
    return by_name;
  };
  Trace all;
  const auto p = import(
      "ALTER TABLE NVTX_EVENTS ADD COLUMN uint64Value INTEGER;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN int64Value INTEGER;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN doubleValue REAL;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN uint32Value INTEGER;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN int32Value INTEGER;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN floatValue REAL;",
      "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,uint64Value,int64Value,"
      "doubleValue,uint32Value,int32Value,floatValue) VALUES "
      "(10,20,59,'u64'," +
          g +
          ",7,-1,NULL,NULL,NULL,NULL),"
          "(30,40,59,'i64'," +
          g +
          ",NULL,-5,2.5,NULL,NULL,NULL),"
          "(50,60,59,'f64'," +
          g +
          ",NULL,NULL,2.5,3,NULL,NULL),"
          "(70,80,59,'u32'," +
          g +
          ",NULL,NULL,NULL,9,-2,NULL),"
          "(90,100,59,'i32'," +
          g +
          ",NULL,NULL,NULL,NULL,-3,0.25),"
          "(110,120,59,'f32'," +
          g +
          ",NULL,NULL,NULL,NULL,NULL,0.5),"
          "(130,140,59,'none'," +
          g + ",NULL,NULL,NULL,NULL,NULL,NULL);",
      &all);
  ASSERT_EQ(p.size(), 7u);
  EXPECT_EQ(p.at("u64").type, PayloadValue::Type::kU64);
  EXPECT_EQ(p.at("u64").u64, 7u);
  EXPECT_EQ(p.at("i64").type, PayloadValue::Type::kI64);
  EXPECT_EQ(p.at("i64").i64, -5);
  EXPECT_EQ(p.at("f64").type, PayloadValue::Type::kF64);
  EXPECT_EQ(p.at("f64").f64, 2.5);
  EXPECT_EQ(p.at("u32").type, PayloadValue::Type::kU64);
  EXPECT_EQ(p.at("u32").u64, 9u);
  EXPECT_EQ(p.at("i32").type, PayloadValue::Type::kI64);
  EXPECT_EQ(p.at("i32").i64, -3);
  EXPECT_EQ(p.at("f32").type, PayloadValue::Type::kF64);
  EXPECT_EQ(p.at("f32").f64, 0.5);
  EXPECT_EQ(p.at("none").type, PayloadValue::Type::kNone);

  Trace some;
  const auto q = import(
      "ALTER TABLE NVTX_EVENTS ADD COLUMN doubleValue REAL;"
      "ALTER TABLE NVTX_EVENTS ADD COLUMN int32Value INTEGER;",
      "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,doubleValue,int32Value) VALUES "
      "(10,20,59,'i32'," +
          g + ",NULL,4),(30,40,59,'f64'," + g + ",1.5,4);",
      &some);
  EXPECT_EQ(q.at("i32").type, PayloadValue::Type::kI64);
  EXPECT_EQ(q.at("i32").i64, 4);
  EXPECT_EQ(q.at("f64").type, PayloadValue::Type::kF64);
  EXPECT_EQ(q.at("f64").f64, 1.5);

  Trace none;
  const auto r = import("",
                        "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid) VALUES "
                        "(10,20,59,'plain'," +
                            g + ");",
                        &none);
  EXPECT_EQ(r.at("plain").type, PayloadValue::Type::kNone);
}

TEST(NsysImporterTest, MissingColumnIsNamedInTheError) {
  TempFile f(".sqlite");
  MakeDb(f.path(),
         "CREATE TABLE StringIds (id INTEGER, value TEXT);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INTEGER, end INTEGER, deviceId INTEGER);");
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportNsysSqlite(f.path(), &trace, &error));
  EXPECT_EQ(error, f.path() +
                       ": not an nsys export: table CUPTI_ACTIVITY_KIND_KERNEL has no column "
                       "'start'");
  EXPECT_TRUE(trace.processes.empty());
}

TEST(NsysImporterTest, SqliteWithoutNsysTablesIsRejected) {
  TempFile f(".sqlite");
  MakeDb(f.path(), "CREATE TABLE people (name TEXT);");
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportFile(f.path(), &trace, &error));
  EXPECT_NE(error.find("not an nsys export: no table StringIds"), std::string::npos) << error;

  TempFile g(".sqlite");
  MakeDb(g.path(), "CREATE TABLE StringIds (id INTEGER, value TEXT);");
  EXPECT_FALSE(ImportNsysSqlite(g.path(), &trace, &error));
  EXPECT_NE(error.find("none of the tables"), std::string::npos) << error;
  EXPECT_TRUE(trace.processes.empty());
}

// --- nsys CUDA memory usage (--cuda-memory-usage=true) ---------------------

// One CUDA_GPU_MEMORY_USAGE_EVENTS row (the documented columns; contextId,
// pc, correlationId and the pool columns as nsys fills them for a plain
// cudaMalloc / cudaFree).
std::string MemRow(uint64_t start, const std::string& global_pid, int device, uint64_t address,
                   int64_t bytes, int kind, int operation) {
  return "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, "
         "address, pc, bytes, memKind, memoryOperationType, name, correlationId, streamId) "
         "VALUES (" +
         std::to_string(start) + ", " + global_pid + ", " + std::to_string(device) + ", 1, " +
         std::to_string(address) + ", 0, " + std::to_string(bytes) + ", " + std::to_string(kind) +
         ", " + std::to_string(operation) + ", NULL, " + std::to_string(start) + ", NULL);";
}

struct MemPoint {
  uint64_t ts;
  int64_t device;
  int64_t allocated;
  bool managed;
  bool operator==(const MemPoint&) const = default;
};

std::vector<MemPoint> MemPoints(const ProcessTrace& p) {
  std::vector<MemPoint> points;
  for (const MemoryUsageSample& m : p.memory_usage) {
    EXPECT_EQ(m.reserved, -1);  // nsys records allocations only
    points.push_back({m.ts_ns, m.device, m.allocated, m.managed});
  }
  return points;
}

// Allocations and frees of device, array, device-static, managed and pinned
// host memory on two devices, rows out of time order, a free of memory
// allocated before the capture and rows nsys would never write (negative
// bytes, an operation or memory kind outside the enums): running totals of
// the bytes allocated per device, in time order, the rest counted. With the
// export's enum tables (as nsys 2026.2 writes them; those of a real export
// when the shared data is there) and without (their values are the
// fallback), the same.
TEST(NsysImporterTest, CudaMemoryUsageIsTheRunningTotalPerDevice) {
  const std::string g = std::to_string((uint64_t{1} << 48) | (uint64_t{500} << 24));
  const std::string other = std::to_string((uint64_t{1} << 48) | (uint64_t{600} << 24));
  constexpr uint64_t a = 0x7f0000000000, b = 0x7f0000100000, c = 0x7f1000000000, d = 0x7f2000000000,
                     e = 0x7f3000000000, s = 0x7f4000000000;
  const std::string rows =
      MemRow(100, g, 0, a, 1048576, 2, 0) +    // device, GPU 0
      MemRow(200, g, 0, b, 4096, 2, 0) +       // device, GPU 0
      MemRow(150, g, 1, c, 2097152, 3, 0) +    // array, GPU 1 (out of order)
      MemRow(250, g, 0, d, 65536, 1, 0) +      // pinned host
      MemRow(260, g, 0, e, 8192, 4, 0) +       // managed
      MemRow(270, g, 0, 0x1000, 4096, 2, 1) +  // freed, allocated before the capture
      MemRow(280, g, 0, s, 512, 5, 0) +        // device static
      MemRow(300, g, 0, a, 1048576, 2, 1) +    // free of a
      MemRow(400, g, 0, b, 4096, 2, 1) +       // free of b
      MemRow(500, g, 0, e, 8192, 4, 1) +       // free of the managed one
      MemRow(310, g, 0, 0x2000, -5, 2, 0) +    // negative bytes
      MemRow(320, g, 0, 0x3000, 64, 2, 9) +    // no such operation
      MemRow(330, g, 0, 0x4000, 64, 7, 0) +    // memory kind Unknown
      MemRow(120, other, 0, a, 777, 2, 0);     // another process, same address
  const std::vector<MemPoint> want = {
      {100, 0, 1048576, false}, {150, 1, 2097152, false}, {200, 0, 1052672, false},
      {250, -1, 65536, false},  {260, 0, 8192, true},     {280, 0, 1053184, false},
      {300, 0, 4608, false},    {400, 0, 512, false},     {500, 0, 0, true}};
  // The enum tables as written here, as nsys 2026.2 wrote them into a real
  // export (copied from it, when the shared data is there), or none.
  const std::string real = std::string(TRACER_SHARED_DATA_DIR) + "/nsys/h100_2gpu_mfu.sqlite";
  std::vector<std::pair<std::string, std::string>> variants = {
      {"with the enum tables", kNsysMemoryEnums}, {"without the enum tables", ""}};
  if (std::ifstream(real).good()) {
    variants.emplace_back("with the real export's enum tables",
                          "ATTACH DATABASE '" + real +
                              "' AS real;"
                              "CREATE TABLE ENUM_CUDA_MEM_KIND AS SELECT * FROM "
                              "real.ENUM_CUDA_MEM_KIND;"
                              "CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER AS SELECT * FROM "
                              "real.ENUM_CUDA_DEV_MEM_EVENT_OPER;"
                              "DETACH DATABASE real;");
  }
  for (const auto& [what, enums] : variants) {
    SCOPED_TRACE(what);
    TempFile f(".sqlite");
    MakeDb(f.path(), std::string(kNsysSchema) + kNsysMemoryUsageTable + enums + rows);
    Trace trace;
    std::string error;
    ASSERT_TRUE(ImportNsysSqlite(f.path(), &trace, &error)) << error;
    EXPECT_TRUE(trace.warnings.empty());
    ASSERT_EQ(trace.processes.size(), 2u);
    const ProcessTrace& p = trace.processes[0];
    EXPECT_EQ(p.header.pid, 500u);
    EXPECT_EQ(MemPoints(p), want);
    EXPECT_EQ(p.counters.at("import_memory_frees_unmatched"), 1u);
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_negative_bytes"), 1u);
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_operation"), 1u);
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_memory_kind"), 1u);
    EXPECT_EQ(MemPoints(trace.processes[1]), (std::vector<MemPoint>{{120, 0, 777, false}}));
  }
}

// The enum values are looked up by their symbol names in the export's own
// ENUM tables: an export whose numbering differs (standing for a later nsys
// renumbering them) still reads right.
TEST(NsysImporterTest, CudaMemoryEnumsAreReadByName) {
  const std::string g = std::to_string((uint64_t{1} << 48) | (uint64_t{500} << 24));
  TempFile f(".sqlite");
  MakeDb(f.path(),
         std::string(kNsysSchema) + kNsysMemoryUsageTable +
             "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, "
             "label TEXT);"
             "INSERT INTO ENUM_CUDA_MEM_KIND VALUES (2, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', "
             "'Pinned'), (12, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device');"
             "CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, "
             "name TEXT, label TEXT);"
             "INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (4, "
             "'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation'), (5, "
             "'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation');" +
             MemRow(10, g, 3, 0x1000, 100, 2, 5) + MemRow(20, g, 3, 0x2000, 300, 12, 5) +
             MemRow(30, g, 3, 0x2000, 300, 12, 4) + MemRow(40, g, 3, 0x3000, 1, 0, 5));
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(f.path(), &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 1u);
  EXPECT_EQ(MemPoints(trace.processes[0]),
            (std::vector<MemPoint>{{10, -1, 100, false}, {20, 3, 300, false}, {30, 3, 0, false}}));
  // Kind 0 is not in this export's table: unknown, not "pageable".
  EXPECT_EQ(trace.processes[0].counters.at("import_memory_events_skipped_memory_kind"), 1u);
}

// The table is optional and never fails the import: without a column the
// importer needs it says so in one warning; rows with NULLs (a looser table
// than nsys declares) are counted.
TEST(NsysImporterTest, UnusableCudaMemoryUsageIsAWarningOrACount) {
  const std::string g = std::to_string((uint64_t{1} << 48) | (uint64_t{500} << 24));
  const std::string kernel =
      "INSERT INTO StringIds VALUES (1, 'k');"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName) VALUES (1, 2, 0, 1, 7, 1, " +
      g + ", 1);";
  {
    TempFile f(".sqlite");
    MakeDb(f.path(), std::string(kNsysSchema) + kernel +
                         "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER, globalPid "
                         "INTEGER, deviceId INTEGER, address INTEGER, bytes INTEGER, memKind "
                         "INTEGER);"
                         "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (5, " +
                         g + ", 0, 4096, 64, 2);");
    Trace trace;
    std::string error;
    ASSERT_TRUE(ImportNsysSqlite(f.path(), &trace, &error)) << error;
    ASSERT_EQ(trace.processes.size(), 1u);
    EXPECT_EQ(trace.processes[0].kernels.size(), 1u);
    EXPECT_TRUE(trace.processes[0].memory_usage.empty());
    EXPECT_EQ(trace.warnings,
              std::vector<std::string>{f.path() +
                                       ": table CUDA_GPU_MEMORY_USAGE_EVENTS has no column "
                                       "'memoryOperationType': CUDA memory usage not imported"});
  }
  {
    TempFile f(".sqlite");
    MakeDb(f.path(), std::string(kNsysSchema) + kernel +
                         "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER, globalPid "
                         "INTEGER, deviceId INTEGER, address INTEGER, bytes INTEGER, memKind "
                         "INTEGER, memoryOperationType INTEGER);"
                         "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (5, " +
                         g +
                         ", 0, NULL, 64, 2, 0), (6, NULL, 0, 8192, 64, 2, 0), "
                         "(7, " +
                         g + ", NULL, 8192, 64, 2, 0), (8, " + g + ", 0, 8192, 64, 2, 0);");
    Trace trace;
    std::string error;
    ASSERT_TRUE(ImportNsysSqlite(f.path(), &trace, &error)) << error;
    EXPECT_TRUE(trace.warnings.empty());
    ASSERT_EQ(trace.processes.size(), 1u);
    const ProcessTrace& p = trace.processes[0];
    EXPECT_EQ(MemPoints(p), (std::vector<MemPoint>{{8, 0, 64, false}}));
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_null"), 1u);
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_no_device"), 1u);
    EXPECT_EQ(p.counters.at("import_memory_events_skipped_no_pid"), 1u);
  }
}

// --- Kineto ----------------------------------------------------------------

// A Kineto-shaped trace: the event shapes of the PyTorch profiler's output,
// with distributedInfo after traceEvents to check that key order is free.
constexpr char kKinetoTrace[] = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "GPU"}],
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 10, "tid": 10,
     "ts": 1000.5, "dur": 100, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10,
     "ts": 1010, "dur": 20.25, "args": {"External id": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "overlapping", "pid": 10, "tid": 10,
     "ts": 1090, "dur": 30},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
     "ts": 1015.125, "dur": 5, "args": {"cbid": 211, "correlation": 77}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 10, "tid": 11,
     "ts": 1050, "dur": 5, "args": {"cbid": 307, "correlation": 78}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
     "ts": 1020, "dur": 3.5, "args": {"device": 0, "context": 1, "stream": 7,
     "correlation": 77, "grid": [4, 2, 1], "block": [128, 1, 1],
     "registers per thread": 64, "shared memory": 1024}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
     "tid": 7, "ts": 1060, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 78,
     "bytes": 4096}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
     "ts": 1070, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 79, "bytes": 64}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0, "tid": 7,
     "ts": 1019, "dur": 60, "args": {}},
    {"ph": "X", "cat": "python_function", "name": "train.py(1): main", "pid": 10, "tid": 10,
     "ts": 1000, "dur": 200},
    {"ph": "s", "id": 77, "pid": 10, "tid": 10, "ts": 1015.125, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 1020, "cat": "ac2g", "name": "ac2g",
     "bp": "e"},
    {"name": "thread_name", "ph": "M", "pid": 10, "tid": 10, "args": {"name": "main thread"}},
    {"ph": "X", "cat": "Trace", "name": "span", "pid": "Spans", "tid": "PyTorch Profiler",
     "ts": 1, "dur": 2}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 4},
  "host_name": "node7",
  "displayTimeUnit": "ns"
})json";

void CheckKinetoTrace(const Trace& trace) {
  ASSERT_EQ(trace.processes.size(), 1u);
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(p.header.source, "kineto-json");
  EXPECT_EQ(p.header.rank, 3);
  EXPECT_EQ(p.header.pid, 10u);
  EXPECT_EQ(p.header.host, "node7");

  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelRecord& k = p.kernels[0];
  EXPECT_EQ(k.start_ns, 1020000u);
  EXPECT_EQ(k.end_ns, 1023500u);
  EXPECT_EQ(k.correlation_id, 77u);
  EXPECT_EQ(trace.strings.Get(k.name), "gemm");
  EXPECT_EQ(p.streams[k.stream].stream, 7u);
  EXPECT_EQ(p.streams[k.stream].context, 1u);
  const LaunchConfigRecord& lc = p.launch_configs[k.launch_config];
  EXPECT_EQ(lc.grid[0], 4u);
  EXPECT_EQ(lc.grid[1], 2u);
  EXPECT_EQ(lc.block[0], 128u);
  EXPECT_EQ(lc.registers_per_thread, 64u);
  EXPECT_EQ(lc.static_shared_memory, 1024u);

  ASSERT_EQ(p.memcpys.size(), 1u);
  EXPECT_EQ(p.memcpys[0].copy_kind, 1u);  // HtoD
  EXPECT_EQ(p.memcpys[0].bytes, 4096u);
  ASSERT_EQ(p.memsets.size(), 1u);
  EXPECT_EQ(p.memsets[0].bytes, 64u);

  ASSERT_EQ(p.api_calls.size(), 2u);
  EXPECT_EQ(p.api_calls[0].start_ns, 1015125u);
  EXPECT_EQ(p.api_calls[0].cbid, 211u);
  EXPECT_EQ(p.api_calls[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(trace.strings.Get(p.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(p.api_calls[1].domain, ApiDomain::kDriver);
  EXPECT_EQ(p.threads[p.api_calls[1].thread].os_tid, 11u);
  EXPECT_EQ(trace.strings.Get(p.threads[p.api_calls[0].thread].name), "main thread");

  // step > aten::mm, and "overlapping" starts inside step but ends after.
  ASSERT_EQ(p.ranges.size(), 4u);
  std::map<std::string, const RangeRecord*> cpu;
  const RangeRecord* gpu = nullptr;
  for (const RangeRecord& r : p.ranges) {
    if (r.category == kKinetoCategoryGpuUserAnnotation) {
      gpu = &r;
    } else {
      cpu[std::string(trace.strings.Get(r.name))] = &r;
    }
  }
  ASSERT_EQ(cpu.size(), 3u);
  EXPECT_EQ(cpu["step"]->start_ns, 1000500u);
  EXPECT_EQ(cpu["step"]->category, kKinetoCategoryUserAnnotation);
  EXPECT_EQ(cpu["aten::mm"]->category, kKinetoCategoryCpuOp);
  EXPECT_EQ(cpu["aten::mm"]->end_ns, 1030250u);
  EXPECT_EQ(cpu["aten::mm"]->parent_id, cpu["step"]->id);
  EXPECT_EQ(cpu["overlapping"]->parent_id, cpu["step"]->id);
  EXPECT_EQ(p.counters.at("import_partially_overlapping_ranges"), 1u);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->domain, kKinetoGpuAnnotationDomain);
  EXPECT_EQ(trace.strings.Get(p.threads[gpu->thread].name), "GPU 0 stream 7");
  EXPECT_EQ(trace.strings.Get(p.domain_names.at(kKinetoGpuAnnotationDomain)),
            "gpu_user_annotation");

  EXPECT_EQ(p.counters.at("import_events_skipped_python_function"), 1u);
  EXPECT_EQ(p.counters.at("import_flow_events"), 2u);
}

TEST(KinetoImporterTest, PlainJson) {
  TempFile f(".json");
  WriteText(f.path(), kKinetoTrace);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportFile(f.path(), &trace, &error)) << error;
  CheckKinetoTrace(trace);
}

TEST(KinetoImporterTest, GzippedJson) {
  TempFile f(".json.gz");
  WriteGzip(f.path(), kKinetoTrace);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportFile(f.path(), &trace, &error)) << error;
  CheckKinetoTrace(trace);
}

TEST(KinetoImporterTest, MalformedJsonNamesTheByteOffset) {
  TempFile f(".json");
  WriteText(f.path(), R"({"traceEvents": [{"ph": "X", "ts": 1,, }]})");
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportKinetoJson(f.path(), &trace, &error));
  EXPECT_NE(error.find("malformed JSON at byte"), std::string::npos) << error;
  EXPECT_TRUE(trace.processes.empty());
}

TEST(KinetoImporterTest, JsonWithoutTraceEventsIsRejected) {
  TempFile f(".json");
  WriteText(f.path(), R"({"name": "not a trace", "values": [1, 2, 3]})");
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportKinetoJson(f.path(), &trace, &error));
  EXPECT_NE(error.find("no traceEvents"), std::string::npos) << error;
}

TEST(KinetoImporterTest, TruncatedGzipIsAnErrorNotACrash) {
  TempFile full(".json.gz");
  WriteGzip(full.path(), kKinetoTrace);
  std::ifstream in(full.path(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TempFile cut(".json.gz");
  WriteText(cut.path(), bytes.substr(0, bytes.size() / 2));
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportFile(cut.path(), &trace, &error));
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(trace.processes.empty());
}

// Runs the tokenizer on text delivered `chunk` bytes at a time (so tokens
// straddle block boundaries). Returns the events seen, -1 on error.
int TokenizeInChunks(const std::string& text, size_t chunk, std::string* error) {
  size_t pos = 0;
  int events = 0;
  KinetoTraceInfo info;
  const bool ok = TokenizeKinetoJson(
      [&](char* out, size_t size) {
        const size_t n = std::min({size, chunk, text.size() - pos});
        std::memcpy(out, text.data() + pos, n);
        pos += n;
        return n;
      },
      [&](const KinetoEvent&) { ++events; }, &info, error);
  return ok ? events : -1;
}

TEST(KinetoTokenizerTest, TinyBlocksGiveTheSameEvents) {
  const std::string text = kKinetoTrace;
  std::string error;
  const int whole = TokenizeInChunks(text, text.size(), &error);
  ASSERT_EQ(whole, 14) << error;
  for (size_t chunk : {1u, 2u, 3u, 7u, 64u}) {
    EXPECT_EQ(TokenizeInChunks(text, chunk, &error), whole) << "chunk " << chunk << ": " << error;
  }
}

TEST(KinetoTokenizerTest, NumbersPastInt64Saturate) {
  // Found by fuzz_kineto: a 35-digit tid with a fraction was converted from
  // a double out of int64's range (undefined; UBSan stops the test under
  // scripts/sanitizers.sh). Ids saturate, times too, NaN-free.
  const std::string text =
      R"([{"ph": "X", "cat": "cpu_op", "name": "a", "pid": -99999999999999999999999,)"
      R"( "tid": 27777777777777777777777777777777771.5, "ts": 1e300, "dur": 1},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 99999999999999999999999,)"
      R"( "tid": -1e300, "ts": 5, "dur": 99999999999999999999999}])";
  std::vector<KinetoEvent> events;
  KinetoTraceInfo info;
  std::string error;
  size_t pos = 0;
  ASSERT_TRUE(TokenizeKinetoJson(
      [&](char* out, size_t size) {
        const size_t n = std::min(size, text.size() - pos);
        std::memcpy(out, text.data() + pos, n);
        pos += n;
        return n;
      },
      [&](const KinetoEvent& e) { events.push_back(e); }, &info, &error))
      << error;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].pid, INT64_MIN);
  EXPECT_EQ(events[0].tid, INT64_MAX);
  EXPECT_EQ(events[0].ts_ns, static_cast<uint64_t>(INT64_MAX));
  EXPECT_EQ(events[1].pid, INT64_MAX);
  EXPECT_EQ(events[1].tid, INT64_MIN);
  EXPECT_EQ(events[1].ts_ns, 5000u);
}

TEST(KinetoTokenizerTest, EveryTruncationAndByteFlipFailsCleanly) {
  // Bad input never crashes: every prefix of a valid trace is an error (the
  // document is cut), and the trace with one byte replaced at any position
  // either parses or gives an error line.
  const std::string text = kKinetoTrace;
  for (size_t cut = 0; cut < text.size(); ++cut) {
    std::string error;
    EXPECT_EQ(TokenizeInChunks(text.substr(0, cut), 5, &error), -1) << cut;
    EXPECT_NE(error.find("at byte"), std::string::npos) << cut << ": " << error;
  }
  for (size_t at = 0; at < text.size(); ++at) {
    for (char c : {'"', '{', ']', '\\', '\0', 'u'}) {
      std::string bad = text;
      bad[at] = c;
      std::string error;
      if (TokenizeInChunks(bad, 5, &error) < 0) {
        EXPECT_FALSE(error.empty());
      }
    }
  }
}

// Issue 12 (9): `[1,2,3]` was imported as an empty trace without a word.
TEST(KinetoTokenizerTest, ArrayOfNonEventsIsNotATrace) {
  std::string error;
  EXPECT_EQ(TokenizeInChunks("[1,2,3]", 64, &error), -1);
  EXPECT_EQ(error, "not a Chrome trace: its events array holds 3 value(s) and no event object");
  EXPECT_EQ(TokenizeInChunks(R"({"traceEvents": ["a", [], null]})", 64, &error), -1);
  EXPECT_NE(error.find("3 value(s) and no event object"), std::string::npos) << error;
  // An empty trace stays an empty trace; stray values among events are skipped.
  EXPECT_EQ(TokenizeInChunks("[]", 64, &error), 0) << error;
  EXPECT_EQ(TokenizeInChunks(R"([1, {"ph": "i", "name": "m", "ts": 1}])", 64, &error), 1) << error;
  TempFile f(".json");
  WriteText(f.path(), "[1,2,3]\n");
  Trace trace;
  EXPECT_FALSE(ImportFile(f.path(), &trace, &error));
  EXPECT_NE(error.find(f.path() + ": not a Chrome trace"), std::string::npos) << error;
  EXPECT_TRUE(trace.processes.empty());
}

// Issue 12 (7): a 14 MB .json.gz holding a 3 GB string took 4.2 GB. A string
// past the limit stops the import with the limit named, having read little
// more than the limit.
TEST(KinetoTokenizerTest, HugeStringStopsAtTheLimitWithAClearError) {
  const std::string head = R"({"traceEvents": [{"ph": "X", "name": ")";
  const uint64_t total = 3ull << 30;  // a 3 GB name, produced on demand
  uint64_t pos = 0;
  KinetoTraceInfo info;
  std::string error;
  const bool ok = TokenizeKinetoJson(
      [&](char* out, size_t size) -> size_t {
        size_t n = 0;
        while (n < size && pos < total) {
          out[n++] = pos < head.size() ? head[pos] : 'a';
          ++pos;
        }
        return n;
      },
      [](const KinetoEvent&) {}, &info, &error);
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("a string longer than 16 MiB (the importer's limit"), std::string::npos)
      << error;
  EXPECT_LT(pos, 20ull << 20) << "read on past the limit";
}

TEST(KinetoImporterTest, TruncatedPlainFileIsAnError) {
  TempFile f(".json");
  const std::string text = kKinetoTrace;
  WriteText(f.path(), text.substr(0, text.size() / 3));
  Trace trace;
  std::string error;
  EXPECT_FALSE(ImportKinetoJson(f.path(), &trace, &error));
  EXPECT_NE(error.find("malformed JSON at byte"), std::string::npos) << error;
  EXPECT_TRUE(trace.processes.empty());
}

TEST(NsysImporterTest, CorruptDatabaseIsAnErrorNotACrash) {
  TempFile good(".sqlite");
  MakeDb(good.path(), std::string(kNsysSchema) +
                          "INSERT INTO StringIds VALUES (1,'k');"
                          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start,end,deviceId,contextId,"
                          "streamId,correlationId,globalPid,demangledName) VALUES "
                          "(1,2,0,1,7,1,16777216,1);");
  std::ifstream in(good.path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  TempFile bad(".sqlite");
  // Zero the second half of the file (the table pages), then cut it short.
  for (const std::string& damaged :
       {bytes.substr(0, bytes.size() / 2) + std::string(bytes.size() - bytes.size() / 2, '\0'),
        bytes.substr(0, 100)}) {
    WriteText(bad.path(), damaged);
    Trace trace;
    std::string error;
    if (!ImportFile(bad.path(), &trace, &error)) {
      EXPECT_FALSE(error.empty());
      EXPECT_TRUE(trace.processes.empty());
    }
  }
}

}  // namespace
}  // namespace tracer::analysis::importers
