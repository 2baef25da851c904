// What both nsys SQLite readers share (the whole-trace importer,
// nsys_sqlite_importer.h, and the bounded one, nsys_sqlite_stream.h): the
// schema checks, SELECTs by column name with optional columns, the StringIds
// table, NVTX text and payload and the API domain of a runtime row. Kept in
// one place so both read every schema variant the same way.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

class PrefetchedRows;
class SqliteFileMap;
struct ScanRead;

// NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE of schema 3.x; the
// 2020 exports use the same numbers, checked on public exports of both).
constexpr int64_t kNvtxCategory = 33;
constexpr int64_t kNvtxMark = 34;
constexpr int64_t kNvtxPushPopRange = 59;
constexpr int64_t kNvtxStartEndRange = 60;
constexpr int64_t kNvtxDomainCreate = 75;

// Result-column indexes of the columns every CUPTI_ACTIVITY_KIND_* query
// selects, looked up by name once per statement.
struct ActivityColumns {
  // Statement: SqliteStatement or anything with its Column (PrefetchedRows).
  template <typename Statement>
  explicit ActivityColumns(const Statement& st)
      : start(st.Column("start")),
        end(st.Column("end")),
        device(st.Column("deviceId")),
        context(st.Column("contextId")),
        stream(st.Column("streamId")),
        correlation(st.Column("correlationId")),
        pid(st.Column("globalPid")) {}
  int start, end, device, context, stream, correlation, pid;
};

// Result-column indexes of an NVTX_EVENTS query (NvtxColumnNames).
struct NvtxColumns {
  // Statement: SqliteStatement or anything with its Column (PrefetchedRows).
  template <typename Statement>
  explicit NvtxColumns(const Statement& st)
      : start(st.Column("start")),
        end(st.Column("end")),
        type(st.Column("eventType")),
        tid(st.Column("globalTid")),
        text(st.Column("text")),
        text_id(st.Column("textId")),
        domain(st.Column("domainId")),
        category(st.Column("category")),
        color(st.Column("color")),
        end_tid(st.Column("endGlobalTid")),
        u64(st.Column("uint64Value")),
        i64(st.Column("int64Value")),
        f64(st.Column("doubleValue")),
        u32(st.Column("uint32Value")),
        i32(st.Column("int32Value")),
        f32(st.Column("floatValue")) {}
  int start, end, type, tid, text, text_id, domain, category, color, end_tid;
  int u64, i64, f64, u32, i32, f32;  // payload columns, the first non-NULL wins
};

// The optional NVTX_EVENTS columns an NvtxColumns query selects.
const std::vector<std::string_view>& NvtxOptionalColumns();

// The payload of an NVTX row: the first non-NULL payload column.
// Statement: SqliteStatement, or PrefetchedRows with the payload columns'
// NULLs tracked and doubleValue / floatValue read as Double.
template <typename Statement>
void ReadNvtxPayload(const Statement& st, const NvtxColumns& c, PayloadValue* out) {
  if (!st.IsNull(c.u64)) {
    out->type = PayloadValue::Type::kU64;
    out->u64 = static_cast<uint64_t>(st.Int(c.u64));
  } else if (!st.IsNull(c.i64)) {
    out->type = PayloadValue::Type::kI64;
    out->i64 = st.Int(c.i64);
  } else if (!st.IsNull(c.f64)) {
    out->type = PayloadValue::Type::kF64;
    out->f64 = st.Double(c.f64);
  } else if (!st.IsNull(c.u32)) {
    out->type = PayloadValue::Type::kU64;
    out->u64 = static_cast<uint64_t>(st.Int(c.u32));
  } else if (!st.IsNull(c.i32)) {
    out->type = PayloadValue::Type::kI64;
    out->i64 = st.Int(c.i32);
  } else if (!st.IsNull(c.f32)) {
    out->type = PayloadValue::Type::kF64;
    out->f64 = st.Double(c.f32);
  }
}

class NsysSchema {
 public:
  explicit NsysSchema(StringTable* strings) : strings_(strings) {}

  // Opens the export, loads StringIds and checks it has at least one table
  // of activity or NVTX; false with a one-line *error otherwise.
  bool OpenExport(const std::string& path, std::string* error);

