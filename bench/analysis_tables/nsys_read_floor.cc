// The floor of `tracer report` on an nsys export: a bare program that opens
// the export and steps the rows of the columns the default report needs
// (StringIds, runtime calls, kernels, copies, sets, NVTX events), touching
// each value once and building nothing. real_export_bench.py times it beside
// the user's SQL and the report: no reader built on the sqlite3 library can
// be faster than this.
//
//   nsys_read_floor EXPORT.sqlite
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>

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
  if (argc != 2) {
    std::fprintf(stderr, "usage: nsys_read_floor EXPORT.sqlite\n");
    return 2;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::fprintf(stderr, "nsys_read_floor: cannot open %s\n", argv[1]);
    return 1;
  }
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
  int64_t sum = 0;
  for (const char* q : kQueries) sum += StepAll(db, q);
  sqlite3_close(db);
  std::printf("%lld\n", static_cast<long long>(sum));
  return 0;
}
