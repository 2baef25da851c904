// Test helper: writes small stream files the way the tracer does (core's
// ChunkBuilder + AppendFileMagic), with string interning and thread/stream
// definitions made easy, so each test reads like the program it stands for.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "libtracer/core/chunk_builder.h"

namespace tracer::analysis::testing {

class TraceFileBuilder {
 public:
  explicit TraceFileBuilder(uint32_t pid = 100) {
    AppendFileMagic(&bytes_);
    HeaderInfo h;
    h.pid = pid;
    h.host = "testhost";
    h.clock_description = "test clock";
    b_.SetHeader(h);
  }

  // Replaces the header (before the first Frame()).
  void Header(const HeaderInfo& h) { b_.SetHeader(h); }

  // File-local string id of s (defined in the current chunk on first use).
  uint32_t Str(const std::string& s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(ids_.size() + 1);
    ids_[s] = id;
    b_.AddString(id, s);
    return id;
  }
  void Thread(uint32_t id, uint64_t os_tid, const std::string& name = "") {
    b_.AddThread({id, os_tid, name.empty() ? 0 : Str(name), 0});
  }
  void Stream(uint32_t id, uint32_t device, uint64_t cupti_stream) {
    b_.AddStream({id, device, 1, cupti_stream});
  }
  void Range(uint64_t id, uint64_t parent, uint32_t thread, const std::string& name, uint64_t start,
             uint64_t end, uint32_t depth = 0, RangeKind kind = RangeKind::kPushPop) {
    RangeRecord r;
    r.id = id;
    r.parent_id = parent;
    r.thread = thread;
    r.name = Str(name);
    r.start_ns = start;
    r.end_ns = end;
    r.depth = depth;
    r.kind = kind;
    b_.AddRange(r);
  }
  void Kernel(const std::string& name, uint32_t stream, uint64_t start, uint64_t end, uint64_t corr,
              uint64_t graph = 0, uint64_t node = 0) {
    KernelRecord k;
    k.name = Str(name);
    k.stream = stream;
    k.start_ns = start;
    k.end_ns = end;
    k.correlation_id = corr;
    k.graph_id = graph;
    k.graph_node_id = node;
    b_.AddKernel(k);
  }
  void Memcpy(uint32_t kind, uint64_t bytes, uint32_t stream, uint64_t start, uint64_t end,
              uint64_t corr) {
    MemcpyRecord m;
    m.copy_kind = kind;
    m.bytes = bytes;
    m.stream = stream;
    m.start_ns = start;
    m.end_ns = end;
    m.correlation_id = corr;
    b_.AddMemcpy(m);
  }
  void Memset(uint64_t bytes, uint32_t stream, uint64_t start, uint64_t end, uint64_t corr) {
    MemsetRecord m;
    m.bytes = bytes;
    m.stream = stream;
    m.start_ns = start;
    m.end_ns = end;
    m.correlation_id = corr;
    b_.AddMemset(m);
  }
  // The tracer's launch record: correlation -> innermost open range on thread.
  void Launch(uint64_t corr, uint32_t thread, uint64_t time, uint64_t range_id) {
    LaunchRecord l;
    l.correlation_id = corr;
    l.thread = thread;
    l.time_ns = time;
    l.range_id = range_id;
    b_.AddLaunch(l);
  }
  void Api(const std::string& name, uint32_t thread, uint64_t start, uint64_t end, uint64_t corr) {
    ApiRecord a;
    a.name = Str(name);
    a.thread = thread;
    a.start_ns = start;
    a.end_ns = end;
    a.correlation_id = corr;
    b_.AddApi(a);
  }
  void GraphSnapshot(uint64_t graph, uint64_t node, uint64_t range_id, uint32_t thread,
                     uint64_t time) {
    b_.AddGraphNode({graph, node, range_id, thread, time});
  }
  // A PM sample as the capture writes it: one metric's value over
  // [start, end) on a device.
  void PmSample(const std::string& metric, uint32_t device, uint64_t start, uint64_t end,
                double value) {
    PmSampleRecord r;
    r.start_ns = start;
    r.end_ns = end;
    r.device = device;
    r.metric = Str(metric);
    r.value = value;
    b_.AddPmSample(r);
  }
  void Counter(const std::string& name, uint64_t delta) { b_.AddCounterDelta(name, delta); }
  void Footer(const FooterInfo& f) { b_.SetFooter(f); }
  ChunkBuilder& builder() { return b_; }

  // Ends the current frame; returns the byte offset where it started.
  size_t Frame() {
    const size_t at = bytes_.size();
    b_.FinishFrame(&bytes_);
    return at;
  }
  const std::string& Bytes() {
    if (b_.pending_items() > 0) Frame();
    return bytes_;
  }
  // Writes the file under a unique temp name and returns the path.
  std::string WriteTemp(const std::string& stem) {
    const std::string path = TempPath(stem);
    std::ofstream(path, std::ios::binary) << Bytes();
    return path;
  }
  static std::string TempPath(const std::string& stem) {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/tracer_analysis_test_" + std::to_string(getpid()) +
           "_" + stem;
  }

 private:
  ChunkBuilder b_;
  std::string bytes_;
  std::map<std::string, uint32_t> ids_;
};

}  // namespace tracer::analysis::testing
