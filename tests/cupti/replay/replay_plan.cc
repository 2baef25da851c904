#include "tests/cupti/replay/replay_plan.h"

#include <cupti_activity.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <tuple>
#include <unordered_map>

namespace tracer::replay {

namespace {

using analysis::ProcessTrace;
using analysis::Trace;

// "CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 = 211," -> name, cbid.
bool ReadCbids(const std::string& path, const std::string& prefix,
               std::unordered_map<std::string, uint32_t>* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(prefix);
    size_t eq = line.find('=');
    if (at == std::string::npos || eq == std::string::npos || eq < at) continue;
    std::string name = line.substr(at + prefix.size());
    name = name.substr(0, name.find_first_of(" \t="));
    (*out)[name] = static_cast<uint32_t>(std::strtoul(line.c_str() + eq + 1, nullptr, 0));
  }
  return !out->empty() || (*error = "no cbids in " + path, false);
}

// Order of events at one timestamp: calls return, then ranges close, then
// ranges open, then marks, then calls enter, so a launch at a range's first
// nanosecond sees it open and one at its last sees it closed... except
// zero-length ranges and calls, whose close follows their own open.
struct SortKey {
  uint64_t time;
  int phase;
  int64_t secondary;
  int sub;
  size_t seq;
  bool operator<(const SortKey& o) const {
    return std::tie(time, phase, secondary, sub, seq) <
           std::tie(o.time, o.phase, o.secondary, o.sub, o.seq);
  }
};

template <typename T>
std::vector<uint8_t> Bytes(const T& r) {
  std::vector<uint8_t> v(sizeof(T));
  std::memcpy(v.data(), &r, sizeof(T));
  return v;
}

const analysis::StreamInfo& StreamOf(const ProcessTrace& p, uint32_t id) {
  static const analysis::StreamInfo kNone;
  return id < p.streams.size() ? p.streams[id] : kNone;
}

// Device, context, stream and correlation id of a GPU activity record.
template <typename R>
void SetPlace(const ProcessTrace& p, uint32_t stream, uint64_t correlation_id, R* r) {
  const analysis::StreamInfo& s = StreamOf(p, stream);
  r->deviceId = s.device;
  r->contextId = s.context;
  r->streamId = static_cast<uint32_t>(s.stream);
  r->correlationId = static_cast<uint32_t>(correlation_id);
}

}  // namespace