  // Column expression: the quoted column, or NULL under the column's name
  // when the table lacks it (rows are read by column name).
  std::string Optional(std::string_view table, std::string_view column);
  // SELECT of the columns, each named by an AS clause (SQLite leaves the
  // result-column name of a bare column unspecified), then the optional
  // ones (NULL where the table lacks them), FROM table.
  std::string Select(std::string_view table, const std::vector<std::string_view>& columns,
                     const std::vector<std::string_view>& optional = {});
  // Checks that table has every column; sets *error naming the first missing.
  bool Require(std::string_view table, std::initializer_list<std::string_view> columns,
               std::string* error);
  bool Query(const std::string& sql, SqliteStatement* st, std::string* error);
  // The export mapped for reading its tables straight from the file
  // (sqlite_table_scan.h) under a read transaction held on this connection
  // until it closes (SQLite's shared lock keeps any writer from changing the
  // pages under the mapping); nullptr when the file is not one the scan
  // reads (then everything is read through SQL).
  std::shared_ptr<const SqliteFileMap> MapForScan();
  // Starts *rows reading table from read.file as read.sql would read its
  // result columns (read.names: the table's own, or those it lacks, which
  // read as NULL); read's other fields as PrefetchedRows::StartScan takes
  // them (the rest after a give-up through read.sql on read.db, ...). Fills
  // in the plan and the path. False, nothing started, when there is no file
  // or the table is not one the scan reads (the caller reads it through
  // SQL).
  bool StartScanOf(std::string_view table, ScanRead read, PrefetchedRows* rows);
  bool Finish(const SqliteStatement& st, std::string_view table, std::string* error);

  // Global string id of a StringIds id.
  uint32_t String(int64_t nsys_id);
  // The message of an NVTX_EVENTS row: inline text, else a StringIds id.
  // Statement: SqliteStatement, or PrefetchedRows with text / textId NULLs
  // tracked and text read as Text.
  template <typename Statement>
  uint32_t NvtxText(const Statement& st, const NvtxColumns& c) {
    if (!st.IsNull(c.text)) return strings_->Intern(st.Text(c.text));
    if (!st.IsNull(c.text_id)) return String(st.Int(c.text_id));
    return 0;
  }
  // Runtime or driver: eventClass when the export has it, else by name.
  ApiDomain ApiDomainOf(const SqliteStatement& st, int event_class_col, uint32_t name);
  // The same from the column's value (has_class: it is not NULL).
  ApiDomain ApiDomainOf(bool has_class, int64_t event_class, uint32_t name);

  SqliteDb& db() { return db_; }

  // What an export says of a process's place in a job, for its header:
  // the host (TARGET_INFO_SYSTEM_ENV Hostname) and the CUDA device index
  // every GPU activity of the process ran on (when one). An export carries
  // no rank, world size or local rank (the launcher's children's
  // environment is not recorded): those stay unknown.
  struct TargetInfo {
    std::string host;
    std::map<uint32_t, int64_t> device_by_pid;  // -1: several devices
  };
  // scan_devices false: the host only (the caller notes the devices while
  // it reads the rows, NoteDevice).
  TargetInfo ReadTargetInfo(bool scan_devices = true);
  // Counts one GPU activity row of process pid on device into info.
  static void NoteDevice(uint32_t pid, int64_t device, TargetInfo* info) {
    auto [it, added] = info->device_by_pid.emplace(pid, device);
    if (!added && it->second != device) it->second = -1;
  }
  static void FillHeader(const TargetInfo& info, uint32_t pid, HeaderInfo* header);

 protected:
  bool LoadStrings(std::string* error);

  SqliteDb db_;
  StringTable* strings_;
  std::vector<std::string> nsys_strings_;
  std::vector<uint32_t> interned_;
  std::unordered_map<int64_t, uint32_t> sparse_strings_;  // nsys id -> global id
  // The last sparse ids looked up, by their low bits: a runtime or kernel
  // table names a few functions and kernels over and over.
  struct CachedString {
    int64_t id = 0;
    uint32_t global = UINT32_MAX;  // none
  };
  CachedString sparse_cache_[64];
};

}  // namespace tracer::analysis::importers
