#include "libtracer/analysis/model/analyzed_trace.h"

#include "libtracer/analysis/model/parallel_for.h"

namespace tracer::analysis {

AnalyzedTrace::AnalyzedTrace(const Trace& trace, const AttributionOptions& options)
    : trace_(&trace), options_(options) {
  // Each process's analysis reads its own records only.
  processes_.resize(trace.processes.size());
  ParallelFor(processes_.size(), [&](size_t i) {
    processes_[i] = std::make_unique<ProcessAnalysis>(trace.processes[i], options);
  });
}

void AnalyzedTrace::ComputeProjections() const {
  ParallelFor(processes_.size(), [&](size_t i) { processes_[i]->projection(); });
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
