// Timeline and phases on a hand-built two-step trace, plus the property that
// phase shares add up to 100 % on random traces.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "libtracer/analysis/reports/phases.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/reports/timeline.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

std::string S(const Cell& c) { return std::get<std::string>(c); }
int64_t I(const Cell& c) { return std::get<int64_t>(c); }
double D(const Cell& c) { return std::get<double>(c); }

// Two steps of 1000 ns; in each: forward [100, 400) with a kernel, backward
// [400, 800) with an aten op inside and a kernel, optimizer [800, 900);
// a top-level "load" range between steps (less frequent than "step").
struct TwoSteps {
  Trace trace;
  TwoSteps() {
    testing::TraceFixture f(&trace);
    for (int i = 0; i < 2; ++i) {
      const uint64_t t = i * 2000;
      const uint64_t step = f.Range("step", t, t + 1000);
      const uint64_t fwd = f.Range("forward", t + 100, t + 400, step);
      f.Kernel("k_fwd", t + 150, t + 350, fwd, t + 110);
      const uint64_t bwd = f.Range("backward", t + 400, t + 800, step);
      const uint64_t mm = f.Range("f_mm_inside_backward", t + 450, t + 500, bwd);
      f.Kernel("k_bwd", t + 500, t + 900, mm, t + 460);
      f.Range("optimizer", t + 800, t + 900, step);
    }
    f.Range("load", 1500, 1600);
  }
};

TEST(Steps, DefaultIsTheMostFrequentTopLevelRange) {
  TwoSteps ts;
  AnalyzedTrace analyzed(ts.trace, {});
  ReportModel model(analyzed);
  const Steps steps = FindSteps(model, "").value();
  EXPECT_EQ(steps.name, "step");
  EXPECT_EQ(steps.instances.size(), 2u);
  EXPECT_EQ(FindSteps(model, "load")->instances.size(), 1u);
  const auto none = FindSteps(model, "nope");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "no range named 'nope' in the trace (--step-range)");
}

TEST(Steps, NumberedStepsAreOneStepAndLongRunsWin) {
  EXPECT_EQ(StepKey("ProfilerStep#12"), "ProfilerStep#*");
  EXPECT_EQ(StepKey("step_3"), "step_*");
  EXPECT_EQ(StepKey("step"), "step");
  EXPECT_EQ(StepKey("f_w2"), "f_w2");
  Trace trace;
  testing::TraceFixture f(&trace);
  // Kineto-style: numbered steps on the main thread; many short top-level
  // ranges on a worker thread must not win.
  for (int i = 0; i < 3; ++i)
    f.Range("ProfilerStep#" + std::to_string(i + 5), i * 1000, i * 1000 + 900);
  for (int i = 0; i < 10; ++i)
    f.Range("autograd::engine::evaluate_function", i * 10, i * 10 + 5, 0, 2);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  Steps steps = FindSteps(model, "").value();
  EXPECT_EQ(steps.name, "ProfilerStep#*");
  EXPECT_EQ(steps.instances.size(), 3u);
  EXPECT_EQ(FindSteps(model, "ProfilerStep#6")->instances.size(), 1u);  // exact name
  EXPECT_EQ(FindSteps(model, "ProfilerStep")->instances.size(), 0u + 3u);
  // The numbers in the names are the program's own step numbers (the
  // profiler's schedule started at step 5), not a count from the capture.
  ASSERT_EQ(steps.by_process.size(), 1u);
  EXPECT_EQ(steps.by_process[0].numbers, (std::vector<uint64_t>{5, 6, 7}));
}

TEST(Steps, WorkerThreadRangesInsideTheStepAreNotCandidates) {
  Trace trace;
  testing::TraceFixture f(&trace);
  // One traced step on the main thread (1); the autograd worker (2) runs
  // two numbered backward ranges inside it, which share the key
  // b_checkpoint_* and so repeat. The data loader (3) works before the step,
  // outside it: still a candidate, but shorter.
  f.Range("load_batch", 0, 50, 0, 3);
  f.Range("step", 100, 10100);
  f.Range("b_checkpoint_0", 5000, 5120, 0, 2);
  f.Range("b_checkpoint_1", 6000, 6120, 0, 2);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const Steps steps = FindSteps(model, "").value();
  EXPECT_EQ(steps.name, "step");
  EXPECT_EQ(steps.instances.size(), 1u);

  // The same worker ranges outside any main-thread range are top-level work
  // of their own and, repeating, are preferred to a single range.
  Trace trace2;
  testing::TraceFixture g(&trace2);
  g.Range("step", 100, 10100);
  g.Range("b_checkpoint_0", 20000, 20120, 0, 2);
  g.Range("b_checkpoint_1", 21000, 21120, 0, 2);
  AnalyzedTrace analyzed2(trace2, {});
  ReportModel model2(analyzed2);
  EXPECT_EQ(FindSteps(model2, "")->name, "b_checkpoint_*");
}

