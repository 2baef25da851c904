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
#include "libtracer/analysis/importers/process_builder.h"
#include "libtracer/analysis/importers/range_nesting.h"
#include "libtracer/analysis/importers/sqlite_db.h"

namespace tracer::analysis::importers {
namespace {

// NVTX_EVENTS.eventType values (ENUM_NSYS_EVENT_TYPE of schema 3.x; the
// 2020 exports use the same numbers, checked on shared/data).
constexpr int64_t kNvtxCategory = 33;
constexpr int64_t kNvtxMark = 34;
constexpr int64_t kNvtxPushPopRange = 59;
constexpr int64_t kNvtxStartEndRange = 60;
constexpr int64_t kNvtxDomainCreate = 75;

constexpr uint32_t kNotInterned = std::numeric_limits<uint32_t>::max();

// Result-column indexes of the columns every CUPTI_ACTIVITY_KIND_* query
// selects, looked up by name once per statement.
struct ActivityColumns {
  explicit ActivityColumns(const SqliteStatement& st)
      : start(st.Column("start")),
        end(st.Column("end")),
        device(st.Column("deviceId")),
        context(st.Column("contextId")),
        stream(st.Column("streamId")),
        correlation(st.Column("correlationId")),
        pid(st.Column("globalPid")) {}
  int start, end, device, context, stream, correlation, pid;
};

// Result-column indexes of the NVTX_EVENTS query (ImportNvtx).
struct NvtxColumns {
  explicit NvtxColumns(const SqliteStatement& st)
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

struct ProcessState {
  explicit ProcessState(uint32_t pid) : builder(&process) { process.header.pid = pid; }
  ProcessTrace process;
  ProcessBuilder builder;
};

class NsysImporter {
 public:
  NsysImporter(Trace* trace) : trace_(trace) {}

  bool Run(const std::string& path, std::string* error);

 private:
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
  bool Finish(const SqliteStatement& st, std::string_view table, std::string* error);

  bool LoadStrings(std::string* error);
  uint32_t String(int64_t nsys_id);
  ProcessState& Process(uint32_t pid);
  ProcessState& ProcessOf(const SqliteStatement& st, int col, std::string_view counter);
  void Note(uint64_t t) { max_time_ = std::max(max_time_, t); }
  uint64_t Time(const SqliteStatement& st, int col);

  // Imports every row of a CUPTI_ACTIVITY_KIND_* table, when the export has
  // it. Each row holds start, end, deviceId, contextId, streamId,
  // correlationId, globalPid (ActivityColumns), the required columns and the
  // optional ones (NULL where the table lacks them). bind(st) looks up the
  // table's own columns once; row(st, columns, process) appends the record.
  template <typename BindFn, typename RowFn>
  bool ImportActivity(std::string_view table, std::initializer_list<std::string_view> required,
                      std::initializer_list<std::string_view> optional, std::string_view counter,
                      std::string* error, BindFn bind, RowFn row);
  // Fills start_ns, end_ns and correlation_id from an ImportActivity row.
  template <typename Record>
  void ActivityFields(const SqliteStatement& st, const ActivityColumns& c, Record* r);
  // The stream of an ImportActivity row (deviceId, contextId, streamId).
  uint32_t ActivityStream(const SqliteStatement& st, const ActivityColumns& c, ProcessState& p);

  bool ImportKernels(std::string* error);
  bool ImportRuntime(std::string* error);
  bool ImportMemcpy(std::string* error);
  bool ImportMemset(std::string* error);
  bool ImportSync(std::string* error);
  bool ImportNvtx(std::string* error);
  // The message of an NVTX_EVENTS row: inline text, else a StringIds id.
  uint32_t NvtxText(const SqliteStatement& st, const NvtxColumns& c);
  RangeRecord NvtxRange(const SqliteStatement& st, const NvtxColumns& c, int64_t type,
                        ProcessState& p);
  void ImportThreadNames();
  void ImportProcessNames();
  void ImportSessionStart();
  void Finalize();

