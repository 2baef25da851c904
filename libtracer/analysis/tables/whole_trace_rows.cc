#include "libtracer/analysis/tables/whole_trace_rows.h"

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
// Attribution::Stack), as a CSR: instance r's kernels are
// kernels[offsets[r] .. offsets[r + 1]), in record order.
struct InstanceKernels {
  std::vector<uint32_t> offsets, kernels;
};

InstanceKernels KernelsByInstance(const ProcessAnalysis& pa) {
  const ProcessTrace& p = *pa.process;
  InstanceKernels out;
  out.offsets.assign(p.ranges.size() + 1, 0);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) ++out.offsets[r + 1];
  }
  for (size_t r = 0; r < p.ranges.size(); ++r) out.offsets[r + 1] += out.offsets[r];
  out.kernels.resize(out.offsets.back());
  std::vector<uint32_t> fill(out.offsets.begin(), out.offsets.end() - 1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) {
      out.kernels[fill[r]++] = static_cast<uint32_t>(k);
    }
  }
  return out;
}

void AddRanges(const ProcessAnalysis& pa, const RowNeeds& needs, RowBuilder* b,
               std::vector<uint32_t>* kernel_stamp) {
  const ProcessTrace& p = *pa.process;
  std::vector<RowBuilder::RangeRef> ref(p.ranges.size());
  for (uint32_t r = 0; r < p.ranges.size(); ++r) {
    const RangeRecord& rec = p.ranges[r];
    ref[r] = b->Range(rec.domain, rec.name);
    if (needs.range_cpu)
      b->AddCpu(ref[r], rec.thread, rec.end_ns - rec.start_ns, pa.ranges.Depth(r));
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
  const InstanceKernels by_instance = KernelsByInstance(pa);
  for (uint32_t r = 0; r < p.ranges.size(); ++r) {
    for (uint32_t i = by_instance.offsets[r]; i < by_instance.offsets[r + 1]; ++i) {
      const KernelRecord& k = p.kernels[by_instance.kernels[i]];
      if (k.name >= kernel_stamp->size()) kernel_stamp->resize(k.name + 1, 0);
      uint32_t& stamp = (*kernel_stamp)[k.name];
      b->AddInstanceKernel(ref[r], k.name, static_cast<int64_t>(k.end_ns - k.start_ns),
                           stamp != r + 1);
      stamp = r + 1;
    }
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
