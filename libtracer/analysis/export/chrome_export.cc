#include "libtracer/analysis/export/chrome_export.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/render.h"

namespace tracer::analysis {
namespace {

// Pseudo pids of GPU tracks: far above real pids (Linux pid_max <= 2^22).
constexpr uint64_t kGpuPidBase = 1'000'000'000;

const char* CopyKindName(uint32_t kind) {
  static const char* const kNames[] = {"Memcpy",      "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                       "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                       "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "Memcpy";
}

// Appends s as a JSON string literal; invalid UTF-8 becomes U+FFFD so the
// output always parses (range names are arbitrary user bytes).
void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out->push_back('\\');
        out->push_back(static_cast<char>(c));
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out->append(buf);
      } else {
        out->push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      out->append("\xEF\xBF\xBD");
      ++i;
    }
  }
  out->push_back('"');
}

// Microseconds with the nanoseconds as three exact decimals.
void AppendTs(std::string* out, uint64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  out->append(buf);
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}

  // Starts an event object; the caller appends fields after "ph" and calls End.
  std::string& Begin(const char* ph, uint64_t pid, uint64_t tid) {
    buf_.clear();
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
    buf_ += "{\"ph\":\"";
    buf_ += ph;
    buf_ += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
    return buf_;
  }
  void Name(std::string_view name) {
    buf_ += ",\"name\":";
    AppendJsonString(&buf_, name);
  }
  void Ts(const char* key, uint64_t ns) {
    buf_ += ",\"";
    buf_ += key;
    buf_ += "\":";
    AppendTs(&buf_, ns);
  }
  void Raw(std::string_view s) { buf_ += s; }
  void End() {
    buf_ += "}";
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  }
  void Metadata(const char* what, uint64_t pid, uint64_t tid, std::string_view name) {
    Begin("M", pid, tid);
    buf_ += ",\"name\":\"";
    buf_ += what;
    buf_ += "\",\"args\":{\"name\":";
    AppendJsonString(&buf_, name);
    buf_ += "}";
    End();
  }

 private:
  std::ostream& out_;
  std::string buf_;
  bool first_ = true;
};

uint64_t ThreadTid(const ProcessTrace& p, uint32_t thread) {
  if (thread < p.threads.size() && p.threads[thread].defined && p.threads[thread].os_tid != 0) {
    return p.threads[thread].os_tid;
  }
  return thread;
}

// The events of one process: its CPU side under `pid`, its GPU side under
// one pseudo process per device, one track per stream.
class ProcessEvents {
 public:
  ProcessEvents(const Trace& trace, const ProcessTrace& p, uint64_t pid, uint64_t index,
                EventWriter& w)
      : trace_(trace),
        p_(p),
        pid_(pid),
        gpu_pid_base_(kGpuPidBase + index * 1000),
        flow_base_(index << 44),  // flow ids unique across merged processes
        w_(w) {}

  void Write() {
    WriteNames();
    WriteRanges();
    WriteMarks();
    WriteLaunchSide();
    WriteKernels();
    WriteMemoryOps();
    WritePmSamples();
    WriteMemoryUsage();
  }

 private:
  uint64_t GpuPid(uint32_t stream) const {
    const uint32_t device = stream < p_.streams.size() ? p_.streams[stream].device : 0;
    return gpu_pid_base_ + device;
  }
  uint64_t StreamTid(uint32_t stream) const {
    if (stream < p_.streams.size() && p_.streams[stream].defined) return p_.streams[stream].stream;
    return stream;
  }

  void WriteNames();
  void WriteRanges();
  void WriteMarks();
  void WriteLaunchSide();
  void WriteGpuOp(std::string_view name, const char* cat, uint64_t start, uint64_t end,
                  uint32_t stream, uint64_t corr, const std::string& args);
  void WriteKernels();
  void WriteMemoryOps();
  void WritePmSamples();
  void WriteMemoryUsage();

  const Trace& trace_;
  const ProcessTrace& p_;
  const uint64_t pid_;
  const uint64_t gpu_pid_base_;
  const uint64_t flow_base_;
  EventWriter& w_;
  // Launch side of each correlation id: (tid, ns), for the flow arrows.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> launch_at_;
};

