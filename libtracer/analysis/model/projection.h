// GPU projection of range instances (docs/design.md "Projection"; Nsight Systems
// nvtx_gpu_proj_* semantics). For each range instance and each stream its
// attributed ops ran on (an op counts toward every range of its stack,
// attribution.h):
//   span   = [first op start, last op end]
//   busy   = length of the union of the op intervals (overlaps counted once)
//   ops    = kernels + memcpys + memsets
//   kernel = summed kernel durations (overlapping kernels summed, not merged)
// Per instance across all its streams (nsys "Proj Duration"): span = last op
// end - first op start over every stream; busy = union over every stream;
// ops and kernel time summed. A range with no attributed GPU op has no
// projection (nullptr), not a zero one. Child ranges are not subtracted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "libtracer/analysis/model/attribution.h"

namespace tracer::analysis {

struct GpuSpan {
  uint64_t start_ns = 0;   // first op start
  uint64_t end_ns = 0;     // last op end
  uint64_t busy_ns = 0;    // union of op intervals
  uint64_t kernel_ns = 0;  // summed kernel durations
  uint64_t op_count = 0;
  uint64_t kernel_count = 0;
  uint64_t span_ns() const { return end_ns - start_ns; }
};

struct StreamSpan : GpuSpan {
  uint32_t stream = 0;  // StreamDef id
};

struct InstanceProjection {
  GpuSpan total;                        // across every stream
  std::span<const StreamSpan> streams;  // sorted by stream id; held by the Projection
};

class Projection {
 public:
  Projection(const ProcessTrace& process, const Attribution& attribution);
  // The instances' stream spans point into streams_: a copy would point into
  // the original's.
  Projection(const Projection&) = delete;
  Projection& operator=(const Projection&) = delete;
  // nullptr when the range instance (index into ProcessTrace::ranges) has no
  // attributed GPU op.
  const InstanceProjection* Of(uint32_t range_index) const;
  size_t instances_with_gpu() const { return pool_.size(); }

 private:
  // Per range index, its projection's position in pool_, or kNoSlot: one
  // array for all instances instead of an allocation each.
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  std::vector<uint32_t> slot_;
  std::vector<InstanceProjection> pool_;
  // Every instance's stream spans, one instance after another: one array
  // instead of a vector (an allocation) per instance.
  std::vector<StreamSpan> streams_;
};

}  // namespace tracer::analysis
