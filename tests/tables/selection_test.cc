// --time windows, --steps with them, and step numbers that are the
// program's own (a capture that began at the step range's N-th occurrence
// numbers its first step N-1), on hand-built traces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/record_selection.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/step_selection.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/reports/time_window.h"
#include "libtracer/analysis/reports/timeline.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

constexpr uint64_t kT0 = 5000;  // the process's first record

// n steps "step" [T, T+900] at T = kT0 + 1000 i, each with a child "fwd"
// [T+100, T+800] and a kernel launched at T+850 (API call T+850..T+860)
// that runs [T+950, T+1200]: past its step's end, into the next step's time.
Trace MakeSteps(int n) {
  Trace trace;
  testing::TraceFixture f(&trace);
  for (int i = 0; i < n; ++i) {
    const uint64_t t = kT0 + static_cast<uint64_t>(i) * 1000;
    const uint64_t step = f.Range("step", t, t + 900);
    f.Range("fwd", t + 100, t + 800, step);
    f.Kernel("gemm", t + 950, t + 1200, step, t + 850, 10);
  }
  return trace;
}

std::vector<uint64_t> StepNumbers(const Trace& trace) {
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const Steps steps = FindSteps(model, "").value();
  EXPECT_EQ(steps.by_process.size(), 1u);
  return steps.by_process.empty() ? std::vector<uint64_t>() : steps.by_process[0].numbers;
}

std::vector<uint64_t> RangeStarts(const ProcessTrace& p, const Trace& trace, const char* name) {
  std::vector<uint64_t> out;
  for (const auto& r : p.ranges) {
    if (trace.strings.Get(r.name) == name) out.push_back(r.start_ns);
  }
  return out;
}

TEST(TimeWindowTest, ParsesUnitsAndOpenEnds) {
  auto w = ParseTimeWindow("1.5s:2.5s");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->start_ns, 1500000000u);
  EXPECT_EQ(w->end_ns, 2500000000u);
  w = ParseTimeWindow("200ms:");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start_ns, 200000000u);
  EXPECT_EQ(w->end_ns, UINT64_MAX);
  w = ParseTimeWindow(":3us");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start_ns, 0u);
  EXPECT_EQ(w->end_ns, 3000u);
  w = ParseTimeWindow("1000:2000ns");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start_ns, 1000u);
  EXPECT_EQ(w->end_ns, 2000u);
  EXPECT_EQ(ParseTimeWindow("0.000000001s:")->start_ns, 1u);
  for (const char* bad : {"", ":", "1s", "2s:1s", "1x:", "1.5", "1.:2", ".:2", "a:b", "1:2:3",
                          "0.0000000001s:", "99999999999s:", "-1:2", "1.2.3s:"}) {
    auto r = ParseTimeWindow(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind("--time: '", 0), 0u) << bad;
    }
  }
}

TEST(TimeWindowTest, TimeZeroIsTheProcessStartAsItsTimelineShows) {
  Trace trace = MakeSteps(2);
  EXPECT_EQ(ProcessTimeOrigin(trace.processes[0]), kT0);
  // nsys times count from its session start (header time 0): kept as is.
  trace.processes[0].header.source = "nsys-sqlite";
  EXPECT_EQ(ProcessTimeOrigin(trace.processes[0]), 0u);
}

TEST(TimeWindowTest, RangesInsideWholeGpuOpsByTheirLaunch) {
  Trace trace = MakeSteps(4);
  // [1050, 2900] from the start: step 1 [1000, 1900] crosses the start edge
  // (left out whole, never clipped), its child fwd [1100, 1800] is inside;
  // step 2 [2000, 2900] is inside. Kernels: launched at 1850 and 2850 (in),
  // 850 and 3850 (out); the one launched at 2850 runs to 3200, past the
  // window, and is kept whole.
  const auto note = SelectRecords({"", "1050:2.9us", ""}, {}, &trace);
  ASSERT_TRUE(note.ok()) << note.status().message();
  EXPECT_NE(note->find("--time '1050:2.9us'"), std::string::npos);
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(RangeStarts(p, trace, "step"), (std::vector<uint64_t>{kT0 + 2000}));
  EXPECT_EQ(RangeStarts(p, trace, "fwd"), (std::vector<uint64_t>{kT0 + 1100, kT0 + 2100}));
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].start_ns, kT0 + 1950);
  EXPECT_EQ(p.kernels[1].end_ns, kT0 + 3200);
  ASSERT_EQ(p.api_calls.size(), 2u);
  ASSERT_EQ(p.launches.size(), 2u);
  // The step left is still step 2 of the program.
  EXPECT_EQ(StepNumbers(trace), (std::vector<uint64_t>{2}));
}