bool BuildPlan(const Trace& trace, const ProcessTrace& p, const std::string& cupti_include_dir,
               Plan* plan, std::string* error) {
  std::unordered_map<std::string, uint32_t> cbids[2];
  if (!ReadCbids(cupti_include_dir + "/cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_",
                 &cbids[0], error) ||
      !ReadCbids(cupti_include_dir + "/cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_", &cbids[1],
                 error)) {
    return false;
  }

  std::map<uint32_t, size_t> slot_of;
  auto slot = [&](uint32_t thread) {
    auto [it, fresh] = slot_of.emplace(thread, plan->threads.size());
    if (fresh) {
      ThreadPlan tp;
      tp.thread = thread;
      if (thread < p.threads.size()) {
        tp.os_tid = p.threads[thread].os_tid;
        tp.name = std::string(trace.strings.Get(p.threads[thread].name));
      }
      plan->threads.push_back(std::move(tp));
    }
    return it->second;
  };

  std::vector<std::pair<SortKey, Event>> keyed;
  auto add = [&](uint64_t time, int phase, int64_t secondary, int sub, EventType type, size_t index,
                 uint32_t thread) {
    Event e;
    e.time = time;
    e.type = type;
    e.index = index;
    e.slot = slot(thread);
    keyed.push_back({SortKey{time, phase, secondary, sub, keyed.size()}, e});
  };
  for (size_t i = 0; i < p.ranges.size(); ++i) {
    const RangeRecord& r = p.ranges[i];
    const bool push = r.kind == RangeKind::kPushPop;
    const int64_t depth = r.depth;
    add(r.start_ns, 2, depth, 0, push ? EventType::kPush : EventType::kStart, i, r.thread);
    if (r.flags & kRangeFlagUnclosed) continue;  // the tracer closes it at exit
    const bool empty = r.end_ns == r.start_ns;
    add(r.end_ns, empty ? 2 : 1, empty ? depth : -depth, 1,
        push ? EventType::kPop : EventType::kEnd, i,
        push || r.end_thread == 0 ? r.thread : r.end_thread);
  }
  for (size_t i = 0; i < p.marks.size(); ++i) {
    add(p.marks[i].time_ns, 3, 0, 0, EventType::kMark, i, p.marks[i].thread);
  }
  plan->api_cbids.resize(p.api_calls.size());
  uint32_t synthetic[2] = {60000, 60000};
  std::map<std::pair<int, std::string>, uint32_t> assigned;
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const ApiRecord& a = p.api_calls[i];
    const int driver = a.domain == ApiDomain::kDriver ? 1 : 0;
    const std::string name(trace.strings.Get(a.name));
    auto known = assigned.find({driver, name});
    uint32_t cbid;
    if (known != assigned.end()) {
      cbid = known->second;
    } else {
      auto it = cbids[driver].find(name);
      // A name the headers lack (renamed or removed since) gets a cbid of
      // its own above every real one.
      cbid = it != cbids[driver].end() ? it->second : synthetic[driver]++;
      assigned[{driver, name}] = cbid;
      plan->callback_names[{driver, cbid}] = name;
    }
    plan->api_cbids[i] = cbid;
    const bool empty = a.end_ns == a.start_ns;
    const int64_t start = static_cast<int64_t>(a.start_ns), end = static_cast<int64_t>(a.end_ns);
    add(a.start_ns, 4, -end, 0, EventType::kApiEnter, i, a.thread);
    add(a.end_ns, empty ? 4 : 0, empty ? -end : -start, 1, EventType::kApiExit, i, a.thread);
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  plan->events.reserve(keyed.size());
  for (auto& [key, e] : keyed) {
    plan->threads[e.slot].events.push_back(plan->events.size());
    plan->events.push_back(e);
  }

  // The analysis' main thread (attribution.cc FindMainThread): the thread
  // with ranges whose tid is the pid, else the one whose ranges start first.
  uint64_t best = UINT64_MAX;
  for (size_t s = 0; s < plan->threads.size(); ++s) {
    const ThreadPlan& tp = plan->threads[s];
    for (size_t idx : tp.events) {
      const Event& e = plan->events[idx];
      if (e.type != EventType::kPush && e.type != EventType::kStart) continue;
      if (p.header.pid != 0 && tp.os_tid == p.header.pid) {
        best = 0;
        plan->main_thread_slot = s;
      } else if (e.time < best) {
        best = e.time;
        plan->main_thread_slot = s;
      }
      break;
    }
  }

  uint64_t first = UINT64_MAX, last = 0;
  auto span = [&](uint64_t a, uint64_t b) {
    first = std::min(first, a);
    last = std::max(last, b);
  };
  for (const Event& e : plan->events) span(e.time, e.time);

  // GPU work, keyed to the first replayed call with its correlation id.
  std::unordered_map<uint64_t, size_t> api_of;
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    api_of.emplace(p.api_calls[i].correlation_id, i);
  }
  auto attach = [&](uint64_t correlation, std::vector<uint8_t> bytes) {
    const size_t index = plan->gpu_records.size();
    plan->gpu_records.push_back(std::move(bytes));
    auto it = api_of.find(correlation);
    if (it == api_of.end()) {
      plan->orphan_gpu_records.push_back(index);
    } else {
      plan->gpu_by_api.emplace(it->second, index);
    }
  };
  for (const KernelRecord& k : p.kernels) {
    span(k.start_ns, k.end_ns);
    CUpti_ActivityKernel10 r;
    std::memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.start = k.start_ns;
    r.end = k.end_ns;
    r.completed = k.end_ns;
    r.name = trace.strings.Get(k.name).data();  // chunk-backed: stable and NUL-terminated
    SetPlace(p, k.stream, k.correlation_id, &r);
    if (k.launch_config != 0 && k.launch_config < p.launch_configs.size()) {
      const LaunchConfigRecord& c = p.launch_configs[k.launch_config];
      r.gridX = c.grid[0];
      r.gridY = c.grid[1];
      r.gridZ = c.grid[2];
      r.blockX = c.block[0];
      r.blockY = c.block[1];
      r.blockZ = c.block[2];
      r.staticSharedMemory = c.static_shared_memory;
      r.dynamicSharedMemory = c.dynamic_shared_memory;
      r.registersPerThread = static_cast<uint16_t>(c.registers_per_thread);
    }
    r.graphId = static_cast<uint32_t>(k.graph_id);
    r.graphNodeId = k.graph_node_id;
    attach(k.correlation_id, Bytes(r));
  }
  for (const MemcpyRecord& m : p.memcpys) {
    span(m.start_ns, m.end_ns);
    CUpti_ActivityMemcpy6 r;
    std::memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = static_cast<uint8_t>(m.copy_kind);  // same numbering (cupti_decoder.cc)
    r.srcKind = static_cast<uint8_t>(m.flags >> 8);
    r.dstKind = static_cast<uint8_t>(m.flags >> 16);
    r.flags = (m.flags & 1u) ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : CUPTI_ACTIVITY_FLAG_NONE;
    r.bytes = m.bytes;
    r.start = m.start_ns;
    r.end = m.end_ns;
    SetPlace(p, m.stream, m.correlation_id, &r);
    r.copyCount = 1;
    attach(m.correlation_id, Bytes(r));
  }
  for (const MemsetRecord& m : p.memsets) {
    span(m.start_ns, m.end_ns);
    CUpti_ActivityMemset4 r;
    std::memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = m.value;
    r.bytes = m.bytes;
    r.start = m.start_ns;
    r.end = m.end_ns;
    SetPlace(p, m.stream, m.correlation_id, &r);
    r.flags = (m.flags & 1u) ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    attach(m.correlation_id, Bytes(r));
  }
  for (const RangeRecord& r : p.ranges) span(r.start_ns, r.end_ns);
  for (const ApiRecord& a : p.api_calls) span(a.start_ns, a.end_ns);
  plan->first_time = first == UINT64_MAX ? 0 : first;
  plan->last_time = last;
  return true;
}

}  // namespace tracer::replay
