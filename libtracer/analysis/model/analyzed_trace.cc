#include "libtracer/analysis/model/analyzed_trace.h"


namespace tracer::analysis {

AnalyzedTrace::AnalyzedTrace(const Trace& trace, const AttributionOptions& options)
    : trace_(&trace), options_(options) {
  processes_.reserve(trace.processes.size());
  for (const ProcessTrace& p : trace.processes) {
    processes_.push_back(std::make_unique<ProcessAnalysis>(p, options));
  }
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
