#include "libtracer/analysis/importers/nsys_sqlite_importer.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/nsys_global_id.h"
#include "libtracer/analysis/importers/nsys_memory_usage.h"
#include "libtracer/analysis/importers/nsys_schema.h"
#include "libtracer/analysis/importers/prefetched_rows.h"
#include "libtracer/analysis/importers/process_builder.h"
#include "libtracer/analysis/importers/range_nesting.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"

namespace tracer::analysis::importers {
namespace {

struct ProcessState {
  explicit ProcessState(uint32_t pid) : builder(&process) { process.header.pid = pid; }
  ProcessTrace process;
  ProcessBuilder builder;
};

class NsysImporter : public NsysSchema {
 public:
  NsysImporter(Trace* trace, bool report_only, NsysRowReader reader)
      : NsysSchema(&trace->strings), trace_(trace), report_only_(report_only), reader_(reader) {}

  bool Run(const std::string& path, std::string* error);

 private:
  ProcessState& Process(uint32_t pid);
  ProcessState& ProcessOf(const PrefetchedRows& st, int col, std::string_view counter);
  void Note(uint64_t t) { max_time_ = std::max(max_time_, t); }
  uint64_t Time(const PrefetchedRows& st, int col);

  // Starts reading every table the import reads (StartTable), before any
  // is imported.
  void StartAll();
  // Maps the export for reading its tables directly (file_), unless
  // reader_ says SQL or the file is not one TableScan reads.
  void MapFile();
  // Tables of at most this many rows are read on this thread (ReadNow).
  static constexpr int64_t kReadNowRows = 2048;
  // An upper bound of table's row count (INT64_MAX when unknown).
  int64_t RowsAtMost(std::string_view table);
  // Starts reading the rows of one table on a thread and connection of its
  // own (PrefetchedRows, the whole table read ahead) when the export has it
  // and every required column: SQLite's stepping and decoding, most of an
  // import, then runs beside this thread's work on the tables before it.
  // The table's import repeats the schema check, so the first error met is
  // the one reported, as when the tables were read one after another.
  // optional: selected as NULL where the table lacks them; nulls: the
  // columns asked IsNull of; texts / doubles: those read as Text / Double.
  void StartTable(std::string_view table, const std::vector<std::string_view>& required,
                  const std::vector<std::string_view>& optional,
                  const std::vector<std::string_view>& nulls,
                  const std::vector<std::string_view>& texts = {},
                  const std::vector<std::string_view>& doubles = {});
  // The started reader of table; nullptr with *error when the export could
  // not be opened again or the SELECT failed to prepare.
  PrefetchedRows* Rows(std::string_view table, std::string* error);
  bool FinishRows(const PrefetchedRows& st, std::string_view table, std::string* error);

  // Imports every row of a CUPTI_ACTIVITY_KIND_* table, when the export has
  // it. Each row holds start, end, deviceId, contextId, streamId,
  // correlationId, globalPid (ActivityColumns), the required columns and the
  // optional ones of StartAll (NULL where the table lacks them). bind(st)
  // looks up the table's own columns once; row(st, columns, process)
  // appends the record. gpu: the rows ran on a device, which the
  // process's header names (NoteDevice).
  template <typename BindFn, typename RowFn>
  bool ImportActivity(std::string_view table, std::initializer_list<std::string_view> required,
                      bool gpu, std::string_view counter, std::string* error, BindFn bind,
                      RowFn row);
  // Fills start_ns, end_ns and correlation_id from an ImportActivity row.
  template <typename Record>
  void ActivityFields(const PrefetchedRows& st, const ActivityColumns& c, Record* r);
  // The stream of an ImportActivity row (deviceId, contextId, streamId).
  uint32_t ActivityStream(const PrefetchedRows& st, const ActivityColumns& c, ProcessState& p);

  bool ImportKernels(std::string* error);
  bool ImportRuntime(std::string* error);
  bool ImportMemcpy(std::string* error);
  bool ImportMemset(std::string* error);
  bool ImportSync(std::string* error);
  bool ImportNvtx(std::string* error);
  RangeRecord NvtxRange(const PrefetchedRows& st, const NvtxColumns& c, int64_t type,
                        ProcessState& p);
  void ImportMemoryUsage();
  void ImportThreadNames();
  void ImportProcessNames();
  void ImportSessionStart();
  void Finalize();