TEST(Steps, NameNumbersAreUsedOnlyWhenTheyRiseWithTime) {
  EXPECT_EQ(StepNumberInName("ProfilerStep#12"), std::optional<uint64_t>(12));
  EXPECT_EQ(StepNumberInName("step_0"), std::optional<uint64_t>(0));
  EXPECT_EQ(StepNumberInName("step"), std::nullopt);
  EXPECT_EQ(StepNumberInName("#7"), std::nullopt);  // no name before the number
  EXPECT_EQ(StepNumberInName("f_w2"), std::nullopt);
  EXPECT_EQ(StepNumberInName("s#12345678901234567890"), std::nullopt);  // 20 digits
  Trace trace;
  testing::TraceFixture f(&trace);
  // A profiler restarted mid-run numbers from 0 again: #3 #4 #0 #1. Name
  // numbers would repeat, so the steps are counted in time order instead.
  const int names[] = {3, 4, 0, 1};
  for (int i = 0; i < 4; ++i)
    f.Range("ProfilerStep#" + std::to_string(names[i]), i * 1000, i * 1000 + 900);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const Steps steps = FindSteps(model, "").value();
  ASSERT_EQ(steps.by_process.size(), 1u);
  EXPECT_EQ(steps.by_process[0].numbers, (std::vector<uint64_t>{0, 1, 2, 3}));
}

TEST(TimelineTable, OrderedRangesOfOneIteration) {
  TwoSteps ts;
  AnalyzedTrace analyzed(ts.trace, {});
  ReportModel model(analyzed);
  Table t = TimelineTable(model, {"", 1}).value();
  ASSERT_EQ(t.rows.size(), 5u);
  // Columns: index depth range thread start cpu gpu_proj gpu_busy kernels.
  EXPECT_EQ(S(t.rows[0][2]), "step");
  EXPECT_EQ(I(t.rows[0][4]), 0);
  EXPECT_EQ(S(t.rows[1][2]), "  forward");
  EXPECT_EQ(I(t.rows[1][1]), 1);
  EXPECT_EQ(I(t.rows[1][4]), 100);
  EXPECT_EQ(I(t.rows[1][5]), 300);
  EXPECT_EQ(I(t.rows[1][6]), 200);
  EXPECT_EQ(S(t.rows[3][2]), "    f_mm_inside_backward");
  EXPECT_EQ(I(t.rows[3][1]), 2);
  EXPECT_EQ(S(t.rows[4][2]), "  optimizer");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[4][6]));  // no GPU work
  EXPECT_EQ(S(t.rows[0][3]), "main");
  const auto out_of_range = TimelineTable(model, {"", 2});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().message(),
            "--iteration 2 is out of range: the trace holds steps 0..1 of 'step'");
}

TEST(PhasesTable, TopMostRangesDecideAndSharesAddUp) {
  TwoSteps ts;
  AnalyzedTrace analyzed(ts.trace, {});
  ReportModel model(analyzed);
  const auto rules = ParseRegexRules(DefaultPhaseRulesText(), "phases.rules").value();
  Table t = PhasesTable(model, rules, {}).value();
  ASSERT_EQ(t.rows.size(), 3u);  // two steps + all
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (t.columns[i].name == name) return i;
    }
    ADD_FAILURE() << "no column " << name;
    return size_t{0};
  };
  const auto& row = t.rows[0];
  EXPECT_EQ(I(row[col("step_cpu_ns")]), 1000);
  EXPECT_EQ(I(row[col("forward_cpu_ns")]), 300);
  // f_mm_inside_backward matches ^f_ but sits inside backward: backward's.
  EXPECT_EQ(I(row[col("backward_cpu_ns")]), 400);
  EXPECT_EQ(I(row[col("optimizer_cpu_ns")]), 100);
  EXPECT_EQ(I(row[col("other_cpu_ns")]), 200);
  EXPECT_DOUBLE_EQ(D(row[col("forward_cpu_pct")]), 30.0);
  // GPU: step span [150, 900); forward [150, 350), backward [500, 900).
  EXPECT_EQ(I(row[col("step_gpu_ns")]), 750);
  EXPECT_EQ(I(row[col("forward_gpu_ns")]), 200);
  EXPECT_EQ(I(row[col("backward_gpu_ns")]), 400);
  EXPECT_EQ(I(row[col("other_gpu_ns")]), 150);
  const auto& all = t.rows[2];
  EXPECT_EQ(S(all[0]), "all");
  EXPECT_EQ(I(all[col("step_cpu_ns")]), 2000);
  EXPECT_EQ(I(all[col("backward_cpu_ns")]), 800);
}

