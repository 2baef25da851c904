// The aggregate stage of the core tables: the one place their rows
// (table_rows.h) are filled. The pipeline is
//
//   read -> order -> attribute -> aggregate (RowBuilder) -> render
//
// and there are two attribute stages, one per memory model, that feed it the
// same facts:
//   - the whole-trace path (whole_trace_rows.h): AnalyzedTrace's attribution
//     and projection, every instance at once;
//   - the bounded path (stream_aggregator.h): range instances folded while
//     reading, each as soon as nothing can change it.
// A new column of a core table is computed here once and both paths print it
// (core_tables.h renders). Facts are given per process, between BeginProcess
// and EndProcess, with process-local domain ids and global string ids;
// EndProcess turns them into named rows through --filter / --domain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "libtracer/analysis/aggregate/duration_accumulator.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

// An instance's GPU work (projection.h: across every stream, children
// included). Given only for instances with at least one op.
struct InstanceGpu {
  uint64_t span_ns = 0;  // last op end - first op start
  uint64_t busy_ns = 0;  // union of the op intervals
  int64_t ops = 0, kernels = 0, kernel_ns = 0;
  size_t streams = 0;
};

// What a process's summary row says beyond its definitions (SummaryRowOf).
struct ProcessCounts {
  int64_t ranges = 0, marks = 0, kernels = 0, memcpys = 0, memsets = 0, api_calls = 0;
  int64_t unattributed = 0, outside_ranges = 0, inherited = 0;
  uint32_t main_thread = 0;  // ThreadDef id, 0 = none
};

class RowBuilder {
 public:
  // rows->strings must be set; o selects rows (--filter, --domain) and keys
  // them (--by-process).
  RowBuilder(TableRows* rows, const ReportOptions& o);

  // Facts of the process with this index in the report follow.
  void BeginProcess(size_t process);

  // The row of a range name in the current process; a handle for the calls
  // below (stable until EndProcess).
  using RangeRef = uint32_t;
  RangeRef Range(uint32_t domain, uint32_t name);

  // One range instance's CPU side: its thread, end - start, nesting depth,
  // push/pop or start/end.
  void AddCpu(RangeRef r, uint32_t thread, uint64_t cpu_ns, uint32_t depth, RangeKind kind);
  // One range instance's GPU side (instances with GPU work only).
  void AddGpu(RangeRef r, const InstanceGpu& gpu);
  // A kernel that counts toward an instance of r (nsys nvtx_kern_sum: every
  // range of its stack); first: the instance's first kernel of that name.
  void AddInstanceKernel(RangeRef r, uint32_t kernel, int64_t duration_ns, bool first);
  // Every kernel of one name that counts toward one instance of r, at once.
  void MergeInstanceKernels(RangeRef r, uint32_t kernel, const DurationAccumulator& durations);

  // Per-record tables: kernels, API calls, memory operations.
  void AddKernel(uint32_t kernel, int64_t duration_ns);
  void AddApi(const ApiRecord& a);
  void AddMemcpy(const MemcpyRecord& m);
  void AddMemset(const MemsetRecord& m);

  // The process's facts become named rows (p: its definitions, complete by
  // now) and its summary row; notes: the summary's notes.
  void EndProcess(const ProcessTrace& p, const Trace& trace, const ProcessCounts& counts);

 private:
  struct RangeBuild {
    uint32_t domain = 0, name = 0;
    RangeRow row;
    std::vector<uint32_t> threads;  // first 8 distinct ThreadDef ids
  };
  struct KernelCell {
    uint64_t key = 0;  // RangeRef << 32 | kernel name id
    RangeKernelRow row;
  };
  KernelCell& Cell(RangeRef r, uint32_t kernel);

  TableRows* rows_;
  ReportOptions options_;
  size_t process_ = 0;      // index of the current process
  size_t row_process_ = 0;  // its row key (0 unless by_process)
  std::vector<RangeBuild> ranges_;
  static constexpr RangeRef kNoRef = UINT32_MAX;
  std::vector<RangeRef> range_by_name_;                 // domain 0: by name id
  std::unordered_map<uint64_t, RangeRef> range_index_;  // other domains: domain << 32 | name
  std::vector<KernelCell> cells_;
  std::unordered_map<uint64_t, uint32_t> cell_index_;  // KernelCell::key -> index
  // Consecutive kernels revisit a handful of cells: a direct-mapped cache
  // in front of the hash map.
  struct CacheEntry {
    uint64_t key = UINT64_MAX;
    uint32_t cell = 0;
  };
  std::vector<CacheEntry> cache_;
  // Kernel row by name id (string ids are dense: one slot per string at
  // most), for the current process.
  std::vector<DurationAccumulator*> kernel_rows_;
  // API row by function name id, [0] runtime, [1] driver, for the current
  // process.
  std::vector<DurationAccumulator*> api_rows_[2];
};

}  // namespace tracer::analysis