  Trace* trace_;
  // Leaves out the columns no report reads (ImportFile): NVTX category,
  // color, end thread and payload, kernel launch configuration.
  bool report_only_;
  NsysRowReader reader_;
  // The database's size in bytes (pages x page size), once RowsAtMost asked;
  // -1 before.
  int64_t database_bytes_ = -1;
  // The export mapped (MapFile); nullptr: every table is read through SQL.
  std::shared_ptr<const SqliteFileMap> file_;
  std::map<uint32_t, std::unique_ptr<ProcessState>> processes_;
  uint64_t max_time_ = 0;
  uint64_t records_ = 0;
  std::map<std::string, std::unique_ptr<PrefetchedRows>, std::less<>> started_;
  // The devices of each process, noted while the GPU activity rows are read
  // (ReadTargetInfo would read them again).
  TargetInfo target_;
};

ProcessState& NsysImporter::Process(uint32_t pid) {
  auto& p = processes_[pid];
  if (!p) p = std::make_unique<ProcessState>(pid);
  return *p;
}

ProcessState& NsysImporter::ProcessOf(const PrefetchedRows& st, int col, std::string_view counter) {
  if (st.IsNull(col)) {
    // No process column value: keep the record in the only process when
    // there is one, else in pid 0; counted either way.
    ProcessState& p = processes_.size() == 1 ? *processes_.begin()->second : Process(0);
    ++p.process.counters[std::string(counter)];
    return p;
  }
  return Process(NsysPid(st.Int(col)));
}

uint64_t NsysImporter::Time(const PrefetchedRows& st, int col) {
  const int64_t v = st.Int(col);
  const uint64_t t = v < 0 ? 0 : static_cast<uint64_t>(v);
  Note(t);
  return t;
}

constexpr std::string_view kActivityColumns[] = {
    "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"};

void NsysImporter::StartTable(std::string_view table, const std::vector<std::string_view>& required,
                              const std::vector<std::string_view>& optional,
                              const std::vector<std::string_view>& nulls,
                              const std::vector<std::string_view>& texts,
                              const std::vector<std::string_view>& doubles) {
  if (!db_.HasTable(table)) return;
  for (std::string_view c : required) {
    if (!db_.HasColumn(table, c)) return;  // the table's import says which
  }
  auto& rows = started_[std::string(table)];
  rows = std::make_unique<PrefetchedRows>();
  const std::string sql = Select(table, required, optional);
  // The result columns of sql, in its order.
  std::vector<std::string_view> names(required);
  names.insert(names.end(), optional.begin(), optional.end());
  // Read as the import steps: decoding a record straight from the mapping
  // costs less than handing it to a thread (blocks of copies, their page
  // faults, the hand-over), 2.5x less CPU in all on the name-heavy
  // h100_2gpu_mfu.sqlite.
  ScanRead read;
  read.file = file_;
  read.names = names;
  read.sql = sql;
  read.db = &db_;
  read.nulls = nulls;
  read.texts = texts;
  read.doubles = doubles;
  if (StartScanOf(table, std::move(read), rows.get())) return;
  if (RowsAtMost(table) <= kReadNowRows) {
    // Read here, through this connection: a thread's connection would parse
    // the whole schema again (~0.3 ms) to step a few hundred rows.
    rows->ReadNow(&db_, sql, nulls, texts, doubles);
    return;
  }
  // max_queued 0: the whole table is read ahead while this thread imports
  // the tables before it.
  rows->StartOpen(db_.path(), sql, 0, nulls, texts, doubles);
}

int64_t NsysImporter::RowsAtMost(std::string_view table) {
  // nsys writes rowids 1..n: the largest is the row count, or more after
  // deletions. One seek to the last leaf, no scan (a query of max(rowid)
  // alone: anything beside it in the SELECT makes SQLite scan the table).
  // A rowid is any 64-bit number, though (a damaged or hand-made export can
  // hold row 2^40), and callers size allocations from this: it is also
  // bounded by what the database's pages can hold, a row taking at least
  // kMinRowBytes of them (its cell pointer, payload and rowid varints, a
  // record header byte).
  constexpr int64_t kMinRowBytes = 4;
  SqliteStatement st;
  std::string ignored;
  if (!Query("SELECT max(rowid) FROM \"" + std::string(table) + "\"", &st, &ignored) ||
      !st.Step() || st.IsNull(0)) {
    return st.valid() && st.ok() ? 0 : std::numeric_limits<int64_t>::max();
  }
  const int64_t max_rowid = st.Int(0);
  if (database_bytes_ < 0) {
    SqliteStatement size;
    database_bytes_ =
        Query("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()", &size,
              &ignored) &&
                size.Step() && !size.IsNull(0)
            ? size.Int(0)
            : std::numeric_limits<int64_t>::max();
  }
  return std::min(max_rowid, database_bytes_ / kMinRowBytes);
}

void NsysImporter::MapFile() {
  if (reader_ == NsysRowReader::kDirect) file_ = MapForScan();
}

void NsysImporter::StartAll() {
  MapFile();
  auto activity = [](std::initializer_list<std::string_view> required) {
    std::vector<std::string_view> columns(std::begin(kActivityColumns), std::end(kActivityColumns));
    columns.insert(columns.end(), required.begin(), required.end());
    return columns;
  };
  // NVTX_EVENTS first: the longest read of a name-heavy export.
  if (report_only_ &&
      (db_.HasColumn("NVTX_EVENTS", "text") || db_.HasColumn("NVTX_EVENTS", "textId"))) {
    // Most of NVTX_EVENTS' columns, NULL in most exports, cost SQLite as
    // much to read as values: 8 of 16 were a third of the table's reading.
    // endGlobalTid stays: its threads are numbered as they are met.
    StartTable("NVTX_EVENTS", {"start", "end", "eventType", "globalTid"},
               {"text", "textId", "domainId", "endGlobalTid"},
               {"end", "globalTid", "endGlobalTid", "text", "textId"}, {"text"});
  } else if (db_.HasColumn("NVTX_EVENTS", "text") || db_.HasColumn("NVTX_EVENTS", "textId")) {
    StartTable("NVTX_EVENTS", {"start", "end", "eventType", "globalTid"}, NvtxOptionalColumns(),
               // What NvtxRange, NvtxText, ReadNvtxPayload and ProcessOf ask.
               {"end", "globalTid", "endGlobalTid", "text", "textId", "uint64Value", "int64Value",
                "doubleValue", "uint32Value", "int32Value", "floatValue"},
               {"text"}, {"doubleValue", "floatValue"});
  }
  StartTable("CUPTI_ACTIVITY_KIND_RUNTIME",
             {"start", "end", "globalTid", "correlationId", "nameId"},
             {"eventClass", "returnValue"}, {"globalTid", "eventClass"});
  if (report_only_) {
    StartTable("CUPTI_ACTIVITY_KIND_KERNEL", activity({"demangledName"}),
               {"graphId", "graphNodeId"}, {"globalPid", "deviceId"});
  } else {
    StartTable("CUPTI_ACTIVITY_KIND_KERNEL", activity({"demangledName"}),
               {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
                "dynamicSharedMemory", "registersPerThread", "graphId", "graphNodeId"},
               {"globalPid", "deviceId", "gridX"});
  }
  StartTable("CUPTI_ACTIVITY_KIND_MEMCPY", activity({"bytes", "copyKind"}), {"srcKind", "dstKind"},
             {"globalPid", "deviceId"});
  StartTable("CUPTI_ACTIVITY_KIND_MEMSET", activity({"bytes"}), {"value"},
             {"globalPid", "deviceId"});
  StartTable("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", activity({"syncType"}), {"eventId"},
             {"globalPid"});
}

PrefetchedRows* NsysImporter::Rows(std::string_view table, std::string* error) {
  auto it = started_.find(table);
  if (it == started_.end()) {
    // StartAll checked what the import checks; not reached.
    *error = db_.path() + ": table " + std::string(table) + " was not read";
    return nullptr;
  }
  return it->second->WaitOpened(error) ? it->second.get() : nullptr;
}

bool NsysImporter::FinishRows(const PrefetchedRows& st, std::string_view table,
                              std::string* error) {
  if (st.ok()) return true;
  *error = db_.path() + ": error reading table " + std::string(table) + ": " + st.error();
  return false;
}

template <typename BindFn, typename RowFn>
bool NsysImporter::ImportActivity(std::string_view table,
                                  std::initializer_list<std::string_view> required, bool gpu,
                                  std::string_view counter, std::string* error, BindFn bind,
                                  RowFn row) {
  if (!db_.HasTable(table)) return true;
  if (!Require(table,
               {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"},
               error) ||
      !Require(table, required, error)) {
    return false;
  }
  PrefetchedRows* rows = Rows(table, error);
  if (rows == nullptr) return false;
  const PrefetchedRows& st = *rows;
  const ActivityColumns common(st);
  const auto columns = bind(st);
  int64_t last_pid = 0, last_device = 0;
  bool noted = false;
  while (rows->Step()) {
    row(st, common, columns, ProcessOf(st, common.pid, counter));
    ++records_;
    if (gpu && !st.IsNull(common.pid) && !st.IsNull(common.device)) {
      const int64_t pid = st.Int(common.pid), device = st.Int(common.device);
      if (!noted || pid != last_pid || device != last_device) {
        NoteDevice(NsysPid(pid), device, &target_);
        last_pid = pid;
        last_device = device;
        noted = true;
      }
    }
  }
  return FinishRows(st, table, error);
}

template <typename Record>
void NsysImporter::ActivityFields(const PrefetchedRows& st, const ActivityColumns& c, Record* r) {
  r->start_ns = Time(st, c.start);
  r->end_ns = Time(st, c.end);
  r->correlation_id = static_cast<uint64_t>(st.Int(c.correlation));
}

uint32_t NsysImporter::ActivityStream(const PrefetchedRows& st, const ActivityColumns& c,
                                      ProcessState& p) {
  return p.builder.Stream(static_cast<uint32_t>(st.Int(c.device)),
                          static_cast<uint32_t>(st.Int(c.context)),
                          static_cast<uint64_t>(st.Int(c.stream)));
}

bool NsysImporter::ImportKernels(std::string* error) {
  struct Columns {
    int name, grid[3], block[3], static_shared, dynamic_shared, registers, graph, graph_node;
  };
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_KERNEL", {"demangledName"}, true, "import_kernels_without_pid", error,
      [](const PrefetchedRows& st) {
        return Columns{st.Column("demangledName"),
                       {st.Column("gridX"), st.Column("gridY"), st.Column("gridZ")},
                       {st.Column("blockX"), st.Column("blockY"), st.Column("blockZ")},
                       st.Column("staticSharedMemory"),
                       st.Column("dynamicSharedMemory"),
                       st.Column("registersPerThread"),
                       st.Column("graphId"),
                       st.Column("graphNodeId")};
      },
      [&](const PrefetchedRows& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
        KernelRecord k;
        ActivityFields(st, a, &k);
        k.stream = ActivityStream(st, a, p);
        k.name = String(st.Int(c.name));
        if (c.grid[0] >= 0 && !st.IsNull(c.grid[0])) {  // not read: report_only_
          LaunchConfigRecord lc;
          for (int i = 0; i < 3; ++i) {
            lc.grid[i] = static_cast<uint32_t>(st.Int(c.grid[i]));
            lc.block[i] = static_cast<uint32_t>(st.Int(c.block[i]));
          }
          lc.static_shared_memory = static_cast<uint32_t>(st.Int(c.static_shared));
          lc.dynamic_shared_memory = static_cast<uint32_t>(st.Int(c.dynamic_shared));
          lc.registers_per_thread = static_cast<uint32_t>(st.Int(c.registers));
          k.launch_config = p.builder.LaunchConfig(lc);
        }
        k.graph_id = static_cast<uint64_t>(st.Int(c.graph));
        k.graph_node_id = static_cast<uint64_t>(st.Int(c.graph_node));
        p.process.kernels.push_back(k);
      });
}

bool NsysImporter::ImportRuntime(std::string* error) {
  const char* t = "CUPTI_ACTIVITY_KIND_RUNTIME";
  if (!db_.HasTable(t)) return true;
  if (!Require(t, {"start", "end", "globalTid", "correlationId", "nameId"}, error)) return false;
  PrefetchedRows* rows = Rows(t, error);
  if (rows == nullptr) return false;
  PrefetchedRows& st = *rows;
  const int start = st.Column("start"), end = st.Column("end"), tid = st.Column("globalTid"),
            correlation = st.Column("correlationId"), name = st.Column("nameId"),
            event_class = st.Column("eventClass"), return_value = st.Column("returnValue");
  // A process's calls in one allocation, not a doubling series (its copies,
  // and memory touched once more): the first process sized for every row,
  // a later one for an even share (an export holds one or a few).
  const int64_t row_count = RowsAtMost(t);
  const size_t rows_hint = row_count > 0 && row_count != std::numeric_limits<int64_t>::max()
                               ? static_cast<size_t>(row_count)
                               : 0;
  while (st.Step()) {
    ProcessState& p = ProcessOf(st, tid, "import_api_calls_without_tid");
    if (p.process.api_calls.capacity() == 0 && rows_hint != 0) {
      p.process.api_calls.reserve(rows_hint / std::max<size_t>(1, processes_.size()));
    }
    ApiRecord a;
    a.start_ns = Time(st, start);
    a.end_ns = Time(st, end);
    a.thread = st.IsNull(tid) ? 0 : p.builder.Thread(NsysTid(st.Int(tid)));
    a.correlation_id = static_cast<uint64_t>(st.Int(correlation));
    a.name = String(st.Int(name));
    a.domain = ApiDomainOf(!st.IsNull(event_class), st.Int(event_class), a.name);
    a.return_value = static_cast<uint32_t>(st.Int(return_value));
    p.process.api_calls.push_back(a);
    ++records_;
  }
  return FinishRows(st, t, error);
}

bool NsysImporter::ImportMemcpy(std::string* error) {
  struct Columns {
    int bytes, copy_kind, src_kind, dst_kind;
  };
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_MEMCPY", {"bytes", "copyKind"}, true, "import_memcpys_without_pid",
      error,
      [](const PrefetchedRows& st) {
        return Columns{st.Column("bytes"), st.Column("copyKind"), st.Column("srcKind"),
                       st.Column("dstKind")};
      },
      [&](const PrefetchedRows& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
        MemcpyRecord m;
        ActivityFields(st, a, &m);
        m.stream = ActivityStream(st, a, p);
        m.bytes = static_cast<uint64_t>(st.Int(c.bytes));
        // ENUM_CUDA_MEMCPY_OPER 0..10 are CUPTI's memcpy kinds, the same
        // numbers as proto CopyKind; the unified-memory kinds (11..13) have
        // no counterpart.
        const int64_t kind = st.Int(c.copy_kind);
        m.copy_kind = kind >= 0 && kind <= 10 ? static_cast<uint32_t>(kind) : 0;
        m.flags = (static_cast<uint32_t>(st.Int(c.src_kind) & 0xFF) << 8) |
                  (static_cast<uint32_t>(st.Int(c.dst_kind) & 0xFF) << 16);
        p.process.memcpys.push_back(m);
      });
}

bool NsysImporter::ImportMemset(std::string* error) {
  struct Columns {
    int bytes, value;
  };
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_MEMSET", {"bytes"}, true, "import_memsets_without_pid", error,
      [](const PrefetchedRows& st) {
        return Columns{st.Column("bytes"), st.Column("value")};
      },
      [&](const PrefetchedRows& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
        MemsetRecord m;
        ActivityFields(st, a, &m);
        m.stream = ActivityStream(st, a, p);
        m.bytes = static_cast<uint64_t>(st.Int(c.bytes));
        m.value = static_cast<uint32_t>(st.Int(c.value));
        p.process.memsets.push_back(m);
      });
}

