#include "libtracer/analysis/chrome_export.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "libtracer/analysis/demangle.h"

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

void WriteProcess(const Trace& trace, const ProcessTrace& p, uint64_t pid, uint64_t index,
                  EventWriter& w) {
  const uint64_t gpu_pid_base = kGpuPidBase + index * 1000;
  std::string label = "pid " + std::to_string(p.header.pid);
  if (p.header.rank >= 0) label = "rank " + std::to_string(p.header.rank) + " " + label;
  w.Metadata("process_name", pid, 0, label + (p.header.host.empty() ? "" : " on " + p.header.host));
  for (uint32_t t = 1; t < p.threads.size(); ++t) {
    if (!p.threads[t].defined) continue;
    std::string name(trace.strings.Get(p.threads[t].name));
    if (name.empty()) name = "thread " + std::to_string(p.threads[t].os_tid);
    w.Metadata("thread_name", pid, ThreadTid(p, t), name);
  }
  // GPU tracks: one pseudo process per device, one track per stream.
  auto gpu_pid = [&](uint32_t stream) {
    const uint32_t device = stream < p.streams.size() ? p.streams[stream].device : 0;
    return gpu_pid_base + device;
  };
  auto stream_tid = [&](uint32_t stream) -> uint64_t {
    if (stream < p.streams.size() && p.streams[stream].defined) return p.streams[stream].stream;
    return stream;
  };
  std::set<std::pair<uint64_t, uint64_t>> tracks;
  auto note_track = [&](uint32_t stream) { tracks.insert({gpu_pid(stream), stream_tid(stream)}); };
  for (const auto& k : p.kernels) note_track(k.stream);
  for (const auto& m : p.memcpys) note_track(m.stream);
  for (const auto& m : p.memsets) note_track(m.stream);
  std::set<uint64_t> gpu_pids;
  for (const auto& [gp, tid] : tracks) {
    if (gpu_pids.insert(gp).second) {
      w.Metadata("process_name", gp, 0,
                 "GPU " + std::to_string(gp - gpu_pid_base) + " (" + label + ")");
    }
    w.Metadata("thread_name", gp, tid, "stream " + std::to_string(tid));
  }
  for (const auto& pm : p.pm_samples) {
    if (gpu_pids.insert(gpu_pid_base + pm.device).second) {
      w.Metadata("process_name", gpu_pid_base + pm.device, 0,
                 "GPU " + std::to_string(pm.device) + " (" + label + ")");
    }
  }

  // Ranges: push/pop nest on their thread ("X"); start/end may overlap or
  // end elsewhere, so they are async slices ("b"/"e").
  for (const RangeRecord& r : p.ranges) {
    std::string_view name = trace.strings.Get(r.name);
    if (name.empty()) name = "(unnamed)";
    const uint64_t tid = ThreadTid(p, r.thread);
    if (r.kind == RangeKind::kStartEnd) {
      w.Begin("b", pid, tid);
      w.Name(name);
      w.Raw(",\"cat\":\"nvtx\",\"id\":" + std::to_string(r.id));
      w.Ts("ts", r.start_ns);
      w.End();
      w.Begin("e", pid, tid);
      w.Name(name);
      w.Raw(",\"cat\":\"nvtx\",\"id\":" + std::to_string(r.id));
      w.Ts("ts", r.end_ns);
      w.End();
      continue;
    }
    w.Begin("X", pid, tid);
    w.Name(name);
    w.Raw(",\"cat\":\"nvtx\"");
    w.Ts("ts", r.start_ns);
    w.Ts("dur", r.end_ns - r.start_ns);
    w.Raw(",\"args\":{\"id\":" + std::to_string(r.id) + ",\"depth\":" + std::to_string(r.depth));
    if (auto it = p.domain_names.find(r.domain); it != p.domain_names.end()) {
      w.Raw(",\"domain\":");
      std::string s;
      AppendJsonString(&s, trace.strings.Get(it->second));
      w.Raw(s);
    }
    w.Raw("}");
    w.End();
  }
  for (const MarkRecord& m : p.marks) {
    w.Begin("i", pid, ThreadTid(p, m.thread));
    w.Name(trace.strings.Get(m.name));
    w.Raw(",\"cat\":\"nvtx\",\"s\":\"t\"");
    w.Ts("ts", m.time_ns);
    w.End();
  }

  // Launch side of the flows: the API call when there is one, else a
  // zero-length "launch" slice at the launch record's time (a flow must
  // start inside a slice).
  std::unordered_set<uint64_t> api_corr;
  for (const ApiRecord& a : p.api_calls) {
    std::string name(trace.strings.Get(a.name));
    if (name.empty()) name = "cuda api " + std::to_string(a.cbid);
    const uint64_t tid = ThreadTid(p, a.thread);
    w.Begin("X", pid, tid);
    w.Name(name);
    w.Raw(",\"cat\":\"cuda_api\"");
    w.Ts("ts", a.start_ns);
    w.Ts("dur", a.end_ns - a.start_ns);
    w.Raw(",\"args\":{\"correlation\":" + std::to_string(a.correlation_id) + "}");
    w.End();
    if (a.correlation_id != 0) api_corr.insert(a.correlation_id);
  }
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> launch_at;  // corr -> (tid, ns)
  for (const ApiRecord& a : p.api_calls) {
    if (a.correlation_id != 0)
      launch_at.emplace(a.correlation_id, std::pair(ThreadTid(p, a.thread), a.start_ns));
  }
  for (const LaunchRecord& l : p.launches) {
    if (l.correlation_id == 0 || api_corr.count(l.correlation_id)) continue;
    const uint64_t tid = ThreadTid(p, l.thread);
    w.Begin("X", pid, tid);
    w.Name("launch");
    w.Raw(",\"cat\":\"cuda_api\"");
    w.Ts("ts", l.time_ns);
    w.Raw(",\"dur\":0,\"args\":{\"correlation\":" + std::to_string(l.correlation_id) + "}");
    w.End();
    launch_at.emplace(l.correlation_id, std::pair(tid, l.time_ns));
  }

  const uint64_t flow_base = index << 44;  // flow ids unique across merged processes
  auto gpu_op = [&](std::string_view name, const char* cat, uint64_t start, uint64_t end,
                    uint32_t stream, uint64_t corr, const std::string& args) {
    const uint64_t gp = gpu_pid(stream), tid = stream_tid(stream);
    w.Begin("X", gp, tid);
    w.Name(name);
    w.Raw(",\"cat\":\"");
    w.Raw(cat);
    w.Raw("\"");
    w.Ts("ts", start);
    w.Ts("dur", end - start);
    w.Raw(",\"args\":{\"correlation\":" + std::to_string(corr) + args + "}");
    w.End();
    auto it = corr != 0 ? launch_at.find(corr) : launch_at.end();
    if (it == launch_at.end()) return;
    const std::string id = std::to_string(flow_base | (corr & ((uint64_t{1} << 44) - 1)));
    w.Begin("s", pid, it->second.first);
    w.Name("launch");
    w.Raw(",\"cat\":\"launch\",\"id\":" + id);
    w.Ts("ts", it->second.second);
    w.End();
    w.Begin("f", gp, tid);
    w.Name("launch");
    w.Raw(",\"cat\":\"launch\",\"bp\":\"e\",\"id\":" + id);
    w.Ts("ts", start);
    w.End();
  };
  for (const KernelRecord& k : p.kernels) {
    const std::string_view raw = trace.strings.Get(k.name);
    std::string args = ",\"name\":";
    AppendJsonString(&args, Demangle(raw));
    if (k.launch_config != 0 && k.launch_config < p.launch_configs.size()) {
      const LaunchConfigRecord& c = p.launch_configs[k.launch_config];
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
    gpu_op(raw.empty() ? "kernel" : ShortKernelName(raw), "kernel", k.start_ns, k.end_ns, k.stream,
           k.correlation_id, args);
  }
  for (const MemcpyRecord& m : p.memcpys) {
    gpu_op(CopyKindName(m.copy_kind), "memcpy", m.start_ns, m.end_ns, m.stream, m.correlation_id,
           ",\"bytes\":" + std::to_string(m.bytes));
  }
  for (const MemsetRecord& m : p.memsets) {
    gpu_op("Memset", "memset", m.start_ns, m.end_ns, m.stream, m.correlation_id,
           ",\"bytes\":" + std::to_string(m.bytes));
  }
  for (const PmSampleRecord& s : p.pm_samples) {
    std::string_view metric = trace.strings.Get(s.metric);
    if (metric.empty()) metric = "metric";
    w.Begin("C", gpu_pid_base + s.device, 0);
    w.Name(metric);
    w.Ts("ts", s.start_ns);
    char buf[64];
    std::snprintf(buf, sizeof(buf), ",\"args\":{\"value\":%.17g}",
                  std::isfinite(s.value) ? s.value : 0.0);
    w.Raw(buf);
    w.End();
  }
}

}  // namespace

bool WriteChromeTrace(const Trace& trace, std::ostream& out, std::string* error) {
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  EventWriter w(out);
  std::set<uint64_t> used_pids;
  for (size_t i = 0; i < trace.processes.size(); ++i) {
    const ProcessTrace& p = trace.processes[i];
    // Two merged files may share a pid (different hosts): keep them apart.
    uint64_t pid = p.header.pid != 0 ? p.header.pid : 1;
    while (!used_pids.insert(pid).second) pid += 1u << 22;
    WriteProcess(trace, p, pid, i, w);
    if (!out) break;
  }
  out << "\n]}\n";
  out.flush();
  if (!out) {
    *error = "write failed";
    return false;
  }
  return true;
}

}  // namespace tracer::analysis
