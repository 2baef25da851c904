#include "libtracer/analysis/export/sqlite_export.h"

#include <sqlite3.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/tables/demangle.h"

namespace tracer::analysis::exporters {
namespace {

// Column names and types as nsys 2026.2 (export schema 3.25) writes them.
constexpr const char* kSchema = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
    shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
    blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
    graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER, qmdBulkReleaseDone INTEGER,
    qmdPreexitDone INTEGER, qmdLastCtaDone INTEGER, graphId INTEGER, clusterX INTEGER,
    clusterY INTEGER, clusterZ INTEGER, clusterSchedulingPolicy INTEGER,
    maxPotentialClusterSize INTEGER, maxActiveClusters INTEGER,
    sharedMemoryRequestedPercentage INTEGER, tensorSizeMinusOneElements TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
    deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
    srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
    graphNodeId INTEGER, virtualAddress INTEGER, copyCount INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
    graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
    correlationId INTEGER, globalPid INTEGER, deprecatedSyncType INTEGER,
    syncType INTEGER NOT NULL, eventId INTEGER NOT NULL, eventSyncId INTEGER);
CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
    textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
    doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
    jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
-- Not an nsys table: the recorded name of each NVTX_EVENTS row whose text is
-- a normalized range name (tracer report --help, "Range names").
CREATE TABLE TRACER_NVTX_RAW_TEXT (nvtxRowId INTEGER NOT NULL PRIMARY KEY, rawText TEXT NOT NULL);
CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL,
    processId INTEGER NOT NULL, contextId INTEGER NOT NULL, priority INTEGER NOT NULL,
    flag INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES
    (33, 'NvtxCategory', 'NvtxCategory'), (34, 'NvtxMark', 'NvtxMark'),
    (59, 'NvtxPushPopRange', 'NvtxPushPopRange'), (60, 'NvtxStartEndRange', 'NvtxStartEndRange'),
    (75, 'NvtxDomainCreate', 'NvtxDomainCreate');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES
    (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'),
    (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES
    (0, 'CUDA_MEMCPY_OPER_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_OPER_HTOD', 'Host-to-Device'),
    (2, 'CUDA_MEMCPY_OPER_DTOH', 'Device-to-Host'), (3, 'CUDA_MEMCPY_OPER_HTOA', 'Host-to-Array'),
    (4, 'CUDA_MEMCPY_OPER_ATOH', 'Array-to-Host'), (5, 'CUDA_MEMCPY_OPER_ATOA', 'Array-to-Array'),
    (6, 'CUDA_MEMCPY_OPER_ATOD', 'Array-to-Device'), (7, 'CUDA_MEMCPY_OPER_DTOA', 'Device-to-Array'),
    (8, 'CUDA_MEMCPY_OPER_DTOD', 'Device-to-Device'), (9, 'CUDA_MEMCPY_OPER_HTOH', 'Host-to-Host'),
    (10, 'CUDA_MEMCPY_OPER_PTOP', 'Peer-to-Peer');
)SQL";

class Writer {
 public:
  explicit Writer(sqlite3* db) : db_(db) {}
  ~Writer() {
    for (auto* s : statements_) sqlite3_finalize(s);
  }

  bool Exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      error_ = msg ? msg : "unknown error";
      sqlite3_free(msg);
      return false;
    }
    return true;
  }