bool NsysImporter::ImportSync(std::string* error) {
  struct Columns {
    int type, event;
  };
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"syncType"}, false, "import_syncs_without_pid", error,
      [](const PrefetchedRows& st) {
        return Columns{st.Column("syncType"), st.Column("eventId")};
      },
      [&](const PrefetchedRows& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
        SyncRecord s;
        ActivityFields(st, a, &s);
        // nsys writes streamId -1 / 0 for context- and device-wide syncs (no
        // stream); only real streams get a StreamDef.
        s.stream = st.Int(a.stream) > 0 ? ActivityStream(st, a, p) : 0;
        s.context = static_cast<uint32_t>(st.Int(a.context));
        s.type = static_cast<uint32_t>(st.Int(c.type));
        s.event = static_cast<uint32_t>(st.Int(c.event));
        p.process.syncs.push_back(s);
      });
}

RangeRecord NsysImporter::NvtxRange(const PrefetchedRows& st, const NvtxColumns& c, int64_t type,
                                    ProcessState& p) {
  RangeRecord r;
  r.kind = type == kNvtxPushPopRange ? RangeKind::kPushPop : RangeKind::kStartEnd;
  r.start_ns = Time(st, c.start);
  if (st.IsNull(c.end)) {
    r.flags |= kRangeFlagUnclosed;  // end filled in by Finalize()
  } else {
    r.end_ns = Time(st, c.end);
  }
  r.thread = st.IsNull(c.tid) ? 0 : p.builder.Thread(NsysTid(st.Int(c.tid)));
  r.end_thread = st.IsNull(c.end_tid) ? 0 : p.builder.Thread(NsysTid(st.Int(c.end_tid)));
  // A report's import appends range texts unindexed: emit_nvtx names are
  // nearly all distinct (a per-call suffix), and hashing and probing each
  // one in the string index was a tenth of the report. NormalizeRangeNames,
  // run before any table reads a name, gives equal names one id.
  r.name = report_only_ && !st.IsNull(c.text) ? trace_->strings.Append(st.Text(c.text))
                                              : NvtxText(st, c);
  r.domain = static_cast<uint32_t>(st.Int(c.domain));
  if (report_only_) return r;
  r.category = static_cast<uint32_t>(st.Int(c.category));
  r.color = static_cast<uint32_t>(st.Int(c.color));
  ReadNvtxPayload(st, c, &r.payload);
  return r;
}

