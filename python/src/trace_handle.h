// One loaded trace on the Python side (tracer.load): the files read by the
// CLI's reader and importers, range names normalised, --rank / --steps /
// --time applied, and the analysis (range index, attribution, projection)
// built once, exactly as `tracer report` does before its tables.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::python {

namespace nb = nanobind;

// Raised to Python as tracer.TraceError with the CLI's one-line message.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadOptions {
  std::vector<std::string> paths;
  std::vector<int64_t> ranks, pids;
  std::string steps, time, step_range;
  std::string main_thread = "auto";
  bool raw_names = false;
  std::string name_rules;  // file
};

// Options of one report: the CLI's `tracer report` flags of the same names.
struct ReportRequest {
  std::vector<std::string> tables;
  size_t top = 0;
  std::string sort = "total";
  std::string filter, domain, by;
  bool by_process = false;
  std::string groups_file, step_range, phase_rules, category_rules;
  int64_t iteration = -1;
  // A further selection on top of load()'s (a copy of the trace is cut).
  std::vector<int64_t> ranks, pids;
  std::string steps, time;
  std::string main_thread;  // "" = load()'s
};

class TraceHandle {
 public:
  explicit TraceHandle(const LoadOptions& options);

  const std::vector<std::string>& warnings() const { return trace_->warnings; }
  const std::string& selection_note() const { return selection_note_; }

  nb::list Processes() const;
  nb::list Ranges() const;
  nb::list GpuOps() const;
  nb::list ApiCalls() const;
  nb::list PmSamples() const;
  // [(table name, title, [(column, kind, values, valid)], notes)]
  nb::list Report(const ReportRequest& request) const;

 private:
  std::unique_ptr<analysis::Trace> trace_;
  analysis::AttributionOptions attribution_;
  std::unique_ptr<analysis::AnalyzedTrace> analyzed_;
  std::string selection_note_;
  std::string step_range_;
  std::vector<int64_t> range_offset_;  // per process: its first row in Ranges()
};

}  // namespace tracer::python