// Process and thread names, then the GPU pseudo processes and stream tracks.
void ProcessEvents::WriteNames() {
  std::string label = "pid " + std::to_string(p_.header.pid);
  if (p_.header.rank >= 0) label = "rank " + std::to_string(p_.header.rank) + " " + label;
  w_.Metadata("process_name", pid_, 0,
              label + (p_.header.host.empty() ? "" : " on " + p_.header.host));
  for (uint32_t t = 1; t < p_.threads.size(); ++t) {
    if (!p_.threads[t].defined) continue;
    std::string name(trace_.strings.Get(p_.threads[t].name));
    if (name.empty()) name = "thread " + std::to_string(p_.threads[t].os_tid);
    w_.Metadata("thread_name", pid_, ThreadTid(p_, t), name);
  }
  std::set<std::pair<uint64_t, uint64_t>> tracks;
  auto note_track = [&](uint32_t stream) { tracks.insert({GpuPid(stream), StreamTid(stream)}); };
  for (const auto& k : p_.kernels) note_track(k.stream);
  for (const auto& m : p_.memcpys) note_track(m.stream);
  for (const auto& m : p_.memsets) note_track(m.stream);
  std::set<uint64_t> gpu_pids;
  for (const auto& [gp, tid] : tracks) {
    if (gpu_pids.insert(gp).second) {
      w_.Metadata("process_name", gp, 0,
                  "GPU " + std::to_string(gp - gpu_pid_base_) + " (" + label + ")");
    }
    w_.Metadata("thread_name", gp, tid, "stream " + std::to_string(tid));
  }
  for (const auto& pm : p_.pm_samples) {
    if (gpu_pids.insert(gpu_pid_base_ + pm.device).second) {
      w_.Metadata("process_name", gpu_pid_base_ + pm.device, 0,
                  "GPU " + std::to_string(pm.device) + " (" + label + ")");
    }
  }
  for (const auto& m : p_.memory_usage) {
    if (m.device >= 0 && gpu_pids.insert(gpu_pid_base_ + static_cast<uint64_t>(m.device)).second) {
      w_.Metadata("process_name", gpu_pid_base_ + static_cast<uint64_t>(m.device), 0,
                  "GPU " + std::to_string(m.device) + " (" + label + ")");
    }
  }
}

// Push/pop ranges nest on their thread ("X"); start/end may overlap or end
// elsewhere, so they are async slices ("b"/"e").
void ProcessEvents::WriteRanges() {
  // A PyTorch profiler trace's CPU ops and annotations keep the category
  // they had there (cpu_op, user_annotation, gpu_user_annotation); NVTX
  // ranges are "nvtx".
  const bool kineto = p_.header.source == "kineto-json";
  for (const RangeRecord& r : p_.ranges) {
    std::string_view name = trace_.strings.Get(r.name);
    if (name.empty()) name = "(unnamed)";
    std::string cat = ",\"cat\":\"nvtx\"";
    if (kineto) {
      if (auto it = p_.category_names.find({r.domain, r.category}); it != p_.category_names.end()) {
        cat = ",\"cat\":";
        AppendJsonString(&cat, trace_.strings.Get(it->second));
      }
    }
    const uint64_t tid = ThreadTid(p_, r.thread);
    if (r.kind == RangeKind::kStartEnd) {
      w_.Begin("b", pid_, tid);
      w_.Name(name);
      w_.Raw(cat + ",\"id\":" + std::to_string(r.id));
      w_.Ts("ts", r.start_ns);
      if (r.raw_name != 0) {
        std::string s = ",\"args\":{\"raw_name\":";
        AppendJsonString(&s, trace_.strings.Get(r.raw_name));
        w_.Raw(s + "}");
      }
      w_.End();
      w_.Begin("e", pid_, tid);
      w_.Name(name);
      w_.Raw(cat + ",\"id\":" + std::to_string(r.id));
      w_.Ts("ts", r.end_ns);
      w_.End();
      continue;
    }
    w_.Begin("X", pid_, tid);
    w_.Name(name);
    w_.Raw(cat);
    w_.Ts("ts", r.start_ns);
    w_.Ts("dur", r.end_ns - r.start_ns);
    w_.Raw(",\"args\":{\"id\":" + std::to_string(r.id) + ",\"depth\":" + std::to_string(r.depth));
    if (auto it = p_.domain_names.find(r.domain); it != p_.domain_names.end()) {
      w_.Raw(",\"domain\":");
      std::string s;
      AppendJsonString(&s, trace_.strings.Get(it->second));
      w_.Raw(s);
    }
    if (r.raw_name != 0) {
      std::string s = ",\"raw_name\":";
      AppendJsonString(&s, trace_.strings.Get(r.raw_name));
      w_.Raw(s);
    }
    w_.Raw("}");
    w_.End();
  }
}