bool NsysImporter::ImportNvtx(std::string* error) {
  const char* t = "NVTX_EVENTS";
  if (!db_.HasTable(t)) return true;
  if (!Require(t, {"start", "end", "eventType", "globalTid"}, error)) return false;
  if (!db_.HasColumn(t, "text") && !db_.HasColumn(t, "textId")) {
    *error = db_.path() + ": not an nsys export: table NVTX_EVENTS has neither column 'text' " +
             "nor 'textId'";
    return false;
  }
  PrefetchedRows* rows = Rows(t, error);
  if (rows == nullptr) return false;
  PrefetchedRows& st = *rows;
  const NvtxColumns c(st);
  const int64_t row_count = RowsAtMost(t);
  const bool counted = row_count != std::numeric_limits<int64_t>::max() && row_count > 0;
  if (counted && !processes_.empty()) {
    // Most NVTX rows are ranges, about evenly spread over the processes
    // that ran work: one allocation each instead of a doubling series (its
    // copies and the page faults of memory touched once). A process with
    // more grows as before.
    const size_t each = static_cast<size_t>(row_count) / processes_.size();
    for (auto& [pid, state] : processes_) state->process.ranges.reserve(each + each / 8);
  }
  if (counted && db_.HasColumn(t, "text")) {
    // Inline texts: with per-call names (emit_nvtx) nearly every row is a
    // new string, so the string index is sized once instead of rehashed at
    // each doubling. Capped: an export of many rows and few names spends
    // at most about 2 MiB (slots and views) on the hint.
    constexpr size_t kMaxHint = size_t{1} << 16;
    const size_t hint = trace_->strings.size() + std::min(static_cast<size_t>(row_count), kMaxHint);
    // A report's import appends the range texts without indexing them.
    if (report_only_) {
      trace_->strings.ReserveIds(hint);
    } else {
      trace_->strings.Reserve(hint);
    }
  }
  while (st.Step()) {
    const int64_t type = st.Int(c.type);
    ProcessState& p = ProcessOf(st, c.tid, "import_nvtx_without_tid");
    const uint32_t domain = static_cast<uint32_t>(st.Int(c.domain));
    switch (type) {
      case kNvtxPushPopRange:
      case kNvtxStartEndRange:
        p.process.ranges.push_back(NvtxRange(st, c, type, p));
        ++records_;
        break;
      case kNvtxMark: {
        MarkRecord m;
        m.time_ns = Time(st, c.start);
        m.thread = st.IsNull(c.tid) ? 0 : p.builder.Thread(NsysTid(st.Int(c.tid)));
        m.name = NvtxText(st, c);
        m.domain = domain;
        if (!report_only_) {
          m.category = static_cast<uint32_t>(st.Int(c.category));
          m.color = static_cast<uint32_t>(st.Int(c.color));
        }
        p.process.marks.push_back(m);
        ++records_;
        break;
      }
      case kNvtxDomainCreate:
        if (domain != 0) p.process.domain_names[domain] = NvtxText(st, c);
        break;
      case kNvtxCategory:
        if (report_only_) break;  // categories are not read
        p.process.category_names[{domain, static_cast<uint32_t>(st.Int(c.category))}] =
            NvtxText(st, c);
        break;
      default:
        // Domain destroy (76) and non-NVTX event types carry nothing the
        // model holds.
        ++p.process.counters["import_nvtx_events_skipped"];
        break;
    }
  }
  if (!FinishRows(st, t, error)) return false;
  // 2020 exports also list domains in DomainStrings (id, domainName), without
  // a process: a fallback for domains whose create event was not captured.
  if (db_.HasColumn("DomainStrings", "id") && db_.HasColumn("DomainStrings", "domainName")) {
    SqliteStatement ds;
    if (Query(Select("DomainStrings", {"id", "domainName"}), &ds, error)) {
      const int id_col = ds.Column("id"), name_col = ds.Column("domainName");
      while (ds.Step()) {
        const uint32_t id = static_cast<uint32_t>(ds.Int(id_col));
        if (id == 0) continue;
        const uint32_t name = trace_->strings.Intern(ds.Text(name_col));
        for (auto& [pid, p] : processes_) p->process.domain_names.emplace(id, name);
      }
    }
  }
  return true;
}

