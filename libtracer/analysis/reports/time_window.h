// `--time START:END`: a report over a time window only (like nsys stats'
// --filter-time). Times count from each process's own start, as its
// timeline shows it: an nsys export's session start (nsys's time 0), else
// (recorded streams, Kineto traces) the process's first record, which is
// where `tracer export --format chrome` opens in Perfetto. What the window
// keeps, per process (the rule --steps follows for a step):
//   - range instances lying inside [START, END] whole; a range crossing an
//     edge is left out whole (never clipped);
//   - GPU ops by their launch: an op whose launching API call (else launch
//     record, else, with neither, its own start) is inside the window is kept
//     whole, wherever it ran;
//   - API calls, launch records and marks by their start.
// Everything else is removed before the tables are computed.
#pragma once

#include <cstdint>
#include <string>

#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/reports/step_selection.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

// Offsets from a process's start, in ns, both ends included; an open end is
// 0 / UINT64_MAX.
struct TimeWindow {
  uint64_t start_ns = 0;
  uint64_t end_ns = UINT64_MAX;
  std::string text;  // as the user wrote it, for notes and errors
};

// "START:END" with either end left out ("200ms:", ":2.5s"); each a
// non-negative decimal number with a unit: ns (also no unit), us, ms, s,
// e.g. 1.5s:2.5s, 200ms:, :1500000000. An error says what is wrong.
StatusOr<TimeWindow> ParseTimeWindow(const std::string& spec);

// Time 0 of a process (see the file comment).
uint64_t ProcessTimeOrigin(const ProcessTrace& p);

// Which records of each process to keep. Error: nothing of any process in
// the window (it says how long each process's trace is).
StatusOr<StepPlan> PlanTimeWindow(const Trace& trace, const TimeWindow& window);

}  // namespace tracer::analysis::reports
