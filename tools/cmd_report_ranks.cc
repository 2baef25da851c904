#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/cross_rank.h"
#include "libtracer/analysis/reports/report_model.h"
#include "tools/cli_util.h"
#include "tools/report_ranks.h"

namespace tracer::cli {

BoundedRanks BoundedRanksTable(const std::vector<std::string>& files,
                               const analysis::ReportOptions& options,
                               const analysis::AttributionOptions& attribution,
                               const analysis::RangeNameRules& names,
                               const std::string& step_range) {
  BoundedRanks out;
  analysis::reports::CrossRankBuilder builder({step_range, options});
  size_t read = 0, selected = 0;
  for (const std::string& file : files) {
    // The trace, its analysis and its model live for one file only.
    analysis::Trace trace;
    if (LoadInputs("report", {file}, &trace) == 0) continue;
    ++read;
    // A file holding none of the --rank / --pid processes adds nothing; the
    // error is for none in all files.
    if (!analysis::SelectProcesses(options.processes, &trace).empty()) continue;
    selected += trace.processes.size();
    analysis::NormalizeRangeNames(&trace, names);
    const analysis::AnalyzedTrace analyzed(trace, attribution);
    const analysis::reports::ReportModel model(analyzed);
    builder.Add(analyzed, model);
  }
  if (read == 0) {
    out.error = "nothing could be read";
  } else if (selected == 0) {
    out.error = "no process matches --rank / --pid";
  } else {
    out.table = builder.Finish(&out.inexact);
  }
  return out;
}

}  // namespace tracer::cli
