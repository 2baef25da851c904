// The floor of `tracer report` on an nsys export: a bare program that opens
// the export and steps the rows of the columns the default report needs
// (StringIds, runtime calls, kernels, copies, sets, NVTX events), touching
// each value once and building nothing. real_export_bench.py times it beside
// the user's SQL and the report: no reader built on the sqlite3 library can
// be faster than this.
//
// With --import-columns, the rows of every column the whole-trace importer
// reads, to be faithful to the export (NVTX payload, category, color and end
// thread; kernel launch configuration and graph ids; runtime return value),
// most of them NULL in most exports: SQLite's cost per column read, NULL or
// not, is the floor of that import.
//
//   nsys_read_floor EXPORT.sqlite [--import-columns]
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <string_view>

namespace {

// Steps every row of sql, reading every column; a checksum keeps the reads.
int64_t StepAll(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  // A table the export lacks is no row to read.
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) return 0;
  const int columns = sqlite3_column_count(st);
  int64_t sum = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int i = 0; i < columns; ++i) {
      if (sqlite3_column_type(st, i) == SQLITE_TEXT) {
        sum += sqlite3_column_bytes(st, i);
      } else {
        sum += sqlite3_column_int64(st, i);
      }
    }
  }
  sqlite3_finalize(st);
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const bool import_columns = argc == 3 && std::string_view(argv[2]) == "--import-columns";
  if (argc != 2 && !import_columns) {
    std::fprintf(stderr, "usage: nsys_read_floor EXPORT.sqlite [--import-columns]\n");
    return 2;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::fprintf(stderr, "nsys_read_floor: cannot open %s\n", argv[1]);
    return 1;
  }
  // As the importer reads (sqlite_db.cc): pages through a mapping of the file.
  sqlite3_exec(db, "PRAGMA mmap_size = 1099511627776", nullptr, nullptr, nullptr);
  static const char* const kQueries[] = {
      "SELECT id, value FROM StringIds",
      "SELECT start, end, globalTid, correlationId, nameId, eventClass "
      "FROM CUPTI_ACTIVITY_KIND_RUNTIME",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName "
      "FROM CUPTI_ACTIVITY_KIND_KERNEL",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind "
      "FROM CUPTI_ACTIVITY_KIND_MEMCPY",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes "
      "FROM CUPTI_ACTIVITY_KIND_MEMSET",
      "SELECT start, end, eventType, globalTid, text, textId, domainId FROM NVTX_EVENTS",
  };
  static const char* const kImportQueries[] = {
      "SELECT id, value FROM StringIds",
      "SELECT start, end, globalTid, correlationId, nameId, eventClass, returnValue "
      "FROM CUPTI_ACTIVITY_KIND_RUNTIME",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
      "gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
      "registersPerThread, graphId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, "
      "copyKind, "
      "srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY",
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, value "
      "FROM CUPTI_ACTIVITY_KIND_MEMSET",
      "SELECT start, end, eventType, globalTid, text, textId, domainId, category, color, "
      "endGlobalTid, uint64Value, int64Value, doubleValue, uint32Value, int32Value, floatValue "
      "FROM NVTX_EVENTS",
  };
  int64_t sum = 0;
  if (import_columns) {
    for (const char* q : kImportQueries) sum += StepAll(db, q);
  } else {
    for (const char* q : kQueries) sum += StepAll(db, q);
  }
  sqlite3_close(db);
  std::printf("%lld\n", static_cast<long long>(sum));
  return 0;
}
