// The flattened view the issue-4 tables (groups, timeline, phases,
// categories, gaps, top, diff) read: every range instance of every process
// (one global index space) with its parent link and GPU projection, and every
// GPU op with the range instances it counts toward, as a per-instance op
// list. Built once per report from an AnalyzedTrace: attribution (which
// ranges an op counts toward, incl. worker-thread inheritance) and
// projection come from analysis/model/attribution.h and analysis/model/projection.h;
// nothing here re-derives them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::reports {

struct OpFact {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name = 0;  // global string id (memory ops: synthetic names)
  uint32_t process = 0;
  uint32_t stream = 0;  // process-local StreamDef id
  OpKind kind = OpKind::kKernel;
  uint32_t record = 0;  // index in its process's kernels / memcpys / memsets
  // Launching API call ([start, end]); launch_end_ns == 0: no API record.
  uint64_t launch_start_ns = 0;
  uint64_t launch_end_ns = 0;
  uint64_t duration() const { return end_ns - start_ns; }
  uint64_t launch_api_ns() const {
    return launch_end_ns > launch_start_ns ? launch_end_ns - launch_start_ns : 0;
  }
};

struct RangeFact {
  uint32_t name = 0;  // global string id
  uint32_t process = 0;
  uint32_t thread = 0;  // process-local ThreadDef id
  uint32_t local = 0;   // index in ProcessTrace::ranges
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t depth = 0;
  int32_t parent = -1;  // global index; -1 = none
  bool push_pop = true;
  // GPU projection (projection.h, across streams); has_gpu == false: no
  // attributed op, "no projection" rather than zero.
  bool has_gpu = false;
  uint64_t gpu_start_ns = 0;
  uint64_t gpu_end_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t kernel_ns = 0;
  uint64_t op_count = 0;
  uint64_t kernel_count = 0;
  uint64_t cpu_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  uint64_t gpu_span_ns() const { return has_gpu ? gpu_end_ns - gpu_start_ns : 0; }
};

class ReportModel {
 public:
  explicit ReportModel(const AnalyzedTrace& analyzed);

  const Trace& trace() const { return *trace_; }
  const std::vector<RangeFact>& ranges() const { return ranges_; }
  const std::vector<OpFact>& ops() const { return ops_; }
  // Name of a range or op (global string id); "(unnamed)" for an empty range
  // message.
  std::string_view Name(uint32_t id) const;
  // One past the largest name id used (for per-name arrays).
  size_t name_count() const { return name_count_; }
  // Ops counted toward range instance r (its own, its children's, inherited
  // and start/end attribution), in ascending op index = ascending start.
  std::span<const uint32_t> OpsOf(size_t r) const {
    return {op_index_.data() + op_offsets_[r], op_index_.data() + op_offsets_[r + 1]};
  }
  uint64_t inherited_ops() const { return inherited_ops_; }
  uint64_t unattributed_ops() const { return unattributed_ops_; }

 private:
  const Trace* trace_;
  std::vector<RangeFact> ranges_;
  std::vector<OpFact> ops_;
  std::vector<uint32_t> op_offsets_;
  std::vector<uint32_t> op_index_;
  std::vector<std::string> synthetic_names_;  // memcpy/memset labels
  size_t name_count_ = 0;
  uint64_t inherited_ops_ = 0;
  uint64_t unattributed_ops_ = 0;
};

}  // namespace tracer::analysis::reports