void ProcessEvents::WriteMarks() {
  for (const MarkRecord& m : p_.marks) {
    w_.Begin("i", pid_, ThreadTid(p_, m.thread));
    w_.Name(trace_.strings.Get(m.name));
    w_.Raw(",\"cat\":\"nvtx\",\"s\":\"t\"");
    w_.Ts("ts", m.time_ns);
    w_.End();
  }
}

// Launch side of the flows: the API call when there is one, else a
// zero-length "launch" slice at the launch record's time (a flow must start
// inside a slice).
void ProcessEvents::WriteLaunchSide() {
  std::unordered_set<uint64_t> api_corr;
  for (const ApiRecord& a : p_.api_calls) {
    std::string name(ApiDisplayName(trace_.strings.Get(a.name)));
    if (name.empty()) name = "cuda api " + std::to_string(a.cbid);
    const uint64_t tid = ThreadTid(p_, a.thread);
    w_.Begin("X", pid_, tid);
    w_.Name(name);
    w_.Raw(",\"cat\":\"cuda_api\"");
    w_.Ts("ts", a.start_ns);
    w_.Ts("dur", a.end_ns - a.start_ns);
    w_.Raw(",\"args\":{\"correlation\":" + std::to_string(a.correlation_id) + "}");
    w_.End();
    if (a.correlation_id != 0) api_corr.insert(a.correlation_id);
  }
  for (const ApiRecord& a : p_.api_calls) {
    if (a.correlation_id != 0)
      launch_at_.emplace(a.correlation_id, std::pair(ThreadTid(p_, a.thread), a.start_ns));
  }
  for (const LaunchRecord& l : p_.launches) {
    if (l.correlation_id == 0 || api_corr.count(l.correlation_id)) continue;
    const uint64_t tid = ThreadTid(p_, l.thread);
    w_.Begin("X", pid_, tid);
    w_.Name("launch");
    w_.Raw(",\"cat\":\"cuda_api\"");
    w_.Ts("ts", l.time_ns);
    w_.Raw(",\"dur\":0,\"args\":{\"correlation\":" + std::to_string(l.correlation_id) + "}");
    w_.End();
    launch_at_.emplace(l.correlation_id, std::pair(tid, l.time_ns));
  }
}

// A GPU op's slice on its stream track, and the flow arrow from its launch.
void ProcessEvents::WriteGpuOp(std::string_view name, const char* cat, uint64_t start, uint64_t end,
                               uint32_t stream, uint64_t corr, const std::string& args) {
  const uint64_t gp = GpuPid(stream), tid = StreamTid(stream);
  w_.Begin("X", gp, tid);
  w_.Name(name);
  w_.Raw(",\"cat\":\"");
  w_.Raw(cat);
  w_.Raw("\"");
  w_.Ts("ts", start);
  w_.Ts("dur", end - start);
  w_.Raw(",\"args\":{\"correlation\":" + std::to_string(corr) + args + "}");
  w_.End();
  auto it = corr != 0 ? launch_at_.find(corr) : launch_at_.end();
  if (it == launch_at_.end()) return;
  const std::string id = std::to_string(flow_base_ | (corr & ((uint64_t{1} << 44) - 1)));
  w_.Begin("s", pid_, it->second.first);
  w_.Name("launch");
  w_.Raw(",\"cat\":\"launch\",\"id\":" + id);
  w_.Ts("ts", it->second.second);
  w_.End();
  w_.Begin("f", gp, tid);
  w_.Name("launch");
  w_.Raw(",\"cat\":\"launch\",\"bp\":\"e\",\"id\":" + id);
  w_.Ts("ts", start);
  w_.End();
}