TEST(PhasesTable, BuiltInRulesAreTheDataFile) {
  EXPECT_EQ(ReadTextFile(TRACER_SOURCE_DIR "/data/phases.rules").value(), DefaultPhaseRulesText());
}

TEST(SplitPhases, OverlapsGoToTheFirstPhase) {
  const auto split = SplitPhases(0, 100, {{1, 10, 60}, {0, 50, 70}, {2, 90, 200}}, 3);
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[0], 20u);  // [50, 70)
  EXPECT_EQ(split[1], 40u);  // [10, 50)
  EXPECT_EQ(split[2], 10u);  // [90, 100), clipped
  EXPECT_EQ(split[3], 30u);  // other
}

// Property: on random overlapping intervals the parts always sum to the
// whole, and each phase never exceeds the union of its own intervals.
TEST(SplitPhases, PartsSumToTheWholeOnRandomInput) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    const uint64_t start = rng() % 1000, end = start + rng() % 5000;
    std::vector<PhaseInterval> ivs;
    const size_t n = 1 + rng() % 4;
    std::vector<uint64_t> own(n, 0);
    for (int k = 0, m = rng() % 12; k < m; ++k) {
      const uint64_t s = rng() % 7000, e = s + rng() % 2000;
      ivs.push_back({static_cast<size_t>(rng() % n), s, e});
    }
    const auto split = SplitPhases(start, end, ivs, n);
    uint64_t sum = 0;
    for (uint64_t v : split) sum += v;
    ASSERT_EQ(sum, end - start) << "iteration " << iter;
    for (size_t p = 0; p < n; ++p) {
      // Union of phase p's own intervals clipped to the step, by brute force.
      std::vector<PhaseInterval> only;
      for (const auto& iv : ivs) {
        if (iv.phase == p) only.push_back({0, iv.start_ns, iv.end_ns});
      }
      const uint64_t union_p = SplitPhases(start, end, only, 1)[0];
      ASSERT_LE(split[p], union_p);
    }
  }
}

// Property on whole random traces: every step's percentages add to 100.
TEST(PhasesTable, RandomTracesAddUpTo100Percent) {
  std::mt19937_64 rng(7);
  const char* names[] = {"forward", "backward", "optimizer", "f_x", "b_y", "aten::mm", "misc"};
  for (int iter = 0; iter < 50; ++iter) {
    Trace trace;
    testing::TraceFixture f(&trace);
    uint64_t t = 0;
    for (int s = 0; s < 3; ++s) {
      const uint64_t len = 1000 + rng() % 5000;
      const uint64_t step = f.Range("step", t, t + len);
      uint64_t c = t;
      while (c < t + len) {
        const uint64_t w = 1 + rng() % 800;
        const uint64_t e = std::min(c + w, t + len);
        const uint64_t r = f.Range(names[rng() % 7], c, e, step);
        if (rng() % 2) f.Kernel("k", c + rng() % 100, c + 100 + rng() % 2000, r, c);
        // Worker-thread range overlapping anything.
        if (rng() % 4 == 0) f.Range(names[rng() % 7], c, std::min(c + 300, t + len), 0, 2);
        c = e;
      }
      t += len + 100;
    }
    AnalyzedTrace analyzed(trace, {});
    ReportModel model(analyzed);
    Table table =
        PhasesTable(model, ParseRegexRules(DefaultPhaseRulesText(), "p").value(), {"step"}).value();
    for (const auto& row : table.rows) {
      for (const char* suffix : {"_cpu_pct", "_gpu_pct"}) {
        double sum = 0;
        bool any = false;
        for (size_t i = 0; i < table.columns.size(); ++i) {
          const auto& name = table.columns[i].name;
          if (name.size() > 8 && name.substr(name.size() - 8) == suffix &&
              std::holds_alternative<double>(row[i])) {
            sum += D(row[i]);
            any = true;
          }
        }
        if (any) {
          ASSERT_NEAR(sum, 100.0, 1e-6) << "iteration " << iter;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tracer::analysis::reports
