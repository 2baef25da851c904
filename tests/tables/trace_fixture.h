// Hand-built traces for the table tests: stands for what the reader fills
// from a captured stream (one process, named threads, push/pop ranges with
// parent links, kernels with the LaunchRecord and cudaLaunchKernel ApiRecord
// the tracer writes for each launch).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::testing {

class TraceFixture {
 public:
  explicit TraceFixture(Trace* trace, uint32_t pid = 100) : trace_(trace) {
    trace_->processes.emplace_back();
    process_ = trace_->processes.size() - 1;
    P().header.pid = pid;
    P().threads.resize(3);
    P().threads[1] = {true, pid, 0, trace_->strings.Intern("main")};
    P().threads[2] = {true, pid + 1, 0, trace_->strings.Intern("worker")};
    P().streams.resize(3);
    P().streams[1] = {true, 0, 1, 7};
    P().streams[2] = {true, 0, 1, 8};
  }

  ProcessTrace& P() { return trace_->processes[process_]; }

  // A push/pop range; parent 0 = top level. Returns its instance id.
  uint64_t Range(std::string_view name, uint64_t start, uint64_t end, uint64_t parent = 0,
                 uint32_t thread = 1) {
    RangeRecord r;
    r.id = ++next_range_;
    r.parent_id = parent;
    r.thread = thread;
    r.name = trace_->strings.Intern(name);
    r.start_ns = start;
    r.end_ns = end;
    r.depth = 0;
    for (const auto& q : P().ranges) {
      if (q.id == parent) r.depth = q.depth + 1;
    }
    P().ranges.push_back(r);
    return r.id;
  }

  // A kernel launched at `launch` (API call of api_ns) from `thread` while
  // `range` was its innermost open range.
  void Kernel(std::string_view name, uint64_t start, uint64_t end, uint64_t range, uint64_t launch,
              uint64_t api_ns = 100, uint32_t thread = 1, uint32_t stream = 1) {
    const uint64_t corr = ++next_correlation_;
    KernelRecord k;
    k.start_ns = start;
    k.end_ns = end;
    k.name = trace_->strings.Intern(name);
    k.stream = stream;
    k.correlation_id = corr;
    P().kernels.push_back(k);
    AddLaunch(corr, range, launch, api_ns, thread);
  }

  void Memcpy(uint32_t copy_kind, uint64_t bytes, uint64_t start, uint64_t end, uint64_t range,
              uint64_t launch, uint64_t api_ns = 100, uint32_t thread = 1) {
    const uint64_t corr = ++next_correlation_;
    MemcpyRecord m;
    m.start_ns = start;
    m.end_ns = end;
    m.bytes = bytes;
    m.copy_kind = copy_kind;
    m.stream = 1;
    m.correlation_id = corr;
    P().memcpys.push_back(m);
    AddLaunch(corr, range, launch, api_ns, thread);
  }

 private:
  void AddLaunch(uint64_t corr, uint64_t range, uint64_t launch, uint64_t api_ns, uint32_t thread) {
    LaunchRecord l;
    l.correlation_id = corr;
    l.time_ns = launch;
    l.thread = thread;
    l.range_id = range;
    P().launches.push_back(l);
    ApiRecord a;
    a.start_ns = launch;
    a.end_ns = launch + api_ns;
    a.thread = thread;
    a.correlation_id = corr;
    a.name = trace_->strings.Intern("cudaLaunchKernel");
    P().api_calls.push_back(a);
  }

  Trace* trace_;
  size_t process_;
  uint64_t next_range_ = 0;
  uint64_t next_correlation_ = 1000;
};

}  // namespace tracer::analysis::testing
