#include "libtracer/analysis/tables/whole_trace_rows.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "libtracer/analysis/tables/row_builder.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis {
namespace {

std::string Percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", whole ? 100.0 * part / whole : 0.0);
  return buf;
}

// Kernels that count toward each range instance (the inverse of
// Attribution::Stack), in record order per instance. Kernels are grouped by
// their shared stack (4 bytes per kernel, not one entry per kernel and
// range), and an instance's kernels are the merge of the lists of the
// stacks that hold it.
class InstanceKernels {
 public:
  explicit InstanceKernels(const ProcessAnalysis& pa) {
    const Attribution& at = pa.attribution;
    const size_t kernels = pa.process->kernels.size();
    const size_t stacks = at.distinct_stacks();
    by_stack_offsets_.assign(stacks + 1, 0);
    for (size_t k = 0; k < kernels; ++k) ++by_stack_offsets_[at.StackId(OpKind::kKernel, k) + 1];
    for (size_t s = 0; s < stacks; ++s) by_stack_offsets_[s + 1] += by_stack_offsets_[s];
    by_stack_.resize(kernels);
    std::vector<uint32_t> fill(by_stack_offsets_.begin(), by_stack_offsets_.end() - 1);
    for (size_t k = 0; k < kernels; ++k) {
      by_stack_[fill[at.StackId(OpKind::kKernel, k)]++] = static_cast<uint32_t>(k);
    }
    // Per instance, the stacks (holding kernels) it appears in, as a CSR.
    const size_t ranges = pa.process->ranges.size();
    stack_offsets_.assign(ranges + 1, 0);
    for (uint32_t s = 0; s < stacks; ++s) {
      if (by_stack_offsets_[s] == by_stack_offsets_[s + 1]) continue;
      for (uint32_t r : at.StackAt(s)) ++stack_offsets_[r + 1];
    }
    for (size_t r = 0; r < ranges; ++r) stack_offsets_[r + 1] += stack_offsets_[r];
    stacks_.resize(stack_offsets_.back());
    std::vector<uint32_t> next(stack_offsets_.begin(), stack_offsets_.end() - 1);
    for (uint32_t s = 0; s < stacks; ++s) {
      if (by_stack_offsets_[s] == by_stack_offsets_[s + 1]) continue;
      for (uint32_t r : at.StackAt(s)) stacks_[next[r]++] = s;
    }
  }

  // Calls f(kernel index) for every kernel of instance r, in record order.
  template <typename F>
  void ForEach(uint32_t r, F&& f) {
    const uint32_t first = stack_offsets_[r], last = stack_offsets_[r + 1];
    if (last - first == 1) {
      const uint32_t s = stacks_[first];
      for (uint32_t i = by_stack_offsets_[s]; i < by_stack_offsets_[s + 1]; ++i) f(by_stack_[i]);
      return;
    }
    // Merge by kernel index: (next kernel, position in by_stack_, end).
    heap_.clear();
    for (uint32_t j = first; j < last; ++j) {
      const uint32_t s = stacks_[j];
      heap_.push_back(
          {by_stack_[by_stack_offsets_[s]], by_stack_offsets_[s], by_stack_offsets_[s + 1]});
    }
    const auto later = [](const Cursor& a, const Cursor& b) { return a.kernel > b.kernel; };
    std::make_heap(heap_.begin(), heap_.end(), later);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      Cursor& c = heap_.back();
      f(c.kernel);
      if (++c.at < c.end) {
        c.kernel = by_stack_[c.at];
        std::push_heap(heap_.begin(), heap_.end(), later);
      } else {
        heap_.pop_back();
      }
    }
  }

 private:
  struct Cursor {
    uint32_t kernel, at, end;
  };
  std::vector<uint32_t> by_stack_offsets_, by_stack_;  // kernels grouped by stack
  std::vector<uint32_t> stack_offsets_, stacks_;       // stacks holding each instance
  std::vector<Cursor> heap_;
};

void AddRanges(const ProcessAnalysis& pa, const RowNeeds& needs, RowBuilder* b,
               std::vector<uint32_t>* kernel_stamp) {
  const ProcessTrace& p = *pa.process;
  std::vector<RowBuilder::RangeRef> ref(p.ranges.size());
  for (uint32_t r = 0; r < p.ranges.size(); ++r) {
    const RangeRecord& rec = p.ranges[r];
    ref[r] = b->Range(rec.domain, rec.name);
    if (needs.range_cpu)
      b->AddCpu(ref[r], rec.thread, rec.end_ns - rec.start_ns, pa.ranges.Depth(r), rec.kind);
    if (!needs.range_gpu) continue;
    if (const InstanceProjection* proj = pa.projection().Of(r)) {
      const GpuSpan& g = proj->total;
      b->AddGpu(ref[r], {g.span_ns(), g.busy_ns, static_cast<int64_t>(g.op_count),
                         static_cast<int64_t>(g.kernel_count), static_cast<int64_t>(g.kernel_ns),
                         proj->streams.size()});
    }
  }
  if (!needs.range_kernels || p.kernels.empty()) return;
  // Per instance, so that "first kernel of this name in the instance" is a
  // stamp comparison rather than a set of instances per cell.
  InstanceKernels by_instance(pa);
  for (uint32_t r = 0; r < p.ranges.size(); ++r) {
    by_instance.ForEach(r, [&](uint32_t ki) {
      const KernelRecord& k = p.kernels[ki];
      if (k.name >= kernel_stamp->size()) kernel_stamp->resize(k.name + 1, 0);
      uint32_t& stamp = (*kernel_stamp)[k.name];
      b->AddInstanceKernel(ref[r], k.name, static_cast<int64_t>(k.end_ns - k.start_ns),
                           stamp != r + 1);
      stamp = r + 1;
    });
  }
  std::fill(kernel_stamp->begin(), kernel_stamp->end(), 0);
}