  sqlite3_stmt* Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      error_ = sqlite3_errmsg(db_);
      return nullptr;
    }
    statements_.push_back(s);
    return s;
  }

  // Binds values 1..n (nullopt-like: INT64_MIN = NULL) and steps.
  bool Row(sqlite3_stmt* s, std::initializer_list<int64_t> values) {
    int i = 1;
    for (int64_t v : values) {
      if (v == kNull) {
        sqlite3_bind_null(s, i++);
      } else {
        sqlite3_bind_int64(s, i++, v);
      }
    }
    return Step(s);
  }

  bool Step(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);  // every statement binds all its parameters each row
    if (rc != SQLITE_DONE) {
      error_ = sqlite3_errmsg(db_);
      return false;
    }
    return true;
  }

  // StringIds id of s, inserting it once.
  int64_t StringId(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const int64_t id = static_cast<int64_t>(ids_.size());
    ids_.emplace(std::string(s), id);
    return id;
  }

  bool WriteStrings() {
    sqlite3_stmt* s = Prepare("INSERT INTO StringIds VALUES (?, ?)");
    if (!s) return false;
    for (const auto& [value, id] : ids_) {
      sqlite3_bind_int64(s, 1, id);
      sqlite3_bind_text(s, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
      if (!Step(s)) return false;
    }
    return true;
  }

  int64_t LastRowId() const { return sqlite3_last_insert_rowid(db_); }
  const std::string& error() const { return error_; }
  static constexpr int64_t kNull = INT64_MIN;

 private:
  sqlite3* db_;
  std::vector<sqlite3_stmt*> statements_;
  std::unordered_map<std::string, int64_t> ids_;
  std::string error_;
};

constexpr int64_t kNull = Writer::kNull;

