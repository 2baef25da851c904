#include "libtracer/analysis/importers/nsys_sqlite_stream.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/correlation_bits.h"
#include "libtracer/analysis/importers/nsys_global_id.h"
#include "libtracer/analysis/importers/nsys_schema.h"
#include "libtracer/analysis/importers/prefetched_rows.h"
#include "libtracer/analysis/importers/process_builder.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"

namespace tracer::analysis::importers {
namespace {

constexpr const char* kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kSync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtx = "NVTX_EVENTS";

// The pid of a globalPid / globalTid column, in SQL (NsysPid).
std::string PidOf(std::string_view table, std::string_view column) {
  return "((\"" + std::string(table) + "\".\"" + std::string(column) + "\" >> 24) & 16777215)";
}

// Inserts extra result columns before the FROM of a NsysSchema::Select.
std::string WithColumns(const std::string& select, const std::string& extra) {
  const size_t from = select.rfind(" FROM \"");
  return select.substr(0, from) + ", " + extra + select.substr(from);
}

uint64_t Clamp(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

// Where a table's reading stands: its current row's process and time.
struct CursorState {
  bool has = false;
  uint32_t pid = 0;
  uint64_t time = 0;
};

// One (pid, start)-ordered SELECT and its current row: NVTX_EVENTS through a
// SqliteStatement (text columns), the activity tables through PrefetchedRows.
template <typename Rows>
struct Cursor : CursorState {
  Rows st;
  // pid_col: the pid (pid_, computed by the SELECT), else global_col: the
  // globalPid / globalTid it is taken from (a table read from the file).
  int pid_col = -1, global_col = -1, time_col = -1;
  void Next() {
    has = st.valid() && st.Step();
    if (has) {
      pid = pid_col >= 0 ? static_cast<uint32_t>(st.Int(pid_col)) : NsysPid(st.Int(global_col));
      time = Clamp(st.Int(time_col));
    }
  }
};

struct OpenRange {
  uint64_t id, start, end;
  uint32_t depth;
};

// Pop order: end first, then the deeper (the child) first.
struct LaterPop {
  bool operator()(const RangeRecord& a, const RangeRecord& b) const {
    return a.end_ns != b.end_ns ? a.end_ns > b.end_ns : a.depth < b.depth;
  }
};

// What a process needs besides its records, read before the sweep (small).
struct ProcessMeta {
  std::unordered_map<uint32_t, uint32_t> domain_names;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> category_names;
  uint64_t skipped_nvtx = 0, syncs = 0;
  std::vector<std::pair<uint64_t, uint32_t>> thread_names;  // os tid, name
  std::string name;
};

// One activity table's plain read (NsysStreamer::PrescanTables), on a thread
// of its own: straight from the file when the scan reads the table (rows
// started on it), else through sql on a connection of its own.
struct Prescan {
  enum Kind {
    kPlain,    // the runtime table
    kGpu,      // kernels, memcpys, memsets: correlation ids and devices too
    kCounted,  // syncs: rows counted per process
  };
  Prescan(const char* t, const char* column, Kind k) : table(t), pid_column(column), kind(k) {}
  const char* table;
  const char* pid_column;
  Kind kind;
  std::string sql;  // SELECT pid_column, start, end[, correlationId, deviceId]
  PrefetchedRows rows;
  bool scanning = false;  // rows were started on the file
  // Found: rows stored in (process, start) order; a row without a process;
  // every correlation id within CorrelationBits (kGpu).
  bool sorted = true, null_pid = false, fits = true;
  uint64_t max_time = 0;  // the largest start or end (Clamp'ed)
  std::set<uint32_t> pids;
  std::unordered_map<uint32_t, CorrelationBits> bits;  // pid -> ids with GPU work
  std::set<std::pair<uint32_t, int64_t>> devices;      // (pid, deviceId)
  std::map<uint32_t, uint64_t> rows_by_pid;            // kCounted
  std::string error;

  // Run, on a thread that an exception must not end (std::bad_alloc on a
  // huge table): it becomes the table's error.
  void RunGuarded(const std::string& path) {
    try {
      Run(path);
    } catch (const std::exception& e) {
      error = path + ": error reading table " + table + ": " + e.what();
    } catch (...) {
      error = path + ": error reading table " + table;
    }
  }
  void Run(const std::string& path) {
    if (!scanning) {
      if (!rows.Open(path, sql, &error)) return;
      rows.TrackNulls(0);  // the pid column
      if (kind == kGpu) rows.TrackNulls(4);
      rows.StartInline();
    }
    bool first = true;
    uint32_t last_pid = 0;
    uint64_t last_start = 0;
    int64_t last_device = 0;
    bool device_noted = false;
    CorrelationBits* pid_bits = nullptr;
    uint64_t* pid_rows = nullptr;
    while (rows.Step()) {
      if (rows.IsNull(0)) null_pid = true;
      const uint32_t pid = NsysPid(rows.Int(0));
      const uint64_t start = Clamp(rows.Int(1));  // what the sweep compares
      max_time = std::max({max_time, start, Clamp(rows.Int(2))});
      if (first || pid != last_pid) {
        if (!first && pid < last_pid) sorted = false;
        first = false;
        last_pid = pid;
        last_start = 0;
        device_noted = false;
        pids.insert(pid);
        if (kind == kGpu) pid_bits = &bits[pid];
        if (kind == kCounted) pid_rows = &rows_by_pid[pid];
      }
      if (start < last_start) sorted = false;
      last_start = start;
      if (kind == kCounted) ++*pid_rows;
      if (kind != kGpu) continue;
      if (fits) {
        const int64_t corr = rows.Int(3);
        if (corr < 0 || (corr > 0 && !pid_bits->Set(static_cast<uint64_t>(corr)))) fits = false;
      }
      // ReadTargetInfo's (pid, device) pairs of the rows that have both.
      if (!rows.IsNull(0) && !rows.IsNull(4) && (!device_noted || rows.Int(4) != last_device)) {
        last_device = rows.Int(4);
        device_noted = true;
        devices.emplace(pid, last_device);
      }
    }
    if (!rows.ok()) error = path + ": error reading table " + table + ": " + rows.error();
  }
};

class NsysStreamer : public NsysSchema {
 public:
  NsysStreamer(StringTable* strings, const NsysStreamCallbacks& cb, size_t batch)
      : NsysSchema(strings), cb_(cb), batch_(std::max<size_t>(batch, 1)) {}

  bool Run(const std::string& path, std::string* error, bool* unsupported);

 private:
  bool CheckSchema(std::string* error);
  // One plain read of each activity table (Prescan) first: what the checks
  // and the sweep need of it, in one pass.
  bool PrescanTables(std::string* error);
  bool HasNullProcess(std::string* table);
  void FindMaxTime();
  bool ReadMeta(std::string* error);
  bool OpenCursors(std::string* error);
  bool OpenCursor(Cursor<SqliteStatement>* c, const std::string& sql, std::string* error);
  // Starts an activity table's cursor: its columns (required, then
  // optional) read straight from the file when the table is stored in
  // (process, start) order and the scan reads it, else through SQL on a
  // thread (ORDER BY when out of order). pid_column: globalPid / globalTid.
  bool StartCursor(Cursor<PrefetchedRows>* c, const char* table, const char* pid_column,
                   const std::vector<std::string_view>& required,
                   const std::vector<std::string_view>& optional,
                   const std::vector<std::string_view>& nulls, std::string* error);
  void Sweep(uint32_t pid);
  void EmitClosedBefore(uint64_t t);
  void Flush();
  void OnRange(const NvtxColumns& c);
  void OnMark(const NvtxColumns& c);
  void OnApi();
  void OnKernel();
  void OnMemcpy();
  void OnMemset();
  uint32_t StreamOf(const PrefetchedRows& st, const ActivityColumns& c);

  NsysStreamCallbacks cb_;
  size_t batch_;
  uint64_t max_time_ = 0;
  // The export mapped for reading tables straight from it (MapForScan);
  // nullptr: everything through SQL.
  std::shared_ptr<const SqliteFileMap> file_;
  // What PrescanTables found, by table.
  std::map<std::string, std::unique_ptr<Prescan>, std::less<>> prescans_;
  // Correlation ids with GPU work per pid, from PrescanTables (use_bits_
  // false: an id does not fit; the export is left to the whole import).
  bool use_bits_ = true;
  std::unordered_map<uint32_t, CorrelationBits> gpu_bits_;
  const CorrelationBits* pid_bits_ = nullptr;  // the swept pid's
  std::vector<uint32_t> pids_;
  std::map<uint32_t, ProcessMeta> meta_;
  std::vector<std::pair<uint32_t, uint32_t>> fallback_domains_;  // DomainStrings
  std::optional<uint64_t> session_start_;
  TargetInfo target_;  // host, each process's device
  // NVTX rows without globalTid: the importer files them under the only
  // process (it reads NVTX last), which is this one.
  std::optional<uint32_t> nvtx_null_pid_;
  uint64_t nvtx_without_tid_ = 0;
  std::string NvtxPid() const {
    const std::string pid = PidOf(kNvtx, "globalTid");
    return nvtx_null_pid_ ? "COALESCE(" + pid + ", " + std::to_string(*nvtx_null_pid_) + ")" : pid;
  }
  bool OnlyProcessForNullNvtx();
  // What NVTX_EVENTS tells that needs nothing of the prescans, read on this
  // thread while they run: its rows without a thread (nvtx_null_tid_), its
  // largest time, and ReadNvtxMeta when there are no such rows.
  void ReadNvtxEarly();
  bool ReadNvtxMeta(std::string* error);
  bool nvtx_null_tid_ = false;
  uint64_t nvtx_max_time_ = 0;
  bool nvtx_meta_read_ = false, nvtx_meta_ok_ = true;
  std::string nvtx_meta_error_;
  std::set<uint32_t> nvtx_pids_;
  Cursor<SqliteStatement> nvtx_;
  Cursor<PrefetchedRows> api_, kernels_, memcpys_, memsets_;
  // Result-column indexes, looked up once per statement.
  struct ApiCols {
    int start, end, tid, corr, name, event_class, ret;
  } api_cols_{};
  struct OpCols {
    explicit OpCols(const PrefetchedRows& st)
        : a(st),
          name(st.Column("demangledName")),
          graph(st.Column("graphId")),
          node(st.Column("graphNodeId")),
          bytes(st.Column("bytes")),
          copy_kind(st.Column("copyKind")),
          src(st.Column("srcKind")),
          dst(st.Column("dstKind")),
          value(st.Column("value")) {}
    ActivityColumns a;
    int name, graph, node, bytes, copy_kind, src, dst, value;
  };
  std::optional<OpCols> kernel_cols_, memcpy_cols_, memset_cols_;

  // The process being swept.
  ProcessTrace* proc_ = nullptr;
  ProcessBuilder* builder_ = nullptr;
  size_t pending_records_ = 0;
  uint64_t next_range_id_ = 1;
  std::unordered_map<uint32_t, std::vector<OpenRange>> stacks_;  // thread -> open push/pop
  std::priority_queue<RangeRecord, std::vector<RangeRecord>, LaterPop> closing_;
  uint64_t unclosed_ = 0, partial_overlaps_ = 0;
  // Records handed out by kind (footer records_by_kind).
  enum Kind { kRanges, kMarks, kKernels, kMemcpys, kMemsets, kApiCalls, kKindCount };
  static constexpr const char* kKinds[kKindCount] = {"ranges",  "marks",   "kernels",
                                                     "memcpys", "memsets", "api_calls"};
  uint64_t by_kind_[kKindCount] = {};
};

bool NsysStreamer::CheckSchema(std::string* error) {
  const std::initializer_list<std::string_view> activity = {
      "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"};
  struct Need {
    const char* table;
    std::initializer_list<std::string_view> columns;
  };
  const Need needs[] = {{kKernel, {"demangledName"}},
                        {kMemcpy, {"bytes", "copyKind"}},
                        {kMemset, {"bytes"}},
                        {kSync, {"syncType"}}};
  for (const Need& n : needs) {
    if (db_.HasTable(n.table) &&
        (!Require(n.table, activity, error) || !Require(n.table, n.columns, error))) {
      return false;
    }
  }
  if (db_.HasTable(kRuntime) &&
      !Require(kRuntime, {"start", "end", "globalTid", "correlationId", "nameId"}, error)) {
    return false;
  }
  if (db_.HasTable(kNvtx)) {
    if (!Require(kNvtx, {"start", "end", "eventType", "globalTid"}, error)) return false;
    if (!db_.HasColumn(kNvtx, "text") && !db_.HasColumn(kNvtx, "textId")) {
      *error = db_.path() + ": not an nsys export: table NVTX_EVENTS has neither column 'text' " +
               "nor 'textId'";
      return false;
    }
  }
  return true;
}

bool NsysStreamer::HasNullProcess(std::string* table) {
  // The importer's order of tables: the first one with such a row is named.
  for (const char* t : {kRuntime, kKernel, kMemcpy, kMemset, kSync}) {
    auto it = prescans_.find(t);
    if (it != prescans_.end() && it->second->null_pid) {
      *table = t;
      return true;
    }
  }
  if (!db_.HasTable(kNvtx) || !nvtx_null_tid_) return false;
  *table = kNvtx;
  return true;
}

bool NsysStreamer::OnlyProcessForNullNvtx() {
  // Exactly one pid in every other table and in the NVTX rows that have
  // one, and at least one other table (the importer's process exists
  // before it reads NVTX_EVENTS).
  if (prescans_.empty()) return false;
  std::set<uint32_t> pids;
  for (const auto& [table, scan] : prescans_) pids.insert(scan->pids.begin(), scan->pids.end());
  std::string error;
  SqliteStatement st;
  if (!Query("SELECT DISTINCT " + PidOf(kNvtx, "globalTid") +
                 " FROM NVTX_EVENTS WHERE globalTid IS NOT NULL",
             &st, &error)) {
    return false;
  }
  while (st.Step()) pids.insert(static_cast<uint32_t>(st.Int(0)));
  if (!st.ok() || pids.size() != 1) return false;
  nvtx_null_pid_ = *pids.begin();
  SqliteStatement n;
  if (Query("SELECT COUNT(*) FROM NVTX_EVENTS WHERE globalTid IS NULL", &n, &error) && n.Step())
    nvtx_without_tid_ = Clamp(n.Int(0));
  return true;
}

void NsysStreamer::FindMaxTime() {
  // The importer's max_time_: every start and end it reads (NVTX: ranges
  // and marks only); the activity tables' from their prescan.
  for (const auto& [table, scan] : prescans_) max_time_ = std::max(max_time_, scan->max_time);
  max_time_ = std::max(max_time_, nvtx_max_time_);
}

void NsysStreamer::ReadNvtxEarly() {
  if (!db_.HasTable(kNvtx)) return;
  // HasNullProcess's question.
  {
    std::string error;
    SqliteStatement st;
    nvtx_null_tid_ = Query("SELECT EXISTS(SELECT 1 FROM NVTX_EVENTS WHERE globalTid IS NULL) AS x",
                           &st, &error) &&
                     st.Step() && st.Int(0) != 0;
  }
  // FindMaxTime's: the ranges' and marks' starts, the ranges' ends.
  const std::string queries[] = {
      "SELECT MAX(\"start\"), NULL FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)",
      "SELECT NULL, MAX(\"end\") FROM NVTX_EVENTS WHERE eventType IN (59, 60)"};
  for (const std::string& sql : queries) {
    std::string error;
    SqliteStatement st;
    if (!Query(sql, &st, &error) || !st.Step()) continue;
    for (int i = 0; i < 2; ++i)
      if (!st.IsNull(i)) nvtx_max_time_ = std::max(nvtx_max_time_, Clamp(st.Int(i)));
  }
  // ReadMeta's, unless rows without a thread may be filed under the only
  // process (OnlyProcessForNullNvtx, which needs the prescans' processes).
  if (!nvtx_null_tid_) {
    nvtx_meta_ok_ = ReadNvtxMeta(&nvtx_meta_error_);
    nvtx_meta_read_ = true;
  }
}

bool NsysStreamer::ReadNvtxMeta(std::string* error) {
  // The processes of NVTX_EVENTS, the names of their domains and
  // categories, the events skipped (ReadMeta's part of the table).
  {
    SqliteStatement st;
    if (!Query("SELECT DISTINCT " + NvtxPid() + " FROM NVTX_EVENTS", &st, error)) return false;
    while (st.Step()) nvtx_pids_.insert(static_cast<uint32_t>(st.Int(0)));
    if (!Finish(st, "processes", error)) return false;
  }
  SqliteStatement nv;
  const std::string q =
      WithColumns(Select(kNvtx, {"start", "end", "eventType", "globalTid"}, NvtxOptionalColumns()),
                  NvtxPid() + " AS pid_") +
      " WHERE eventType NOT IN (34, 59, 60)";
  if (!Query(q, &nv, error)) return false;
  const NvtxColumns c(nv);
  const int pid = nv.Column("pid_");
  while (nv.Step()) {
    ProcessMeta& m = meta_[static_cast<uint32_t>(nv.Int(pid))];
    const uint32_t domain = static_cast<uint32_t>(nv.Int(c.domain));
    const int64_t type = nv.Int(c.type);
    if (type == kNvtxDomainCreate) {
      if (domain != 0) m.domain_names[domain] = NvtxText(nv, c);
    } else if (type == kNvtxCategory) {
      m.category_names[{domain, static_cast<uint32_t>(nv.Int(c.category))}] = NvtxText(nv, c);
    } else {
      ++m.skipped_nvtx;
    }
  }
  if (!Finish(nv, kNvtx, error)) return false;
  if (db_.HasColumn("DomainStrings", "id") && db_.HasColumn("DomainStrings", "domainName")) {
    SqliteStatement ds;
    std::string ignored;
    if (Query(Select("DomainStrings", {"id", "domainName"}), &ds, &ignored)) {
      const int id_col = ds.Column("id"), name_col = ds.Column("domainName");
      while (ds.Step()) {
        const uint32_t id = static_cast<uint32_t>(ds.Int(id_col));
        if (id != 0) fallback_domains_.emplace_back(id, strings_->Intern(ds.Text(name_col)));
      }
    }
  }
  return true;
}

bool NsysStreamer::ReadMeta(std::string* error) {
  // Processes: every pid of a table the importer reads, in pid order.
  std::set<uint32_t> pids;
  for (const auto& [table, scan] : prescans_) pids.insert(scan->pids.begin(), scan->pids.end());
  if (db_.HasTable(kNvtx)) {
    // Read beside the prescans when it could be (ReadNvtxEarly), else now.
    if (!nvtx_meta_read_) {
      nvtx_meta_ok_ = ReadNvtxMeta(&nvtx_meta_error_);
      nvtx_meta_read_ = true;
    }
    if (!nvtx_meta_ok_) {
      *error = nvtx_meta_error_;
      return false;
    }
    pids.insert(nvtx_pids_.begin(), nvtx_pids_.end());
  }
  for (uint32_t pid : pids) {
    pids_.push_back(pid);
    meta_[pid];
  }

  if (auto sync = prescans_.find(kSync); sync != prescans_.end()) {
    for (const auto& [pid, rows] : sync->second->rows_by_pid) meta_[pid].syncs = rows;
  }
  if (db_.HasColumn("ThreadNames", "nameId") && db_.HasColumn("ThreadNames", "globalTid")) {
    SqliteStatement tn;
    std::string ignored;
    if (Query(Select("ThreadNames", {"nameId", "globalTid"}), &tn, &ignored)) {
      const int name = tn.Column("nameId"), tid = tn.Column("globalTid");
      while (tn.Step()) {
        if (tn.IsNull(tid)) continue;
        auto it = meta_.find(NsysPid(tn.Int(tid)));
        if (it != meta_.end())
          it->second.thread_names.emplace_back(NsysTid(tn.Int(tid)), String(tn.Int(name)));
      }
    }
  }
  if (db_.HasColumn("PROCESSES", "globalPid") && db_.HasColumn("PROCESSES", "name")) {
    SqliteStatement pr;
    std::string ignored;
    if (Query(Select("PROCESSES", {"globalPid", "name"}), &pr, &ignored)) {
      const int pid = pr.Column("globalPid"), name = pr.Column("name");
      while (pr.Step()) {
        if (pr.IsNull(pid) || pr.IsNull(name)) continue;
        auto it = meta_.find(NsysPid(pr.Int(pid)));
        if (it != meta_.end()) it->second.name = std::string(pr.Text(name));
      }
    }
  }
  if (db_.HasColumn("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) {
    SqliteStatement ss;
    std::string ignored;
    if (Query(Select("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}), &ss, &ignored) &&
        ss.Step() && !ss.IsNull(0)) {
      session_start_ = static_cast<uint64_t>(ss.Int(0));
    }
  }
  target_ = ReadTargetInfo(false);  // the devices: from the prescans
  for (const auto& [table, scan] : prescans_) {
    for (const auto& [pid, device] : scan->devices) NoteDevice(pid, device, &target_);
  }
  return true;
}

bool NsysStreamer::PrescanTables(std::string* error) {
  // Exports are mostly written in start order per process; checking costs
  // one read of a few integer columns, far less than SQLite's sort (ORDER BY
  // on 10 M rows spills to a temp file) or than a temp table of correlation
  // ids probed per API row. The same read answers what SQL would scan each
  // table again for (rows without a process, the last timestamp, the
  // processes, their devices and sync counts). The tables side by side, on
  // threads.
  std::vector<Prescan*> scans;
  for (const auto& [t, pid_column, kind] : {std::tuple{kRuntime, "globalTid", Prescan::kPlain},
                                            std::tuple{kKernel, "globalPid", Prescan::kGpu},
                                            std::tuple{kMemcpy, "globalPid", Prescan::kGpu},
                                            std::tuple{kMemset, "globalPid", Prescan::kGpu},
                                            std::tuple{kSync, "globalPid", Prescan::kCounted}}) {
    if (!db_.HasTable(t)) continue;
    auto scan = std::make_unique<Prescan>(t, pid_column, kind);
    std::vector<std::string_view> names = {pid_column, "start", "end"};
    if (kind == Prescan::kGpu) {
      names.push_back("correlationId");
      names.push_back("deviceId");
    }
    scan->sql = Select(t, names);
    // A table the scan cannot read is read through SQL on the thread.
    ScanRead read;
    read.file = file_;
    read.names = names;
    read.sql = scan->sql;
    read.nulls = {pid_column, "deviceId"};
    scan->scanning = StartScanOf(t, std::move(read), &scan->rows);
    scans.push_back(scan.get());
    prescans_[t] = std::move(scan);
  }
  // Every table on a thread of its own, this thread reading NVTX_EVENTS
  // meanwhile; a table whose thread cannot be had is read here after.
  std::vector<std::thread> threads;
  std::vector<Prescan*> here;
  threads.reserve(scans.size());  // no allocation once threads run
  here.reserve(scans.size());
  for (Prescan* scan : scans) {
    try {
      threads.emplace_back([scan, path = db_.path()] { scan->RunGuarded(path); });
    } catch (const std::system_error&) {
      here.push_back(scan);
    }
  }
  try {
    ReadNvtxEarly();
    for (Prescan* scan : here) scan->RunGuarded(db_.path());
  } catch (...) {
    // Thrown on to the caller once the threads are joined (a joinable
    // std::thread destroyed would end the process).
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
  for (Prescan* scan : scans) {
    if (!scan->error.empty()) {
      *error = scan->error;
      return false;
    }
    if (!scan->fits) use_bits_ = false;
    for (auto& [pid, bits] : scan->bits) gpu_bits_[pid].Merge(bits);
    scan->bits.clear();
  }
  return true;
}

bool NsysStreamer::OpenCursor(Cursor<SqliteStatement>* c, const std::string& sql,
                              std::string* error) {
  if (!Query(sql, &c->st, error)) return false;
  c->pid_col = c->st.Column("pid_");
  c->time_col = c->st.Column("start");
  c->Next();
  if (!c->st.ok()) {
    *error = db_.path() + ": error sorting a table: " + db_.LastError();
    return false;
  }
  return true;
}

// Blocks of rows (2048 each) a table's reading runs ahead of the sweep.
constexpr size_t kQueuedBlocks = 4;

bool NsysStreamer::StartCursor(Cursor<PrefetchedRows>* c, const char* table, const char* pid_column,
                               const std::vector<std::string_view>& required,
                               const std::vector<std::string_view>& optional,
                               const std::vector<std::string_view>& nulls, std::string* error) {
  auto scan = prescans_.find(table);
  const bool in_order = scan != prescans_.end() && scan->second->sorted;
  std::vector<std::string_view> names(required);
  names.insert(names.end(), optional.begin(), optional.end());
  // Read straight from the file, decoded on a thread a few blocks ahead of
  // the sweep (the aggregation of the rows costs this thread as much as
  // their decoding), the rest through SQL there should the scan give up.
  ScanRead read;
  read.file = file_;
  read.names = names;
  read.sql = Select(table, required, optional);
  read.db = &db_;
  read.nulls = nulls;
  read.max_queued = kQueuedBlocks;
  if (in_order && StartScanOf(table, std::move(read), &c->st)) {
    c->global_col = c->st.Column(pid_column);
  } else {
    const std::string sql =
        WithColumns(Select(table, required, optional), PidOf(table, pid_column) + " AS pid_") +
        (in_order ? "" : " ORDER BY pid_, \"start\"");
    if (!c->st.Open(db_.path(), sql, error)) return false;
    for (std::string_view n : nulls) c->st.TrackNulls(c->st.Column(n));
    c->pid_col = c->st.Column("pid_");
    c->st.Start();
  }
  c->time_col = c->st.Column("start");
  c->Next();
  if (!c->st.ok()) {
    *error = db_.path() + ": error sorting a table: " + c->st.error();
    return false;
  }
  return true;
}

bool NsysStreamer::OpenCursors(std::string* error) {
  const std::string order = " ORDER BY pid_, \"start\"";
  if (db_.HasTable(kNvtx)) {
    // Start order, the enclosing range first (range_nesting.h); an unclosed
    // range ends at the last timestamp.
    const std::string sql =
        WithColumns(
            Select(kNvtx, {"start", "end", "eventType", "globalTid"}, NvtxOptionalColumns()),
            NvtxPid() + " AS pid_, COALESCE(\"" + std::string(kNvtx) + "\".\"end\", " +
                std::to_string(max_time_) + ") AS end_sort_") +
        " WHERE eventType IN (34, 59, 60)" + order + ", end_sort_ DESC";
    if (!OpenCursor(&nvtx_, sql, error)) return false;
  }
  if (db_.HasTable(kRuntime)) {
    if (!StartCursor(&api_, kRuntime, "globalTid",
                     {"start", "end", "globalTid", "correlationId", "nameId"},
                     {"eventClass", "returnValue"}, {"eventClass"} /* ApiDomainOf */, error)) {
      return false;
    }
    const PrefetchedRows& st = api_.st;
    api_cols_ = {st.Column("start"),         st.Column("end"),    st.Column("globalTid"),
                 st.Column("correlationId"), st.Column("nameId"), st.Column("eventClass"),
                 st.Column("returnValue")};
  }
  const std::vector<std::string_view> activity = {
      "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"};
  auto with = [&](std::initializer_list<std::string_view> required) {
    std::vector<std::string_view> cols = activity;
    cols.insert(cols.end(), required.begin(), required.end());
    return cols;
  };
  if (db_.HasTable(kKernel)) {
    if (!StartCursor(&kernels_, kKernel, "globalPid", with({"demangledName"}),
                     {"graphId", "graphNodeId"}, {}, error)) {
      return false;
    }
    kernel_cols_.emplace(kernels_.st);
  }
  if (db_.HasTable(kMemcpy)) {
    if (!StartCursor(&memcpys_, kMemcpy, "globalPid", with({"bytes", "copyKind"}),
                     {"srcKind", "dstKind"}, {}, error)) {
      return false;
    }
    memcpy_cols_.emplace(memcpys_.st);
  }
  if (db_.HasTable(kMemset)) {
    if (!StartCursor(&memsets_, kMemset, "globalPid", with({"bytes"}), {"value"}, {}, error)) {
      return false;
    }
    memset_cols_.emplace(memsets_.st);
  }
  return true;
}

void NsysStreamer::Flush() {
  if (pending_records_ == 0) return;
  cb_.on_batch(*proc_);
  proc_->ranges.clear();
  proc_->marks.clear();
  proc_->kernels.clear();
  proc_->memcpys.clear();
  proc_->memsets.clear();
  proc_->api_calls.clear();
  proc_->launches.clear();
  pending_records_ = 0;
}

void NsysStreamer::EmitClosedBefore(uint64_t t) {
  // A range ending at t is handed out only once the sweep is past t: a
  // zero-length range at t still takes launches at t (InnermostOpenAt).
  while (!closing_.empty() && closing_.top().end_ns < t) {
    proc_->ranges.push_back(closing_.top());
    closing_.pop();
    ++pending_records_;
  }
}

void NsysStreamer::OnRange(const NvtxColumns& c) {
  const SqliteStatement& st = nvtx_.st;
  RangeRecord r;
  r.kind = st.Int(c.type) == kNvtxPushPopRange ? RangeKind::kPushPop : RangeKind::kStartEnd;
  r.start_ns = Clamp(st.Int(c.start));
  if (st.IsNull(c.end)) {
    r.flags |= kRangeFlagUnclosed;
    r.end_ns = std::max(max_time_, r.start_ns);
    ++unclosed_;
  } else {
    r.end_ns = Clamp(st.Int(c.end));
  }
  r.thread = st.IsNull(c.tid) ? 0 : builder_->Thread(NsysTid(st.Int(c.tid)));
  r.end_thread = st.IsNull(c.end_tid) ? 0 : builder_->Thread(NsysTid(st.Int(c.end_tid)));
  r.name = NvtxText(st, c);
  r.domain = static_cast<uint32_t>(st.Int(c.domain));
  r.category = static_cast<uint32_t>(st.Int(c.category));
  r.color = static_cast<uint32_t>(st.Int(c.color));
  ReadNvtxPayload(st, c, &r.payload);
  // AssignRangeIdsAndNesting, one range at a time.
  r.id = next_range_id_++;
  if (r.kind == RangeKind::kPushPop) {
    std::vector<OpenRange>& stack = stacks_[r.thread];
    while (!stack.empty() && stack.back().end <= r.start_ns) stack.pop_back();
    if (!stack.empty()) {
      if (stack.back().end < r.end_ns) ++partial_overlaps_;
      r.parent_id = stack.back().id;
      r.depth = stack.back().depth + 1;
    }
    stack.push_back({r.id, r.start_ns, r.end_ns, r.depth});
  }
  ++by_kind_[kRanges];
  closing_.push(std::move(r));
}

void NsysStreamer::OnMark(const NvtxColumns& c) {
  const SqliteStatement& st = nvtx_.st;
  MarkRecord m;
  m.time_ns = Clamp(st.Int(c.start));
  m.thread = st.IsNull(c.tid) ? 0 : builder_->Thread(NsysTid(st.Int(c.tid)));
  m.name = NvtxText(st, c);
  m.domain = static_cast<uint32_t>(st.Int(c.domain));
  m.category = static_cast<uint32_t>(st.Int(c.category));
  m.color = static_cast<uint32_t>(st.Int(c.color));
  proc_->marks.push_back(m);
  ++by_kind_[kMarks];
  ++pending_records_;
}

void NsysStreamer::OnApi() {
  const PrefetchedRows& st = api_.st;
  const ApiCols& c = api_cols_;
  ApiRecord a;
  a.start_ns = Clamp(st.Int(c.start));
  a.end_ns = Clamp(st.Int(c.end));
  a.thread = builder_->Thread(NsysTid(st.Int(c.tid)));
  a.correlation_id = static_cast<uint64_t>(st.Int(c.corr));
  a.name = String(st.Int(c.name));
  a.domain = ApiDomainOf(!st.IsNull(c.event_class), st.Int(c.event_class), a.name);
  a.return_value = static_cast<uint32_t>(st.Int(c.ret));
  proc_->api_calls.push_back(a);
  ++by_kind_[kApiCalls];
  ++pending_records_;
  if (a.correlation_id == 0 || pid_bits_ == nullptr || !pid_bits_->Has(a.correlation_id)) return;
  LaunchRecord l;
  l.correlation_id = a.correlation_id;
  l.time_ns = a.start_ns;
  l.thread = a.thread;
  l.domain = a.domain;
  // RangeIndex::InnermostOpenAt: the stack holds the chain of the last
  // range started at or before t; the innermost one still open wins.
  if (auto it = stacks_.find(a.thread); it != stacks_.end()) {
    const uint64_t t = a.start_ns;
    for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
      if ((r->start <= t && t < r->end) || (r->start == t && r->end == t)) {
        l.range_id = r->id;
        break;
      }
    }
  }
  proc_->launches.push_back(l);
  ++pending_records_;
}

uint32_t NsysStreamer::StreamOf(const PrefetchedRows& st, const ActivityColumns& c) {
  return builder_->Stream(static_cast<uint32_t>(st.Int(c.device)),
                          static_cast<uint32_t>(st.Int(c.context)),
                          static_cast<uint64_t>(st.Int(c.stream)));
}

void NsysStreamer::OnKernel() {
  const PrefetchedRows& st = kernels_.st;
  const OpCols& c = *kernel_cols_;
  const ActivityColumns& a = c.a;
  KernelRecord k;
  k.start_ns = Clamp(st.Int(a.start));
  k.end_ns = Clamp(st.Int(a.end));
  k.correlation_id = static_cast<uint64_t>(st.Int(a.correlation));
  k.stream = StreamOf(st, a);
  k.name = String(st.Int(c.name));
  k.graph_id = static_cast<uint64_t>(st.Int(c.graph));
  k.graph_node_id = static_cast<uint64_t>(st.Int(c.node));
  proc_->kernels.push_back(k);
  ++by_kind_[kKernels];
  ++pending_records_;
}

void NsysStreamer::OnMemcpy() {
  const PrefetchedRows& st = memcpys_.st;
  const OpCols& c = *memcpy_cols_;
  const ActivityColumns& a = c.a;
  MemcpyRecord m;
  m.start_ns = Clamp(st.Int(a.start));
  m.end_ns = Clamp(st.Int(a.end));
  m.correlation_id = static_cast<uint64_t>(st.Int(a.correlation));
  m.stream = StreamOf(st, a);
  m.bytes = static_cast<uint64_t>(st.Int(c.bytes));
  const int64_t kind = st.Int(c.copy_kind);
  m.copy_kind = kind >= 0 && kind <= 10 ? static_cast<uint32_t>(kind) : 0;
  m.flags = (static_cast<uint32_t>(st.Int(c.src) & 0xFF) << 8) |
            (static_cast<uint32_t>(st.Int(c.dst) & 0xFF) << 16);
  proc_->memcpys.push_back(m);
  ++by_kind_[kMemcpys];
  ++pending_records_;
}

void NsysStreamer::OnMemset() {
  const PrefetchedRows& st = memsets_.st;
  const OpCols& c = *memset_cols_;
  const ActivityColumns& a = c.a;
  MemsetRecord m;
  m.start_ns = Clamp(st.Int(a.start));
  m.end_ns = Clamp(st.Int(a.end));
  m.correlation_id = static_cast<uint64_t>(st.Int(a.correlation));
  m.stream = StreamOf(st, a);
  m.bytes = static_cast<uint64_t>(st.Int(c.bytes));
  m.value = static_cast<uint32_t>(st.Int(c.value));
  proc_->memsets.push_back(m);
  ++by_kind_[kMemsets];
  ++pending_records_;
}

void NsysStreamer::Sweep(uint32_t pid) {
  ProcessTrace process;
  ProcessBuilder builder(&process);
  proc_ = &process;
  builder_ = &builder;
  pending_records_ = 0;
  next_range_id_ = 1;
  stacks_.clear();
  unclosed_ = partial_overlaps_ = 0;
  std::fill(std::begin(by_kind_), std::end(by_kind_), 0);
  ProcessMeta& meta = meta_[pid];
  auto bits = gpu_bits_.find(pid);
  pid_bits_ = bits == gpu_bits_.end() ? nullptr : &bits->second;
  process.header.pid = pid;
  process.header.source = "nsys-sqlite";
  process.header.clock_description = "nsys session clock (ns since session start)";
  if (!meta.name.empty()) process.header.command_line = {meta.name};
  if (session_start_) {
    process.header.session_start_wall_ns = *session_start_;
    process.header.session_start_trace_ns = 0;
  }
  FillHeader(target_, pid, &process.header);
  process.source_file = db_.path();
  process.domain_names = meta.domain_names;
  for (const auto& [id, name] : fallback_domains_) process.domain_names.emplace(id, name);
  process.category_names = meta.category_names;

  std::optional<NvtxColumns> nvtx_cols;
  if (nvtx_.st.valid()) nvtx_cols.emplace(nvtx_.st);
  int nvtx_type = nvtx_.st.valid() ? nvtx_.st.Column("eventType") : -1;
  // Ties: ranges opening at t before the calls at t (start <= t), calls
  // before the GPU work they launched.
  CursorState* order[] = {&nvtx_, &api_, &kernels_, &memcpys_, &memsets_};
  while (true) {
    CursorState* next = nullptr;
    for (CursorState* c : order) {
      if (c->has && c->pid == pid && (next == nullptr || c->time < next->time)) next = c;
    }
    if (next == nullptr) break;
    EmitClosedBefore(next->time);
    if (next == &nvtx_) {
      if (nvtx_.st.Int(nvtx_type) == kNvtxMark) {
        OnMark(*nvtx_cols);
      } else {
        OnRange(*nvtx_cols);
      }
      nvtx_.Next();
    } else if (next == &api_) {
      OnApi();
      api_.Next();
    } else if (next == &kernels_) {
      OnKernel();
      kernels_.Next();
    } else if (next == &memcpys_) {
      OnMemcpy();
      memcpys_.Next();
    } else {
      OnMemset();
      memsets_.Next();
    }
    if (pending_records_ >= batch_) Flush();
  }
  EmitClosedBefore(UINT64_MAX);
  while (!closing_.empty()) {  // ranges ending at UINT64_MAX
    process.ranges.push_back(closing_.top());
    closing_.pop();
    ++pending_records_;
  }
  for (const auto& [tid, name] : meta.thread_names) builder.NameThread(tid, name);
  Flush();
  if (unclosed_ != 0) process.counters["import_unclosed_ranges"] += unclosed_;
  if (partial_overlaps_ != 0)
    process.counters["import_partially_overlapping_ranges"] += partial_overlaps_;
  if (nvtx_without_tid_ != 0 && nvtx_null_pid_ == pid)
    process.counters["import_nvtx_without_tid"] += nvtx_without_tid_;
  if (meta.skipped_nvtx != 0) process.counters["import_nvtx_events_skipped"] += meta.skipped_nvtx;
  FooterInfo footer;
  footer.session_end_trace_ns = max_time_;
  for (size_t i = 0; i < std::size(kKinds); ++i)
    footer.records_by_kind.emplace_back(kKinds[i], by_kind_[i]);
  footer.records_by_kind.emplace_back("syncs", meta.syncs);
  process.footer = footer;
  cb_.on_process(process);
  proc_ = nullptr;
  builder_ = nullptr;
}

bool NsysStreamer::Run(const std::string& path, std::string* error, bool* unsupported) {
  if (!OpenExport(path, error) || !CheckSchema(error)) return false;
  file_ = MapForScan();
  if (!PrescanTables(error)) return false;
  std::string table;
  if (HasNullProcess(&table) && (table != kNvtx || !OnlyProcessForNullNvtx())) {
    // The importer files such rows under the only process or pid 0,
    // depending on the order it reads the tables.
    *error = path + ": table " + table + " has rows without a process id";
    if (unsupported != nullptr) *unsupported = true;
    return false;
  }
  FindMaxTime();
  if (!ReadMeta(error)) return false;
  if (!use_bits_) {
    *error = path + ": correlation ids too large to keep one bit each";
    if (unsupported != nullptr) *unsupported = true;
    return false;
  }
  if (!OpenCursors(error)) return false;
  for (uint32_t pid : pids_) Sweep(pid);
  if (nvtx_.st.valid() && !nvtx_.st.ok()) {
    *error = path + ": error reading the export: " + db_.LastError();
    return false;
  }
  for (Cursor<PrefetchedRows>* c : {&api_, &kernels_, &memcpys_, &memsets_}) {
    if (c->st.valid() && !c->st.ok()) {
      *error = path + ": error reading the export: " + c->st.error();
      return false;
    }
  }
  return true;
}

}  // namespace

bool StreamNsysSqlite(const std::string& path, StringTable* strings,
                      const NsysStreamCallbacks& callbacks, std::string* error, bool* unsupported,
                      size_t batch_records) {
  if (unsupported != nullptr) *unsupported = false;
  NsysStreamer streamer(strings, callbacks, batch_records);
  return streamer.Run(path, error, unsupported);
}

}  // namespace tracer::analysis::importers
