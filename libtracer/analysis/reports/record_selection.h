// `--steps` and `--time` together, for `tracer report` and `tracer diff`:
// both are planned on the whole trace (so step numbers stay the program's
// own whatever the window), a record is kept when every given selection
// keeps it, and the trace is cut once before any table is computed.
#pragma once

#include <string>

#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct RecordSelectionSpec {
  std::string steps;       // --steps; empty = every step
  std::string time;        // --time; empty = all the time
  std::string step_range;  // --step-range; empty = found as for phases
  bool empty() const { return steps.empty() && time.empty(); }
};

// Removes from trace what the selection leaves out; the value is the note
// the tables carry (empty when nothing was asked). Errors: a bad value, or
// an empty selection, in one line.
StatusOr<std::string> SelectRecords(const RecordSelectionSpec& spec,
                                    const AttributionOptions& attribution, Trace* trace);

}  // namespace tracer::analysis::reports