// nsys shortName: the unqualified function name ("elementwise_kernel").
std::string UnqualifiedName(std::string_view name) {
  std::string s = ShortKernelName(name);
  const size_t colon = s.rfind("::");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

std::string UtcText(uint64_t wall_ns) {
  const std::time_t secs = static_cast<std::time_t>(wall_ns / 1000000000ull);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

// Writes one process's rows into every table. The tables are written one
// method each, in the order WriteProcess lists them.
class ProcessWriter {
 public:
  ProcessWriter(Writer& w, const Trace& trace, const ProcessTrace& p,
                std::unordered_map<uint32_t, std::array<int64_t, 3>>* kernel_names)
      : w_(w),
        trace_(trace),
        p_(p),
        pid_(p.header.pid),
        global_pid_(NsysGlobalId(pid_, 0)),
        kernel_names_(kernel_names) {}

  bool WriteProcessThreadsAndStreams();
  bool WriteKernels();
  bool WriteApiCalls();
  bool WriteMemcpys();
  bool WriteMemsets();
  bool WriteSyncs();
  bool WriteNvtx();

 private:
  int64_t TidOf(uint32_t thread) const {
    if (thread < p_.threads.size() && p_.threads[thread].defined) {
      return NsysGlobalId(pid_, p_.threads[thread].os_tid);
    }
    return thread == 0 ? kNull : NsysGlobalId(pid_, thread);
  }
  const StreamInfo* StreamOf(uint32_t stream) const {
    static const StreamInfo kNone;
    return stream < p_.streams.size() && p_.streams[stream].defined ? &p_.streams[stream] : &kNone;
  }
  // Demangled, short and mangled StringIds of a kernel name, cached per
  // process.
  const std::array<int64_t, 3>& KernelNames(uint32_t name);

  Writer& w_;
  const Trace& trace_;
  const ProcessTrace& p_;
  const uint64_t pid_;
  const int64_t global_pid_;
  std::unordered_map<uint32_t, std::array<int64_t, 3>>* kernel_names_;
};

bool ProcessWriter::WriteProcessThreadsAndStreams() {
  sqlite3_stmt* s = w_.Prepare("INSERT INTO PROCESSES VALUES (?, ?, ?)");
  if (!s) return false;
  std::string name = p_.header.command_line.empty() ? "" : p_.header.command_line[0];
  sqlite3_bind_int64(s, 1, global_pid_);
  sqlite3_bind_int64(s, 2, static_cast<int64_t>(pid_));
  sqlite3_bind_text(s, 3, name.c_str(), -1, SQLITE_TRANSIENT);
  if (!w_.Step(s)) return false;
  sqlite3_stmt* t = w_.Prepare("INSERT INTO ThreadNames VALUES (?, NULL, ?)");
  if (!t) return false;
  for (uint32_t i = 0; i < p_.threads.size(); ++i) {
    const ThreadInfo& th = p_.threads[i];
    if (!th.defined || th.name == 0) continue;
    if (!w_.Row(t, {w_.StringId(trace_.strings.Get(th.name)), TidOf(i)})) return false;
  }
  sqlite3_stmt* st = w_.Prepare("INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?, 0, 0, ?, ?, 0, 0)");
  if (!st) return false;
  for (const StreamInfo& si : p_.streams) {
    if (!si.defined) continue;
    if (!w_.Row(st, {static_cast<int64_t>(si.stream), static_cast<int64_t>(pid_),
                     static_cast<int64_t>(si.context)})) {
      return false;
    }
  }
  return true;
}

const std::array<int64_t, 3>& ProcessWriter::KernelNames(uint32_t name) {
  auto it = kernel_names_->find(name);
  if (it == kernel_names_->end()) {
    const std::string_view raw = trace_.strings.Get(name);
    it = kernel_names_
             ->emplace(name,
                       std::array<int64_t, 3>{w_.StringId(Demangle(raw)),
                                              w_.StringId(UnqualifiedName(raw)), w_.StringId(raw)})
             .first;
  }
  return it->second;
}

bool ProcessWriter::WriteKernels() {
  sqlite3_stmt* s = w_.Prepare(
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName, shortName, mangledName, registersPerThread, "
      "gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
      "localMemoryPerThread, localMemoryTotal, gridId, graphNodeId, graphId, "
      "tensorSizeMinusOneElements) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?, ?, 0, 0, ?, ?, ?, '[]')");
  if (!s) return false;
  int64_t grid_id = 0;
  for (const KernelRecord& k : p_.kernels) {
    const std::array<int64_t, 3>& names = KernelNames(k.name);
    LaunchConfigRecord lc;
    if (k.launch_config < p_.launch_configs.size()) lc = p_.launch_configs[k.launch_config];
    const StreamInfo* si = StreamOf(k.stream);
    if (!w_.Row(s, {static_cast<int64_t>(k.start_ns),
                    static_cast<int64_t>(k.end_ns),
                    si->device,
                    si->context,
                    static_cast<int64_t>(si->stream),
                    static_cast<int64_t>(k.correlation_id),
                    global_pid_,
                    names[0],
                    names[1],
                    names[2],
                    lc.registers_per_thread,
                    lc.grid[0],
                    lc.grid[1],
                    lc.grid[2],
                    lc.block[0],
                    lc.block[1],
                    lc.block[2],
                    lc.static_shared_memory,
                    lc.dynamic_shared_memory,
                    ++grid_id,
                    k.graph_node_id ? static_cast<int64_t>(k.graph_node_id) : kNull,
                    k.graph_id ? static_cast<int64_t>(k.graph_id) : kNull})) {
      return false;
    }
  }
  return true;
}

// Runtime and driver API calls.
bool ProcessWriter::WriteApiCalls() {
  sqlite3_stmt* s =
      w_.Prepare("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, ?, NULL)");
  if (!s) return false;
  std::unordered_map<uint64_t, int64_t> name_ids;
  for (const ApiRecord& a : p_.api_calls) {
    const uint64_t key =
        (static_cast<uint64_t>(a.domain) << 40) | (a.name ? (uint64_t{1} << 39) | a.name : a.cbid);
    auto it = name_ids.find(key);
    if (it == name_ids.end()) {
      std::string name =
          a.name ? std::string(trace_.strings.Get(a.name))
                 : (a.domain == ApiDomain::kDriver ? "cuda driver cbid " : "cuda runtime cbid ") +
                       std::to_string(a.cbid);
      it = name_ids.emplace(key, w_.StringId(name)).first;
    }
    if (!w_.Row(s, {static_cast<int64_t>(a.start_ns), static_cast<int64_t>(a.end_ns),
                    a.domain == ApiDomain::kDriver ? 1 : 0, TidOf(a.thread),
                    static_cast<int64_t>(a.correlation_id), it->second,
                    static_cast<int64_t>(a.return_value)})) {
      return false;
    }
  }
  return true;
}

// Memory kinds come from flags bits 8-15 / 16-23.
bool ProcessWriter::WriteMemcpys() {
  sqlite3_stmt* s = w_.Prepare(
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, copyCount) VALUES (?, ?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, 1)");
  if (!s) return false;
  for (const MemcpyRecord& m : p_.memcpys) {
    const StreamInfo* si = StreamOf(m.stream);
    if (!w_.Row(s,
                {static_cast<int64_t>(m.start_ns), static_cast<int64_t>(m.end_ns), si->device,
                 si->context, static_cast<int64_t>(si->stream),
                 static_cast<int64_t>(m.correlation_id), global_pid_, static_cast<int64_t>(m.bytes),
                 m.copy_kind, (m.flags >> 8) & 0xFF, (m.flags >> 16) & 0xFF})) {
      return false;
    }
  }
  return true;
}

bool ProcessWriter::WriteMemsets() {
  sqlite3_stmt* ms = w_.Prepare(
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, value, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!ms) return false;
  for (const MemsetRecord& m : p_.memsets) {
    const StreamInfo* si = StreamOf(m.stream);
    if (!w_.Row(ms, {static_cast<int64_t>(m.start_ns), static_cast<int64_t>(m.end_ns), si->device,
                     si->context, static_cast<int64_t>(si->stream),
                     static_cast<int64_t>(m.correlation_id), global_pid_, m.value,
                     static_cast<int64_t>(m.bytes)})) {
      return false;
    }
  }
  return true;
}

bool ProcessWriter::WriteSyncs() {
  sqlite3_stmt* sy = w_.Prepare(
      "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, "
      "streamId, correlationId, globalPid, syncType, eventId) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
      "?)");
  if (!sy) return false;
  for (const SyncRecord& y : p_.syncs) {
    const StreamInfo* si = StreamOf(y.stream);
    if (!w_.Row(sy, {static_cast<int64_t>(y.start_ns), static_cast<int64_t>(y.end_ns), si->device,
                     y.context, y.stream ? static_cast<int64_t>(si->stream) : 0,
                     static_cast<int64_t>(y.correlation_id), global_pid_, y.type, y.event})) {
      return false;
    }
  }
  return true;
}

// One NVTX_EVENTS row; kNull for absent values.
struct NvtxRow {
  uint64_t start = 0;
  int64_t end = kNull;
  int type = 0;
  int64_t range_id = kNull;
  uint32_t category = 0;
  uint32_t color = 0;
  std::string_view text;
  int64_t tid = kNull;
  int64_t end_tid = kNull;
  uint32_t domain = 0;
  PayloadValue payload;
};

bool InsertNvtx(Writer& w, sqlite3_stmt* s, const NvtxRow& r) {
  int i = 1;
  sqlite3_bind_int64(s, i++, static_cast<int64_t>(r.start));
  r.end == kNull ? sqlite3_bind_null(s, i++) : sqlite3_bind_int64(s, i++, r.end);
  sqlite3_bind_int64(s, i++, r.type);
  r.range_id == kNull ? sqlite3_bind_null(s, i++) : sqlite3_bind_int64(s, i++, r.range_id);
  r.category ? sqlite3_bind_int64(s, i++, r.category) : sqlite3_bind_null(s, i++);
  r.color ? sqlite3_bind_int64(s, i++, r.color) : sqlite3_bind_null(s, i++);
  sqlite3_bind_text(s, i++, r.text.data(), static_cast<int>(r.text.size()), SQLITE_STATIC);
  r.tid == kNull ? sqlite3_bind_null(s, i++) : sqlite3_bind_int64(s, i++, r.tid);
  r.end_tid == kNull ? sqlite3_bind_null(s, i++) : sqlite3_bind_int64(s, i++, r.end_tid);
  sqlite3_bind_int64(s, i++, r.domain);
  sqlite3_bind_null(s, i);
  sqlite3_bind_null(s, i + 1);
  sqlite3_bind_null(s, i + 2);
  if (r.payload.type == PayloadValue::Type::kU64) {
    sqlite3_bind_int64(s, i, static_cast<int64_t>(r.payload.u64));
  } else if (r.payload.type == PayloadValue::Type::kI64) {
    sqlite3_bind_int64(s, i + 1, r.payload.i64);
  } else if (r.payload.type == PayloadValue::Type::kF64) {
    sqlite3_bind_double(s, i + 2, r.payload.f64);
  }
  return w.Step(s);
}

// Domain creation, ranges, marks. Text goes into `text` (the column
// per-range SQL reads); payloads into their typed columns.
bool ProcessWriter::WriteNvtx() {
  sqlite3_stmt* s = w_.Prepare(
      "INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, "
      "globalTid, endGlobalTid, domainId, uint64Value, int64Value, doubleValue) VALUES (?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  sqlite3_stmt* raw = w_.Prepare("INSERT INTO TRACER_NVTX_RAW_TEXT VALUES (?, ?)");
  if (!s || !raw) return false;
  for (const auto& [domain, name] : p_.domain_names) {
    NvtxRow row;
    row.start = p_.header.session_start_trace_ns;
    row.type = 75;
    row.text = trace_.strings.Get(name);
    row.domain = domain;
    if (!InsertNvtx(w_, s, row)) return false;
  }
  for (const RangeRecord& r : p_.ranges) {
    const bool start_end = r.kind == RangeKind::kStartEnd;
    NvtxRow row;
    row.start = r.start_ns;
    row.end = static_cast<int64_t>(r.end_ns);
    row.type = start_end ? 60 : 59;
    row.range_id = start_end ? static_cast<int64_t>(r.id) : kNull;
    row.category = r.category;
    row.color = r.color;
    row.text = trace_.strings.Get(r.name);
    row.tid = TidOf(r.thread);
    row.end_tid = start_end && r.end_thread ? TidOf(r.end_thread) : kNull;
    row.domain = r.domain;
    row.payload = r.payload;
    if (!InsertNvtx(w_, s, row)) return false;
    if (r.raw_name != 0) {
      const std::string_view text = trace_.strings.Get(r.raw_name);
      sqlite3_bind_int64(raw, 1, w_.LastRowId());
      sqlite3_bind_text(raw, 2, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
      if (!w_.Step(raw)) return false;
    }
  }
  for (const MarkRecord& m : p_.marks) {
    NvtxRow row;
    row.start = m.time_ns;
    row.type = 34;
    row.category = m.category;
    row.color = m.color;
    row.text = trace_.strings.Get(m.name);
    row.tid = TidOf(m.thread);
    row.domain = m.domain;
    row.payload = m.payload;
    if (!InsertNvtx(w_, s, row)) return false;
  }
  return true;
}

// PM samples in nsys's GPU_METRICS shape: one row per sample at its start,
// the metric by id (TARGET_INFO_GPU_METRICS names it), typeId's low byte the
// device as nsys encodes it, the bits above it the process's index in the
// export (nsys has one process); endTimestamp (the sample's end) is ours.
// Created only when the trace holds samples, as nsys does with GPU metrics.
constexpr const char* kGpuMetricsSchema = R"SQL(
CREATE TABLE GPU_METRICS (
    timestamp INTEGER, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL,
    value INTEGER NOT NULL, endTimestamp INTEGER);
CREATE TABLE TARGET_INFO_GPU_METRICS (
    typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
    metricId INTEGER NOT NULL, metricName TEXT NOT NULL);
)SQL";

bool WriteGpuMetrics(Writer& w, const Trace& trace) {
  bool any = false;
  for (const ProcessTrace& p : trace.processes) any |= !p.pm_samples.empty();
  if (!any) return true;
  if (!w.Exec(kGpuMetricsSchema)) return false;
  sqlite3_stmt* s = w.Prepare("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?, ?)");
  sqlite3_stmt* info = w.Prepare("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, ?, ?, ?)");
  if (!s || !info) return false;
  std::unordered_map<uint32_t, int64_t> metric_ids;  // string id -> metricId
  std::set<std::pair<int64_t, int64_t>> described;   // (typeId, metricId)
  for (size_t pi = 0; pi < trace.processes.size(); ++pi) {
    const ProcessTrace& p = trace.processes[pi];
    for (const PmSampleRecord& r : p.pm_samples) {
      if (std::isnan(r.value)) continue;  // SQLite stores NaN as NULL; value is NOT NULL
      const int64_t metric =
          metric_ids.emplace(r.metric, static_cast<int64_t>(metric_ids.size())).first->second;
      const int64_t type = static_cast<int64_t>(pi << 8) | (r.device & 0xFF);
      if (described.insert({type, metric}).second) {
        const std::string type_name = "CUPTI PM sampling, GPU " + std::to_string(r.device) +
                                      ", pid " + std::to_string(p.header.pid);
        const std::string_view name = trace.strings.Get(r.metric);
        sqlite3_bind_int64(info, 1, type);
        sqlite3_bind_text(info, 2, type_name.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(info, 3, metric);
        sqlite3_bind_text(info, 4, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
        if (!w.Step(info)) return false;
      }
      sqlite3_bind_int64(s, 1, static_cast<int64_t>(r.start_ns));
      sqlite3_bind_int64(s, 2, type);
      sqlite3_bind_int64(s, 3, metric);
      sqlite3_bind_double(s, 4, r.value);
      sqlite3_bind_int64(s, 5, static_cast<int64_t>(r.end_ns));
      if (!w.Step(s)) return false;
    }
  }
  return true;
}

bool WriteProcess(Writer& w, const Trace& trace, const ProcessTrace& p,
                  std::unordered_map<uint32_t, std::array<int64_t, 3>>* kernel_names) {
  ProcessWriter pw(w, trace, p, kernel_names);
  return pw.WriteProcessThreadsAndStreams() && pw.WriteKernels() && pw.WriteApiCalls() &&
         pw.WriteMemcpys() && pw.WriteMemsets() && pw.WriteSyncs() && pw.WriteNvtx();
}

}  // namespace

bool WriteSqlite(const Trace& trace, const std::string& path, std::string* error) {
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    *error = "cannot create " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return false;
  }
  bool ok = false;
  {
    Writer w(db);
    ok = w.Exec(
             "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
             "PRAGMA cache_size=-262144; PRAGMA temp_store=MEMORY; BEGIN;") &&
         w.Exec(kSchema);
    std::unordered_map<uint32_t, std::array<int64_t, 3>> kernel_names;
    for (size_t i = 0; ok && i < trace.processes.size(); ++i) {
      kernel_names.clear();
      ok = WriteProcess(w, trace, trace.processes[i], &kernel_names);
    }
    ok = ok && WriteGpuMetrics(w, trace);
    if (ok && !trace.processes.empty()) {
      const HeaderInfo& h = trace.processes.front().header;
      sqlite3_stmt* s = w.Prepare("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, ?, ?, ?)");
      ok = s != nullptr;
      if (ok) {
        const std::string utc = UtcText(h.session_start_wall_ns);
        sqlite3_bind_int64(s, 1, static_cast<int64_t>(h.session_start_wall_ns));
        sqlite3_bind_text(s, 2, utc.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, utc.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 4, static_cast<int64_t>(h.session_start_trace_ns));
        ok = w.Step(s);
      }
    }
    ok = ok && w.WriteStrings() &&
         w.Exec(
             "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'tracer'), "
             "('EXPORT_SCHEMA_COMPATIBLE_WITH', 'Nsight Systems export schema 3.25'); COMMIT;");
    if (!ok) *error = "cannot write " + path + ": " + w.error();
  }
  if (sqlite3_close(db) != SQLITE_OK && ok) {
    *error = "cannot close " + path;
    ok = false;
  }
  return ok;
}

}  // namespace tracer::analysis::exporters