void NsysImporter::ImportMemoryUsage() {
  NsysMemoryUsage usage = ReadNsysMemoryUsage(this);
  for (auto& [pid, samples] : usage.samples) {
    Process(pid).process.memory_usage = std::move(samples);
  }
  for (const auto& [pid, counters] : usage.counters) {
    ProcessTrace& p = Process(pid).process;
    for (const auto& [name, n] : counters) p.counters[name] += n;
  }
  if (usage.rows_without_pid != 0) {
    // As ProcessOf: counted in the only process when there is one.
    if (processes_.size() == 1) {
      processes_.begin()->second->process.counters["import_memory_events_skipped_no_pid"] +=
          usage.rows_without_pid;
    } else {
      trace_->warnings.push_back(db_.path() + ": " + std::to_string(usage.rows_without_pid) +
                                 " rows of CUDA_GPU_MEMORY_USAGE_EVENTS without globalPid "
                                 "skipped");
    }
  }
  if (!usage.warning.empty()) trace_->warnings.push_back(usage.warning);
}

void NsysImporter::ImportThreadNames() {
  if (!db_.HasColumn("ThreadNames", "nameId") || !db_.HasColumn("ThreadNames", "globalTid")) {
    return;
  }
  std::string error;
  SqliteStatement st;
  if (!Query(Select("ThreadNames", {"nameId", "globalTid"}), &st, &error)) return;
  const int name = st.Column("nameId"), tid = st.Column("globalTid");
  while (st.Step()) {
    if (st.IsNull(tid)) continue;
    auto it = processes_.find(NsysPid(st.Int(tid)));
    if (it == processes_.end()) continue;  // a process that left no record
    it->second->builder.NameThread(NsysTid(st.Int(tid)), String(st.Int(name)));
  }
}