// The summary's notes on how GPU ops were attributed.
void AttributionNotes(const AnalyzedTrace& t, size_t pi, std::vector<std::string>* notes) {
  const ProcessAnalysis& pa = t.process(pi);
  const AttributionCounts& c = pa.attribution.counts();
  if (c.ops == 0) return;
  const std::string who = t.ProcessLabel(pi) + ": ";
  notes->push_back(who + std::to_string(c.ops) + " GPU ops; attributed by launch record " +
                   std::to_string(c.by_source[static_cast<int>(AttributionSource::kLaunchRecord)]) +
                   ", by API record " +
                   std::to_string(c.by_source[static_cast<int>(AttributionSource::kApiRecord)]) +
                   ", by graph snapshot " +
                   std::to_string(c.by_source[static_cast<int>(AttributionSource::kGraphNode)] +
                                  c.by_source[static_cast<int>(AttributionSource::kGraphLaunch)]) +
                   "; unattributed " + std::to_string(c.unattributed) + " (" +
                   Percent(c.unattributed, c.ops) + ")");
  if (c.inherited > 0) {
    notes->push_back(who + std::to_string(c.inherited) + " GPU ops (" +
                     Percent(c.inherited, c.ops) +
                     ") were launched on worker threads and also counted toward the ranges open "
                     "on the main thread " +
                     ThreadLabel(t.trace(), *pa.process, pa.attribution.main_thread()) +
                     " at launch time (--main-thread off for nsys-identical numbers)");
  }
}

ProcessCounts CountsOf(const ProcessAnalysis& pa) {
  const ProcessTrace& p = *pa.process;
  const AttributionCounts& c = pa.attribution.counts();
  ProcessCounts counts;
  counts.ranges = static_cast<int64_t>(p.ranges.size());
  counts.marks = static_cast<int64_t>(p.marks.size());
  counts.kernels = static_cast<int64_t>(p.kernels.size());
  counts.memcpys = static_cast<int64_t>(p.memcpys.size());
  counts.memsets = static_cast<int64_t>(p.memsets.size());
  counts.api_calls = static_cast<int64_t>(p.api_calls.size());
  counts.unattributed = static_cast<int64_t>(c.unattributed);
  counts.outside_ranges = static_cast<int64_t>(c.outside_ranges);
  counts.inherited = static_cast<int64_t>(c.inherited);
  counts.main_thread = pa.attribution.main_thread();
  return counts;
}

}  // namespace

RowNeeds& RowNeeds::operator|=(const RowNeeds& o) {
  range_cpu |= o.range_cpu;
  range_gpu |= o.range_gpu;
  range_kernels |= o.range_kernels;
  kernels |= o.kernels;
  api |= o.api;
  memory |= o.memory;
  summary |= o.summary;
  return *this;
}

TableRows WholeTraceRows(const AnalyzedTrace& t, const ReportOptions& o, const RowNeeds& needs) {
  TableRows rows;
  rows.strings = &t.trace().strings;
  RowBuilder b(&rows, o);
  std::vector<uint32_t> kernel_stamp;
  if (needs.range_gpu) t.ComputeProjections();
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    b.BeginProcess(pi);
    if (needs.range_cpu || needs.range_gpu || needs.range_kernels) {
      AddRanges(pa, needs, &b, &kernel_stamp);
    }
    if (needs.kernels) {
      for (const KernelRecord& k : p.kernels) {
        b.AddKernel(k.name, static_cast<int64_t>(k.end_ns - k.start_ns));
      }
    }
    if (needs.api) {
      for (const ApiRecord& a : p.api_calls) b.AddApi(a);
    }
    if (needs.memory) {
      for (const MemcpyRecord& m : p.memcpys) b.AddMemcpy(m);
      for (const MemsetRecord& m : p.memsets) b.AddMemset(m);
    }
    if (t.options().main_thread == MainThreadMode::kThread && pa.attribution.main_thread() == 0) {
      rows.summary_notes.push_back(t.ProcessLabel(pi) + ": --main-thread " +
                                   std::to_string(t.options().main_thread_tid) +
                                   ": no thread with that OS id; no launch inherits ranges");
    }
    b.EndProcess(p, t.trace(), CountsOf(pa));
    AttributionNotes(t, pi, &rows.summary_notes);
  }
  return rows;
}

}  // namespace tracer::analysis