TEST(TimeWindowTest, EmptyWindowAndBadValueAreOneLineErrors) {
  Trace trace = MakeSteps(2);
  auto r = SelectRecords({"", "10s:", ""}, {}, &trace);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no range, GPU op or API call in the window"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("has records from 0 s to"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  r = SelectRecords({"", "5:4", ""}, {}, &trace);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ends before it starts"), std::string::npos);
  EXPECT_EQ(trace.processes[0].ranges.size(), 4u);  // nothing cut on error
}

TEST(TimeWindowTest, CombinesWithStepsKeepingWhatBothKeep) {
  Trace trace = MakeSteps(4);
  // Steps 1-3, up to 2.9 us: steps 1 and 2.
  auto note = SelectRecords({"1-3", ":2.9us", ""}, {}, &trace);
  ASSERT_TRUE(note.ok()) << note.status().message();
  EXPECT_NE(note->find("--steps"), std::string::npos);
  EXPECT_NE(note->find("--time"), std::string::npos);
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(RangeStarts(p, trace, "step"), (std::vector<uint64_t>{kT0 + 1000, kT0 + 2000}));
  EXPECT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(StepNumbers(trace), (std::vector<uint64_t>{1, 2}));

  Trace other = MakeSteps(4);
  auto none = SelectRecords({"3", ":1us", ""}, {}, &other);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no record is in both"), std::string::npos);
}

TEST(StepNumbersTest, NonContiguousSelectionKeepsTheProgramsNumbers) {
  Trace trace = MakeSteps(5);
  ASSERT_TRUE(SelectRecords({"1,3-", "", ""}, {}, &trace).ok());
  EXPECT_EQ(StepNumbers(trace), (std::vector<uint64_t>{1, 3, 4}));
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  EXPECT_EQ(TimelineTable(model, {"", 3})->title, "Timeline of step #3");
  EXPECT_EQ(TimelineTable(model, {"", -1})->title, "Timeline of step #1");
  EXPECT_FALSE(TimelineTable(model, {"", 2}).ok());
}

void SetCapture(Trace* trace, const char* range, const char* start) {
  trace->processes[0].header.config = {{"TRACER_CAPTURE_RANGE", range},
                                       {"TRACER_CAPTURE_START", start},
                                       {"TRACER_CAPTURE_STOP", "0"}};
}

TEST(StepNumbersTest, CaptureStartNumbersTheFirstStep) {
  // A file written before the counter existed: TRACER_CAPTURE_START says
  // where capture began (3rd occurrence: step 2).
  Trace old_file = MakeSteps(3);
  SetCapture(&old_file, "step", "3");
  EXPECT_EQ(StepNumbers(old_file), (std::vector<uint64_t>{2, 3, 4}));
  // The counter the tracer writes when capture began wins (cudaProfilerStart
  // delayed it to the 5th occurrence).
  Trace recorded = MakeSteps(3);
  SetCapture(&recorded, "step", "3");
  recorded.processes[0].counters["capture_range_first_occurrence"] = 5;
  EXPECT_EQ(StepNumbers(recorded), (std::vector<uint64_t>{4, 5, 6}));
  // Capture gated by another range: its count says nothing of the steps.
  Trace other = MakeSteps(3);
  SetCapture(&other, "epoch", "3");
  EXPECT_EQ(StepNumbers(other), (std::vector<uint64_t>{0, 1, 2}));
}

TEST(StepNumbersTest, StepsSelectsByTheProgramsNumbers) {
  Trace trace = MakeSteps(3);
  SetCapture(&trace, "step", "3");  // steps 2, 3, 4
  {
    Trace copy = trace;
    auto r = SelectRecords({"0", "", ""}, {}, &copy);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("holds steps 2 to 4"), std::string::npos)
        << r.status().message();
  }
  ASSERT_TRUE(SelectRecords({"3", "", ""}, {}, &trace).ok());
  EXPECT_EQ(RangeStarts(trace.processes[0], trace, "step"), (std::vector<uint64_t>{kT0 + 1000}));
  EXPECT_EQ(StepNumbers(trace), (std::vector<uint64_t>{3}));
}

}  // namespace
}  // namespace tracer::analysis::reports
