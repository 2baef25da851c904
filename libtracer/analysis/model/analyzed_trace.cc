#include "libtracer/analysis/model/analyzed_trace.h"

#include "libtracer/analysis/model/parallel_for.h"

namespace tracer::analysis {

namespace {

// The records a process's analysis reads: ranges and GPU ops.
size_t AnalyzedRecords(const Trace& trace) {
  size_t n = 0;
  for (const ProcessTrace& p : trace.processes) {
    n += p.ranges.size() + p.kernels.size() + p.memcpys.size() + p.memsets.size();
  }
  return n;
}

}  // namespace

AnalyzedTrace::AnalyzedTrace(const Trace& trace, const AttributionOptions& options)
    : trace_(&trace), options_(options) {
  // Each process's analysis reads its own records only.
  processes_.resize(trace.processes.size());
  ParallelFor(processes_.size(), AnalyzedRecords(trace), [&](size_t i) {
    processes_[i] = std::make_unique<ProcessAnalysis>(trace.processes[i], options);
  });
}

void AnalyzedTrace::ComputeProjections() const {
  ParallelFor(processes_.size(), AnalyzedRecords(*trace_),
              [&](size_t i) { processes_[i]->projection(); });
}

std::string_view AnalyzedTrace::RangeName(const RangeRecord& r) const {
  std::string_view name = trace_->strings.Get(r.name);
  return name.empty() ? std::string_view("(unnamed)") : name;
}

std::string_view AnalyzedTrace::DomainName(size_t process, uint32_t domain) const {
  if (domain == 0 || process >= trace_->processes.size()) return {};
  const auto& names = trace_->processes[process].domain_names;
  auto it = names.find(domain);
  return it == names.end() ? std::string_view() : trace_->strings.Get(it->second);
}

std::string AnalyzedTrace::ProcessLabel(size_t process) const {
  return ProcessLabelOf(trace_->processes[process]);
}

}  // namespace tracer::analysis