void NsysImporter::ImportProcessNames() {
  // Schema 3.x only; the 2020 exports have no PROCESSES table.
  if (!db_.HasColumn("PROCESSES", "globalPid") || !db_.HasColumn("PROCESSES", "name")) return;
  std::string error;
  SqliteStatement st;
  if (!Query(Select("PROCESSES", {"globalPid", "name"}), &st, &error)) return;
  const int pid = st.Column("globalPid"), name = st.Column("name");
  while (st.Step()) {
    if (st.IsNull(pid) || st.IsNull(name)) continue;
    auto it = processes_.find(NsysPid(st.Int(pid)));
    // The model has no process-name field; the command line is where a
    // captured stream keeps what the process was.
    if (it != processes_.end())
      it->second->process.header.command_line = {std::string(st.Text(name))};
  }
}

void NsysImporter::ImportSessionStart() {
  if (!db_.HasColumn("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) return;
  std::string error;
  SqliteStatement st;
  if (!Query(Select("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}), &st, &error)) return;
  const int utc = st.Column("utcEpochNs");
  if (st.Step() && !st.IsNull(utc)) {
    // nsys timestamps count from the session start, so trace time 0 is that
    // wall-clock instant.
    for (auto& [pid, p] : processes_) {
      p->process.header.session_start_wall_ns = static_cast<uint64_t>(st.Int(utc));
      p->process.header.session_start_trace_ns = 0;
    }
  }
}

template <typename T>
void SortByStart(std::vector<T>* v) {
  auto before = [](const T& a, const T& b) { return a.start_ns < b.start_ns; };
  // Usually in order already (nsys writes most tables by start).
  if (!std::is_sorted(v->begin(), v->end(), before)) std::stable_sort(v->begin(), v->end(), before);
}

void NsysImporter::Finalize() {
  for (auto& [pid, state] : processes_) {
    ProcessTrace& p = state->process;
    uint64_t unclosed = 0;
    for (RangeRecord& r : p.ranges) {
      if (r.flags & kRangeFlagUnclosed) {
        r.end_ns = std::max(max_time_, r.start_ns);
        ++unclosed;
      }
    }
    if (unclosed != 0) p.counters["import_unclosed_ranges"] += unclosed;
    const NestingResult nesting = AssignRangeIdsAndNesting(&p.ranges);
    if (nesting.partial_overlaps != 0) {
      p.counters["import_partially_overlapping_ranges"] += nesting.partial_overlaps;
    }
    StableSortByStart(&p.kernels);
    SortByStart(&p.memcpys);
    SortByStart(&p.memsets);
    SortByStart(&p.api_calls);
    SortByStart(&p.syncs);
    std::stable_sort(p.marks.begin(), p.marks.end(), [](const MarkRecord& a, const MarkRecord& b) {
      return a.time_ns < b.time_ns;
    });
    p.header.source = "nsys-sqlite";
    p.header.clock_description = "nsys session clock (ns since session start)";
    p.source_file = db_.path();
    FooterInfo footer;
    footer.session_end_trace_ns = max_time_;
    footer.records_by_kind = {{"ranges", p.ranges.size()},   {"marks", p.marks.size()},
                              {"kernels", p.kernels.size()}, {"memcpys", p.memcpys.size()},
                              {"memsets", p.memsets.size()}, {"api_calls", p.api_calls.size()},
                              {"syncs", p.syncs.size()}};
    p.footer = footer;
  }
}

bool NsysImporter::Run(const std::string& path, std::string* error) {
  if (!OpenExport(path, error)) return false;
  StartAll();
  // Runtime first: it names the processes whose threads launch work, so a
  // row without globalPid elsewhere can fall back to the only process.
  if (!ImportRuntime(error) || !ImportKernels(error) || !ImportMemcpy(error) ||
      !ImportMemset(error) || !ImportSync(error) || !ImportNvtx(error)) {
    return false;
  }
  ImportMemoryUsage();
  ImportThreadNames();
  ImportProcessNames();
  ImportSessionStart();
  {
    TargetInfo target = ReadTargetInfo(false);
    target.device_by_pid = std::move(target_.device_by_pid);
    for (auto& [pid, p] : processes_) FillHeader(target, pid, &p->process.header);
  }
  Finalize();
  for (auto& [pid, state] : processes_) trace_->processes.push_back(std::move(state->process));
  return true;
}

}  // namespace

bool ImportNsysSqlite(const std::string& path, Trace* trace, std::string* error,
                      ImportFields fields, NsysRowReader reader) {
  // Processes are appended only when the whole import succeeded.
  NsysImporter importer(trace, fields == ImportFields::kReported, reader);
  return importer.Run(path, error);
}

}  // namespace tracer::analysis::importers