  Trace* trace_;
  SqliteDb db_;
  std::vector<std::string> nsys_strings_;
  std::vector<uint32_t> interned_;
  std::unordered_map<int64_t, uint32_t> sparse_strings_;  // nsys id -> global id
  std::map<uint32_t, std::unique_ptr<ProcessState>> processes_;
  uint64_t max_time_ = 0;
  uint64_t records_ = 0;
};

std::string NsysImporter::Select(std::string_view table,
                                 const std::vector<std::string_view>& columns,
                                 const std::vector<std::string_view>& optional) {
  std::string sql = "SELECT ";
  auto add = [&](std::string expression) {
    if (sql.size() > 7) sql += ", ";
    sql += expression;
  };
  for (std::string_view c : columns)
    add("\"" + std::string(c) + "\" AS \"" + std::string(c) + "\"");
  for (std::string_view c : optional) add(Optional(table, c));
  return sql + " FROM \"" + std::string(table) + "\"";
}

std::string NsysImporter::Optional(std::string_view table, std::string_view column) {
  const std::string quoted = "\"" + std::string(column) + "\"";
  return (db_.HasColumn(table, column) ? quoted : "NULL") + " AS " + quoted;
}

bool NsysImporter::Require(std::string_view table, std::initializer_list<std::string_view> columns,
                           std::string* error) {
  for (std::string_view c : columns) {
    if (!db_.HasColumn(table, c)) {
      *error = db_.path() + ": not an nsys export: table " + std::string(table) +
               " has no column '" + std::string(c) + "'";
      return false;
    }
  }
  return true;
}

bool NsysImporter::Query(const std::string& sql, SqliteStatement* st, std::string* error) {
  *st = db_.Prepare(sql, error);
  return st->valid();
}

bool NsysImporter::Finish(const SqliteStatement& st, std::string_view table, std::string* error) {
  if (st.ok()) return true;
  *error = db_.path() + ": error reading table " + std::string(table) + ": " + db_.LastError();
  return false;
}

bool NsysImporter::LoadStrings(std::string* error) {
  if (!db_.HasTable("StringIds")) {
    *error = db_.path() + ": not an nsys export: no table StringIds";
    return false;
  }
  if (!Require("StringIds", {"id", "value"}, error)) return false;
  SqliteStatement st;
  if (!Query(Select("StringIds", {"id", "value"}), &st, error)) return false;
  const int id_col = st.Column("id"), value_col = st.Column("value");
  std::vector<std::pair<int64_t, std::string>> rows;
  int64_t max_id = -1;
  while (st.Step()) {
    const int64_t id = st.Int(id_col);
    if (id < 0) continue;
    rows.emplace_back(id, std::string(st.Text(value_col)));
    max_id = std::max(max_id, id);
  }
  // Ids are dense in the 2020 exports but sparse in schema 3.x (126 strings
  // up to id 3,436,172 in h100_2gpu_mfu.sqlite): index by id only when that
  // costs little memory.
  if (max_id >= 0 && static_cast<uint64_t>(max_id) <= 4 * rows.size() + 4096) {
    nsys_strings_.resize(max_id + 1);
    for (auto& [id, text] : rows) nsys_strings_[id] = std::move(text);
  } else {
    for (auto& [id, text] : rows) sparse_strings_[id] = trace_->strings.Intern(text);
  }
  interned_.assign(nsys_strings_.size(), kNotInterned);
  return Finish(st, "StringIds", error);
}

uint32_t NsysImporter::String(int64_t nsys_id) {
  if (!sparse_strings_.empty()) {
    auto it = sparse_strings_.find(nsys_id);
    if (it != sparse_strings_.end()) return it->second;
  }
  if (nsys_id < 0 || static_cast<size_t>(nsys_id) >= nsys_strings_.size()) {
    return trace_->strings.Intern("[unknown string " + std::to_string(nsys_id) + "]");
  }
  uint32_t& slot = interned_[nsys_id];
  if (slot == kNotInterned) slot = trace_->strings.Intern(nsys_strings_[nsys_id]);
  return slot;
}

ProcessState& NsysImporter::Process(uint32_t pid) {
  auto& p = processes_[pid];
  if (!p) p = std::make_unique<ProcessState>(pid);
  return *p;
}

ProcessState& NsysImporter::ProcessOf(const SqliteStatement& st, int col,
                                      std::string_view counter) {
  if (st.IsNull(col)) {
    // No process column value: keep the record in the only process when
    // there is one, else in pid 0; counted either way.
    ProcessState& p = processes_.size() == 1 ? *processes_.begin()->second : Process(0);
    ++p.process.counters[std::string(counter)];
    return p;
  }
  return Process(NsysPid(st.Int(col)));
}

uint64_t NsysImporter::Time(const SqliteStatement& st, int col) {
  const int64_t v = st.Int(col);
  const uint64_t t = v < 0 ? 0 : static_cast<uint64_t>(v);
  Note(t);
  return t;
}

template <typename BindFn, typename RowFn>
bool NsysImporter::ImportActivity(std::string_view table,
                                  std::initializer_list<std::string_view> required,
                                  std::initializer_list<std::string_view> optional,
                                  std::string_view counter, std::string* error, BindFn bind,
                                  RowFn row) {
  if (!db_.HasTable(table)) return true;
  if (!Require(table,
               {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"},
               error) ||
      !Require(table, required, error)) {
    return false;
  }
  std::vector<std::string_view> selected = {"start",    "end",           "deviceId", "contextId",
                                            "streamId", "correlationId", "globalPid"};
  selected.insert(selected.end(), required.begin(), required.end());
  const std::string sql = Select(table, selected, optional);
  SqliteStatement st;
  if (!Query(sql, &st, error)) return false;
  const ActivityColumns common(st);
  const auto columns = bind(st);
  while (st.Step()) {
    row(st, common, columns, ProcessOf(st, common.pid, counter));
    ++records_;
  }
  return Finish(st, table, error);
}

template <typename Record>
void NsysImporter::ActivityFields(const SqliteStatement& st, const ActivityColumns& c, Record* r) {
  r->start_ns = Time(st, c.start);
  r->end_ns = Time(st, c.end);
  r->correlation_id = static_cast<uint64_t>(st.Int(c.correlation));
}

uint32_t NsysImporter::ActivityStream(const SqliteStatement& st, const ActivityColumns& c,
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
      "CUPTI_ACTIVITY_KIND_KERNEL", {"demangledName"},
      {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
       "dynamicSharedMemory", "registersPerThread", "graphId", "graphNodeId"},
      "import_kernels_without_pid", error,
      [](const SqliteStatement& st) {
        return Columns{st.Column("demangledName"),
                       {st.Column("gridX"), st.Column("gridY"), st.Column("gridZ")},
                       {st.Column("blockX"), st.Column("blockY"), st.Column("blockZ")},
                       st.Column("staticSharedMemory"),
                       st.Column("dynamicSharedMemory"),
                       st.Column("registersPerThread"),
                       st.Column("graphId"),
                       st.Column("graphNodeId")};
      },
      [&](const SqliteStatement& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
        KernelRecord k;
        ActivityFields(st, a, &k);
        k.stream = ActivityStream(st, a, p);
        k.name = String(st.Int(c.name));
        if (!st.IsNull(c.grid[0])) {
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
  SqliteStatement st;
  const std::string sql = Select(t, {"start", "end", "globalTid", "correlationId", "nameId"},
                                 {"eventClass", "returnValue"});
  if (!Query(sql, &st, error)) return false;
  const int start = st.Column("start"), end = st.Column("end"), tid = st.Column("globalTid"),
            correlation = st.Column("correlationId"), name = st.Column("nameId"),
            event_class = st.Column("eventClass"), return_value = st.Column("returnValue");
  while (st.Step()) {
    ProcessState& p = ProcessOf(st, tid, "import_api_calls_without_tid");
    ApiRecord a;
    a.start_ns = Time(st, start);
    a.end_ns = Time(st, end);
    a.thread = st.IsNull(tid) ? 0 : p.builder.Thread(NsysTid(st.Int(tid)));
    a.correlation_id = static_cast<uint64_t>(st.Int(correlation));
    a.name = String(st.Int(name));
    if (!st.IsNull(event_class)) {
      // ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver.
      a.domain = st.Int(event_class) == 1 ? ApiDomain::kDriver : ApiDomain::kRuntime;
    } else {
      const std::string_view name = trace_->strings.Get(a.name);
      a.domain = name.starts_with("cu") && !name.starts_with("cuda") ? ApiDomain::kDriver
                                                                     : ApiDomain::kRuntime;
    }
    a.return_value = static_cast<uint32_t>(st.Int(return_value));
    p.process.api_calls.push_back(a);
    ++records_;
  }
  return Finish(st, t, error);
}

bool NsysImporter::ImportMemcpy(std::string* error) {
  struct Columns {
    int bytes, copy_kind, src_kind, dst_kind;
  };
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_MEMCPY", {"bytes", "copyKind"}, {"srcKind", "dstKind"},
      "import_memcpys_without_pid", error,
      [](const SqliteStatement& st) {
        return Columns{st.Column("bytes"), st.Column("copyKind"), st.Column("srcKind"),
                       st.Column("dstKind")};
      },
      [&](const SqliteStatement& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
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
      "CUPTI_ACTIVITY_KIND_MEMSET", {"bytes"}, {"value"}, "import_memsets_without_pid", error,
      [](const SqliteStatement& st) {
        return Columns{st.Column("bytes"), st.Column("value")};
      },
      [&](const SqliteStatement& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
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
      "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"syncType"}, {"eventId"}, "import_syncs_without_pid",
      error,
      [](const SqliteStatement& st) {
        return Columns{st.Column("syncType"), st.Column("eventId")};
      },
      [&](const SqliteStatement& st, const ActivityColumns& a, const Columns& c, ProcessState& p) {
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

uint32_t NsysImporter::NvtxText(const SqliteStatement& st, const NvtxColumns& c) {
  if (!st.IsNull(c.text)) return trace_->strings.Intern(st.Text(c.text));
  if (!st.IsNull(c.text_id)) return String(st.Int(c.text_id));
  return 0;
}

RangeRecord NsysImporter::NvtxRange(const SqliteStatement& st, const NvtxColumns& c, int64_t type,
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
  r.name = NvtxText(st, c);
  r.domain = static_cast<uint32_t>(st.Int(c.domain));
  r.category = static_cast<uint32_t>(st.Int(c.category));
  r.color = static_cast<uint32_t>(st.Int(c.color));
  if (!st.IsNull(c.u64)) {
    r.payload.type = PayloadValue::Type::kU64;
    r.payload.u64 = static_cast<uint64_t>(st.Int(c.u64));
  } else if (!st.IsNull(c.i64)) {
    r.payload.type = PayloadValue::Type::kI64;
    r.payload.i64 = st.Int(c.i64);
  } else if (!st.IsNull(c.f64)) {
    r.payload.type = PayloadValue::Type::kF64;
    r.payload.f64 = st.Double(c.f64);
  } else if (!st.IsNull(c.u32)) {
    r.payload.type = PayloadValue::Type::kU64;
    r.payload.u64 = static_cast<uint64_t>(st.Int(c.u32));
  } else if (!st.IsNull(c.i32)) {
    r.payload.type = PayloadValue::Type::kI64;
    r.payload.i64 = st.Int(c.i32);
  } else if (!st.IsNull(c.f32)) {
    r.payload.type = PayloadValue::Type::kF64;
    r.payload.f64 = st.Double(c.f32);
  }
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
  SqliteStatement st;
  const std::string sql =
      Select(t, {"start", "end", "eventType", "globalTid"},
             {"text", "textId", "domainId", "category", "color", "endGlobalTid", "uint64Value",
              "int64Value", "doubleValue", "uint32Value", "int32Value", "floatValue"});
  if (!Query(sql, &st, error)) return false;
  const NvtxColumns c(st);
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
        m.category = static_cast<uint32_t>(st.Int(c.category));
        m.color = static_cast<uint32_t>(st.Int(c.color));
        p.process.marks.push_back(m);
        ++records_;
        break;
      }
      case kNvtxDomainCreate:
        if (domain != 0) p.process.domain_names[domain] = NvtxText(st, c);
        break;
      case kNvtxCategory:
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
  if (!Finish(st, t, error)) return false;
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
  std::stable_sort(v->begin(), v->end(),
                   [](const T& a, const T& b) { return a.start_ns < b.start_ns; });
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
    SortByStart(&p.kernels);
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
  if (!db_.Open(path, error)) return false;
  if (!LoadStrings(error)) return false;
  static constexpr std::string_view kTables[] = {
      "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
      "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS"};
  if (std::none_of(std::begin(kTables), std::end(kTables),
                   [&](std::string_view t) { return db_.HasTable(t); })) {
    *error = path +
             ": not an nsys export: none of the tables CUPTI_ACTIVITY_KIND_KERNEL, "
             "CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MEMCPY, "
             "CUPTI_ACTIVITY_KIND_MEMSET, NVTX_EVENTS";
    return false;
  }
  // Runtime first: it names the processes whose threads launch work, so a
  // row without globalPid elsewhere can fall back to the only process.
  if (!ImportRuntime(error) || !ImportKernels(error) || !ImportMemcpy(error) ||
      !ImportMemset(error) || !ImportSync(error) || !ImportNvtx(error)) {
    return false;
  }
  ImportThreadNames();
  ImportProcessNames();
  ImportSessionStart();
  Finalize();
  for (auto& [pid, state] : processes_) trace_->processes.push_back(std::move(state->process));
  return true;
}

}  // namespace

bool ImportNsysSqlite(const std::string& path, Trace* trace, std::string* error) {
  // Processes are appended only when the whole import succeeded.
  NsysImporter importer(trace);
  return importer.Run(path, error);
}

}  // namespace tracer::analysis::importers