void ProcessEvents::WriteKernels() {
  for (const KernelRecord& k : p_.kernels) {
    const std::string_view raw = trace_.strings.Get(k.name);
    std::string args = ",\"name\":";
    AppendJsonString(&args, Demangle(raw));
    if (k.launch_config != 0 && k.launch_config < p_.launch_configs.size()) {
      const LaunchConfigRecord& c = p_.launch_configs[k.launch_config];
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    ",\"grid\":\"%u,%u,%u\",\"block\":\"%u,%u,%u\",\"registers\":%u,"
                    "\"shared_memory\":%u",
                    c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2],
                    c.registers_per_thread, c.static_shared_memory + c.dynamic_shared_memory);
      args += buf;
    }
    if (k.graph_id != 0) {
      args += ",\"graph\":" + std::to_string(k.graph_id) +
              ",\"graph_node\":" + std::to_string(k.graph_node_id);
    }
    WriteGpuOp(raw.empty() ? "kernel" : ShortKernelName(raw), "kernel", k.start_ns, k.end_ns,
               k.stream, k.correlation_id, args);
  }
}

void ProcessEvents::WriteMemoryOps() {
  for (const MemcpyRecord& m : p_.memcpys) {
    WriteGpuOp(CopyKindName(m.copy_kind), "memcpy", m.start_ns, m.end_ns, m.stream,
               m.correlation_id, ",\"bytes\":" + std::to_string(m.bytes));
  }
  for (const MemsetRecord& m : p_.memsets) {
    WriteGpuOp("Memset", "memset", m.start_ns, m.end_ns, m.stream, m.correlation_id,
               ",\"bytes\":" + std::to_string(m.bytes));
  }
}

// PM samples as counters on the device's pseudo process.
void ProcessEvents::WritePmSamples() {
  for (const PmSampleRecord& s : p_.pm_samples) {
    std::string_view metric = trace_.strings.Get(s.metric);
    if (metric.empty()) metric = "metric";
    w_.Begin("C", gpu_pid_base_ + s.device, 0);
    w_.Name(metric);
    w_.Ts("ts", s.start_ns);
    char buf[64];
    std::snprintf(buf, sizeof(buf), ",\"args\":{\"value\":%.17g}",
                  std::isfinite(s.value) ? s.value : 0.0);
    w_.Raw(buf);
    w_.End();
  }
}

// The allocator's totals as counters per device ("GPU memory allocated" /
// "GPU memory reserved" on the device's pseudo process, "GPU managed memory
// allocated" there too for CUDA managed memory, "CPU memory ..." on the
// process), args {"bytes": n}: Perfetto and chrome://tracing draw each as a
// step line over time. Two counters, not two series of one, because
// chrome://tracing stacks the series of one counter (reserved would read as
// allocated + reserved). A total the input did not record is left out (the
// line holds its last value).
void ProcessEvents::WriteMemoryUsage() {
  std::vector<const MemoryUsageSample*> order;
  order.reserve(p_.memory_usage.size());
  for (const MemoryUsageSample& m : p_.memory_usage) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->ts_ns < b->ts_ns; });
  for (const MemoryUsageSample* m : order) {
    const bool gpu = m->device >= 0;
    const uint64_t pid = gpu ? gpu_pid_base_ + static_cast<uint64_t>(m->device) : pid_;
    for (const auto& [what, bytes] :
         {std::pair{"allocated", m->allocated}, std::pair{"reserved", m->reserved}}) {
      if (bytes < 0) continue;
      w_.Begin("C", pid, 0);
      w_.Name(std::string(!gpu         ? "CPU memory "
                          : m->managed ? "GPU managed memory "
                                       : "GPU memory ") +
              what);
      w_.Raw(",\"cat\":\"memory\"");
      w_.Ts("ts", m->ts_ns);
      w_.Raw(",\"args\":{\"bytes\":" + std::to_string(bytes) + "}");
      w_.End();
    }
  }
}

}  // namespace

bool WriteChromeTrace(const Trace& trace, std::ostream& out, std::string* error,
                      const std::vector<Table>& tables) {
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  EventWriter w(out);
  std::set<uint64_t> used_pids;
  for (size_t i = 0; i < trace.processes.size(); ++i) {
    const ProcessTrace& p = trace.processes[i];
    // Two merged files may share a pid (different hosts): keep them apart.
    uint64_t pid = p.header.pid != 0 ? p.header.pid : 1;
    while (!used_pids.insert(pid).second) pid += 1u << 22;
    ProcessEvents(trace, p, pid, i, w).Write();
    if (!out) break;
  }
  out << "\n]";
  if (!tables.empty()) out << ",\"tracerTables\":" << RenderTables(tables, OutputFormat::kJson);
  out << "}\n";
  out.flush();
  if (!out) {
    *error = "write failed";
    return false;
  }
  return true;
}

}  // namespace tracer::analysis
