// A Trace plus, per process, the derived structures every table needs (range
// index, op attribution, GPU projection), computed once. Tables and reports
// (analysis/reports/ too) take this so that several tables over one trace
// share the work.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/model/projection.h"
#include "libtracer/analysis/model/range_index.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

struct ProcessAnalysis {
  ProcessAnalysis(const ProcessTrace& p, const AttributionOptions& options)
      : process(&p), ranges(p), attribution(p, ranges, options) {}
  const ProcessTrace* process;
  RangeIndex ranges;
  Attribution attribution;

  // GPU projection, computed on first use: the range x kernel, kernel and
  // API tables do not need it, and it costs as much as the attribution.
  const Projection& projection() const {
    std::call_once(projection_once_, [this] { projection_.emplace(*process, attribution); });
    return *projection_;
  }

 private:
  mutable std::once_flag projection_once_;
  mutable std::optional<Projection> projection_;
};

class AnalyzedTrace {
 public:
  // trace must outlive this object.
  AnalyzedTrace(const Trace& trace, const AttributionOptions& options);
  const Trace& trace() const { return *trace_; }
  const AttributionOptions& options() const { return options_; }
  size_t size() const { return processes_.size(); }
  const ProcessAnalysis& process(size_t i) const { return *processes_[i]; }
  // Computes every process's GPU projection now, the processes side by side
  // (ProcessAnalysis::projection computes one on first use).
  void ComputeProjections() const;

  // Display name of a range: its message; never empty ("(unnamed)").
  std::string_view RangeName(const RangeRecord& r) const;
  // Domain name of a range in its process ("" for the default domain).
  std::string_view DomainName(size_t process, uint32_t domain) const;
  // "pid 1234" or "rank 0 (pid 1234)": how a process is shown in tables.
  std::string ProcessLabel(size_t process) const;

 private:
  const Trace* trace_;
  AttributionOptions options_;
  std::vector<std::unique_ptr<ProcessAnalysis>> processes_;
};

}  // namespace tracer::analysis
