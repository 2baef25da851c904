// Kineto (PyTorch profiler) events to model records, one event at a time:
// the mapping kineto_json_importer.h documents, shared by the whole-trace
// importer (which keeps every record) and the bounded-memory one
// (kineto_json_stream.h, which drains the record vectors after each event).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/kineto_event.h"
#include "libtracer/analysis/importers/process_builder.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

class KinetoConverter {
 public:
  explicit KinetoConverter(StringTable* strings) : strings_(strings), builder_(&process_) {}

  // Appends the event's record (if any) to process()'s record vectors and
  // defines the threads, streams and launch configurations it names.
  void Add(const KinetoEvent& e);
  // After the last event: thread names, domain and category names, skip
  // and flow counters, header. Records, nesting and footer are the
  // caller's.
  void FinishDefinitions(const KinetoTraceInfo& info, const std::string& path);

  ProcessTrace& process() { return process_; }

 private:
  uint32_t Name(std::string_view s) { return strings_->Intern(s); }
  void Skip(std::string_view what) { ++skipped_[std::string(what)]; }
  uint32_t GpuStream(const KinetoEvent& e);
  // start_ns, end_ns, stream and correlation_id of a GPU activity record.
  template <typename Record>
  void GpuOpFields(const KinetoEvent& e, Record* r) {
    r->start_ns = e.ts_ns;
    r->end_ns = e.ts_ns + e.dur_ns;
    r->stream = GpuStream(e);
    r->correlation_id = e.correlation < 0 ? 0 : static_cast<uint64_t>(e.correlation);
  }
  uint32_t GpuTrack(uint32_t stream_id);
  void AddRange(const KinetoEvent& e, uint32_t thread, uint32_t domain, uint32_t category);
  void AddMemorySample(const KinetoEvent& e);
  void NoteCpuPid(int64_t pid) {
    if (cpu_pid_ < 0) cpu_pid_ = pid;
  }

  StringTable* strings_;
  ProcessTrace process_;
  ProcessBuilder builder_;
  int64_t cpu_pid_ = -1;
  std::map<std::string, uint64_t> skipped_;
  std::unordered_map<uint32_t, uint32_t> gpu_tracks_;          // stream id -> thread id
  std::vector<std::pair<int64_t, std::string>> thread_names_;  // tid -> name
  uint64_t flows_ = 0;
};

// The footer the whole-trace importer writes: session end = the last range
// or kernel end; record counts by kind.
FooterInfo KinetoFooter(uint64_t ranges, uint64_t kernels, uint64_t memcpys, uint64_t memsets,
                        uint64_t api_calls, uint64_t end_ns, const KinetoTraceInfo& info);

}  // namespace tracer::analysis::importers
