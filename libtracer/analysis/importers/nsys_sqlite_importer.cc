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
  // Column expression: the quoted column, or NULL when the table lacks it.
  std::string Optional(std::string_view table, std::string_view column);
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
  // correlationId, globalPid (columns 0..6), then the required columns, then
  // the optional ones (NULL where the table lacks them); row(st, process)
  // appends the record.
  template <typename RowFn>
  bool ImportActivity(std::string_view table, std::initializer_list<std::string_view> required,
                      std::initializer_list<std::string_view> optional, std::string_view counter,
                      std::string* error, RowFn row);
  // Fills start_ns, end_ns and correlation_id from an ImportActivity row.
  template <typename Record>
  void ActivityFields(const SqliteStatement& st, Record* r);
  // The stream of an ImportActivity row (deviceId, contextId, streamId).
  uint32_t ActivityStream(const SqliteStatement& st, ProcessState& p);

  bool ImportKernels(std::string* error);
  bool ImportRuntime(std::string* error);
  bool ImportMemcpy(std::string* error);
  bool ImportMemset(std::string* error);
  bool ImportSync(std::string* error);
  bool ImportNvtx(std::string* error);
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

std::string NsysImporter::Optional(std::string_view table, std::string_view column) {
  return db_.HasColumn(table, column) ? "\"" + std::string(column) + "\"" : std::string("NULL");
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
  if (!Query("SELECT id, value FROM StringIds", &st, error)) return false;
  std::vector<std::pair<int64_t, std::string>> rows;
  int64_t max_id = -1;
  while (st.Step()) {
    const int64_t id = st.Int(0);
    if (id < 0) continue;
    rows.emplace_back(id, std::string(st.Text(1)));
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

template <typename RowFn>
bool NsysImporter::ImportActivity(std::string_view table,
                                  std::initializer_list<std::string_view> required,
                                  std::initializer_list<std::string_view> optional,
                                  std::string_view counter, std::string* error, RowFn row) {
  if (!db_.HasTable(table)) return true;
  if (!Require(table,
               {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"},
               error) ||
      !Require(table, required, error)) {
    return false;
  }
  std::string sql = "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid";
  for (std::string_view c : required) sql += ", " + std::string(c);
  for (std::string_view c : optional) sql += ", " + Optional(table, c);
  sql += " FROM " + std::string(table);
  SqliteStatement st;
  if (!Query(sql, &st, error)) return false;
  while (st.Step()) {
    row(st, ProcessOf(st, 6, counter));
    ++records_;
  }
  return Finish(st, table, error);
}

template <typename Record>
void NsysImporter::ActivityFields(const SqliteStatement& st, Record* r) {
  r->start_ns = Time(st, 0);
  r->end_ns = Time(st, 1);
  r->correlation_id = static_cast<uint64_t>(st.Int(5));
}

uint32_t NsysImporter::ActivityStream(const SqliteStatement& st, ProcessState& p) {
  return p.builder.Stream(static_cast<uint32_t>(st.Int(2)), static_cast<uint32_t>(st.Int(3)),
                          static_cast<uint64_t>(st.Int(4)));
}

bool NsysImporter::ImportKernels(std::string* error) {
  return ImportActivity(
      "CUPTI_ACTIVITY_KIND_KERNEL", {"demangledName"},
      {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
       "dynamicSharedMemory", "registersPerThread", "graphId", "graphNodeId"},
      "import_kernels_without_pid", error, [&](const SqliteStatement& st, ProcessState& p) {
        KernelRecord k;
        ActivityFields(st, &k);
        k.stream = ActivityStream(st, p);
        k.name = String(st.Int(7));
        if (!st.IsNull(8)) {
          LaunchConfigRecord lc;
          for (int i = 0; i < 3; ++i) {
            lc.grid[i] = static_cast<uint32_t>(st.Int(8 + i));
            lc.block[i] = static_cast<uint32_t>(st.Int(11 + i));
          }
          lc.static_shared_memory = static_cast<uint32_t>(st.Int(14));
          lc.dynamic_shared_memory = static_cast<uint32_t>(st.Int(15));
          lc.registers_per_thread = static_cast<uint32_t>(st.Int(16));
          k.launch_config = p.builder.LaunchConfig(lc);
        }
        k.graph_id = static_cast<uint64_t>(st.Int(17));
        k.graph_node_id = static_cast<uint64_t>(st.Int(18));
        p.process.kernels.push_back(k);
      });
}

bool NsysImporter::ImportRuntime(std::string* error) {
  const char* t = "CUPTI_ACTIVITY_KIND_RUNTIME";
  if (!db_.HasTable(t)) return true;
  if (!Require(t, {"start", "end", "globalTid", "correlationId", "nameId"}, error)) return false;
  SqliteStatement st;
  const std::string sql = "SELECT start, end, globalTid, correlationId, nameId, " +
                          Optional(t, "eventClass") + ", " + Optional(t, "returnValue") + " FROM " +
                          t;
  if (!Query(sql, &st, error)) return false;
  std::vector<ApiDomain> domain_by_name;  // cache per nsys string id: 0 runtime, 1 driver
  while (st.Step()) {
    ProcessState& p = ProcessOf(st, 2, "import_api_calls_without_tid");
    ApiRecord a;
    a.start_ns = Time(st, 0);
    a.end_ns = Time(st, 1);
    a.thread = st.IsNull(2) ? 0 : p.builder.Thread(NsysTid(st.Int(2)));
    a.correlation_id = static_cast<uint64_t>(st.Int(3));
    a.name = String(st.Int(4));
    if (!st.IsNull(5)) {
      // ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver.
      a.domain = st.Int(5) == 1 ? ApiDomain::kDriver : ApiDomain::kRuntime;
    } else {
      const std::string_view name = trace_->strings.Get(a.name);
      a.domain = name.starts_with("cu") && !name.starts_with("cuda") ? ApiDomain::kDriver
                                                                     : ApiDomain::kRuntime;
    }
    a.return_value = static_cast<uint32_t>(st.Int(6));
    p.process.api_calls.push_back(a);
    ++records_;
  }
  return Finish(st, t, error);
}

bool NsysImporter::ImportMemcpy(std::string* error) {
  return ImportActivity("CUPTI_ACTIVITY_KIND_MEMCPY", {"bytes", "copyKind"}, {"srcKind", "dstKind"},
                        "import_memcpys_without_pid", error,
                        [&](const SqliteStatement& st, ProcessState& p) {
                          MemcpyRecord m;
                          ActivityFields(st, &m);
                          m.stream = ActivityStream(st, p);
                          m.bytes = static_cast<uint64_t>(st.Int(7));
                          // ENUM_CUDA_MEMCPY_OPER 0..10 are CUPTI's memcpy kinds, the same
                          // numbers as proto CopyKind; the unified-memory kinds (11..13) have
                          // no counterpart.
                          const int64_t kind = st.Int(8);
                          m.copy_kind = kind >= 0 && kind <= 10 ? static_cast<uint32_t>(kind) : 0;
                          m.flags = (static_cast<uint32_t>(st.Int(9) & 0xFF) << 8) |
                                    (static_cast<uint32_t>(st.Int(10) & 0xFF) << 16);
                          p.process.memcpys.push_back(m);
                        });
}

bool NsysImporter::ImportMemset(std::string* error) {
  return ImportActivity("CUPTI_ACTIVITY_KIND_MEMSET", {"bytes"}, {"value"},
                        "import_memsets_without_pid", error,
                        [&](const SqliteStatement& st, ProcessState& p) {
                          MemsetRecord m;
                          ActivityFields(st, &m);
                          m.stream = ActivityStream(st, p);
                          m.bytes = static_cast<uint64_t>(st.Int(7));
                          m.value = static_cast<uint32_t>(st.Int(8));
                          p.process.memsets.push_back(m);
                        });
}

bool NsysImporter::ImportSync(std::string* error) {
  return ImportActivity("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", {"syncType"}, {"eventId"},
                        "import_syncs_without_pid", error,
                        [&](const SqliteStatement& st, ProcessState& p) {
                          SyncRecord s;
                          ActivityFields(st, &s);
                          // nsys writes streamId -1 / 0 for context- and device-wide syncs (no
                          // stream); only real streams get a StreamDef.
                          s.stream = st.Int(4) > 0 ? ActivityStream(st, p) : 0;
                          s.context = static_cast<uint32_t>(st.Int(3));
                          s.type = static_cast<uint32_t>(st.Int(7));
                          s.event = static_cast<uint32_t>(st.Int(8));
                          p.process.syncs.push_back(s);
                        });
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
  const std::string sql = "SELECT start, end, eventType, globalTid, " + Optional(t, "text") + ", " +
                          Optional(t, "textId") + ", " + Optional(t, "domainId") + ", " +
                          Optional(t, "category") + ", " + Optional(t, "color") + ", " +
                          Optional(t, "endGlobalTid") + ", " + Optional(t, "uint64Value") + ", " +
                          Optional(t, "int64Value") + ", " + Optional(t, "doubleValue") + ", " +
                          Optional(t, "uint32Value") + ", " + Optional(t, "int32Value") + ", " +
                          Optional(t, "floatValue") + " FROM " + t;
  if (!Query(sql, &st, error)) return false;
  while (st.Step()) {
    const int64_t type = st.Int(2);
    ProcessState& p = ProcessOf(st, 3, "import_nvtx_without_tid");
    auto text = [&]() -> uint32_t {
      if (!st.IsNull(4)) return trace_->strings.Intern(st.Text(4));
      if (!st.IsNull(5)) return String(st.Int(5));
      return 0;
    };
    const uint32_t domain = static_cast<uint32_t>(st.Int(6));
    switch (type) {
      case kNvtxPushPopRange:
      case kNvtxStartEndRange: {
        RangeRecord r;
        r.kind = type == kNvtxPushPopRange ? RangeKind::kPushPop : RangeKind::kStartEnd;
        r.start_ns = Time(st, 0);
        if (st.IsNull(1)) {
          r.flags |= kRangeFlagUnclosed;  // end filled in by Finalize()
        } else {
          r.end_ns = Time(st, 1);
        }
        r.thread = st.IsNull(3) ? 0 : p.builder.Thread(NsysTid(st.Int(3)));
        r.end_thread = st.IsNull(9) ? 0 : p.builder.Thread(NsysTid(st.Int(9)));
        r.name = text();
        r.domain = domain;
        r.category = static_cast<uint32_t>(st.Int(7));
        r.color = static_cast<uint32_t>(st.Int(8));
        if (!st.IsNull(10)) {
          r.payload.type = PayloadValue::Type::kU64;
          r.payload.u64 = static_cast<uint64_t>(st.Int(10));
        } else if (!st.IsNull(11)) {
          r.payload.type = PayloadValue::Type::kI64;
          r.payload.i64 = st.Int(11);
        } else if (!st.IsNull(12)) {
          r.payload.type = PayloadValue::Type::kF64;
          r.payload.f64 = st.Double(12);
        } else if (!st.IsNull(13)) {
          r.payload.type = PayloadValue::Type::kU64;
          r.payload.u64 = static_cast<uint64_t>(st.Int(13));
        } else if (!st.IsNull(14)) {
          r.payload.type = PayloadValue::Type::kI64;
          r.payload.i64 = st.Int(14);
        } else if (!st.IsNull(15)) {
          r.payload.type = PayloadValue::Type::kF64;
          r.payload.f64 = st.Double(15);
        }
        p.process.ranges.push_back(r);
        ++records_;
        break;
      }
      case kNvtxMark: {
        MarkRecord m;
        m.time_ns = Time(st, 0);
        m.thread = st.IsNull(3) ? 0 : p.builder.Thread(NsysTid(st.Int(3)));
        m.name = text();
        m.domain = domain;
        m.category = static_cast<uint32_t>(st.Int(7));
        m.color = static_cast<uint32_t>(st.Int(8));
        p.process.marks.push_back(m);
        ++records_;
        break;
      }
      case kNvtxDomainCreate:
        if (domain != 0) p.process.domain_names[domain] = text();
        break;
      case kNvtxCategory:
        p.process.category_names[{domain, static_cast<uint32_t>(st.Int(7))}] = text();
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
    if (Query("SELECT id, domainName FROM DomainStrings", &ds, error)) {
      while (ds.Step()) {
        const uint32_t id = static_cast<uint32_t>(ds.Int(0));
        if (id == 0) continue;
        const uint32_t name = trace_->strings.Intern(ds.Text(1));
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
  if (!Query("SELECT nameId, globalTid FROM ThreadNames", &st, &error)) return;
  while (st.Step()) {
    if (st.IsNull(1)) continue;
    auto it = processes_.find(NsysPid(st.Int(1)));
    if (it == processes_.end()) continue;  // a process that left no record
    it->second->builder.NameThread(NsysTid(st.Int(1)), String(st.Int(0)));
  }
}

void NsysImporter::ImportProcessNames() {
  // Schema 3.x only; the 2020 exports have no PROCESSES table.
  if (!db_.HasColumn("PROCESSES", "globalPid") || !db_.HasColumn("PROCESSES", "name")) return;
  std::string error;
  SqliteStatement st;
  if (!Query("SELECT globalPid, name FROM PROCESSES", &st, &error)) return;
  while (st.Step()) {
    if (st.IsNull(0) || st.IsNull(1)) continue;
    auto it = processes_.find(NsysPid(st.Int(0)));
    // The model has no process-name field; the command line is where a
    // captured stream keeps what the process was.
    if (it != processes_.end()) it->second->process.header.command_line = {std::string(st.Text(1))};
  }
}

void NsysImporter::ImportSessionStart() {
  if (!db_.HasColumn("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) return;
  std::string error;
  SqliteStatement st;
  if (!Query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", &st, &error)) return;
  if (st.Step() && !st.IsNull(0)) {
    // nsys timestamps count from the session start, so trace time 0 is that
    // wall-clock instant.
    for (auto& [pid, p] : processes_) {
      p->process.header.session_start_wall_ns = static_cast<uint64_t>(st.Int(0));
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
