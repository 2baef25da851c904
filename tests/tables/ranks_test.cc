// Several processes (ranks) in one report: phases and timeline cover every
// process, the cross-rank table finds the straggler, --rank / --pid select.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "libtracer/analysis/reports/cross_rank.h"
#include "libtracer/analysis/reports/phases.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/reports/timeline.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

std::string S(const Cell& c) { return std::get<std::string>(c); }
int64_t I(const Cell& c) { return std::get<int64_t>(c); }

int Col(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no column " << name << " in " << t.name;
  return 0;
}

// Rank r (pid 100 + r) runs `steps` steps of step_ns each: forward for the
// first half with a kernel, backward for the rest.
void AddRank(Trace* trace, int rank, int steps, uint64_t step_ns) {
  testing::TraceFixture f(trace, 100 + rank);
  f.P().header.rank = rank;
  for (int i = 0; i < steps; ++i) {
    const uint64_t t = static_cast<uint64_t>(i) * 10 * step_ns;
    const uint64_t step = f.Range("step", t, t + step_ns);
    const uint64_t fwd = f.Range("forward", t, t + step_ns / 2, step);
    f.Kernel("k_fwd", t + 10, t + step_ns / 2, fwd, t + 1);
    f.Range("backward", t + step_ns / 2, t + step_ns, step);
  }
}

// Rank 0: 2 steps of 1000 ns; rank 1 (the straggler): 3 steps of 1500 ns;
// rank 2: 2 steps of 1100 ns.
struct ThreeRanks {
  Trace trace;
  ThreeRanks() {
    AddRank(&trace, 0, 2, 1000);
    AddRank(&trace, 1, 3, 1500);
    AddRank(&trace, 2, 2, 1100);
  }
};

TEST(SeveralRanks, PhasesHaveEveryProcessAndItsOwnAllRow) {
  ThreeRanks r;
  AnalyzedTrace analyzed(r.trace, {});
  ReportModel model(analyzed);
  const auto rules =
      ParseRegexRules("^forward$ -> forward\n^backward$ -> backward\n", "test").value();
  const Table t = PhasesTable(model, rules, {}).value();
  ASSERT_EQ(t.columns[0].name, "process");
  // 2 + 3 + 2 step rows and one "all" row per process.
  ASSERT_EQ(t.rows.size(), 10u);
  const int step = Col(t, "step_cpu_ns"), fwd = Col(t, "forward_cpu_ns");
  int64_t all_rows = 0;
  for (const auto& row : t.rows) {
    if (S(row[1]) != "all") continue;
    ++all_rows;
    const std::string who = S(row[0]);
    if (who == "rank 0 (pid 100)") {
      EXPECT_EQ(I(row[step]), 2000);
      EXPECT_EQ(I(row[fwd]), 1000);
    } else if (who == "rank 1 (pid 101)") {
      EXPECT_EQ(I(row[step]), 4500);  // not rank 0's total
      EXPECT_EQ(I(row[fwd]), 2250);
    } else {
      EXPECT_EQ(who, "rank 2 (pid 102)");
      EXPECT_EQ(I(row[step]), 2200);
    }
  }
  EXPECT_EQ(all_rows, 3);
}

TEST(SeveralRanks, TimelineShowsTheIterationOfEveryProcessThatHasIt) {
  ThreeRanks r;
  AnalyzedTrace analyzed(r.trace, {});
  ReportModel model(analyzed);
  const Table t = TimelineTable(model, {"", 2}).value();  // only rank 1 has a third step
  ASSERT_EQ(t.columns[0].name, "process");
  ASSERT_EQ(t.rows.size(), 3u);  // step, forward, backward
  for (const auto& row : t.rows) EXPECT_EQ(S(row[0]), "rank 1 (pid 101)");
  const Table first = TimelineTable(model, {"", 0}).value();
  EXPECT_EQ(first.rows.size(), 9u);
  EXPECT_FALSE(TimelineTable(model, {"", 3}).ok());
}

TEST(SeveralRanks, CrossRankTableFindsTheStraggler) {
  ThreeRanks r;
  AnalyzedTrace analyzed(r.trace, {});
  ReportModel model(analyzed);
  const Table t = CrossRankTable(analyzed, model, {});
  auto row_of = [&](const std::string& name) -> const std::vector<Cell>& {
    for (const auto& row : t.rows) {
      if (S(row[1]) == name) return row;
    }
    ADD_FAILURE() << "no row " << name;
    return t.rows.front();
  };
  const auto& s0 = row_of("step #0");
  EXPECT_EQ(S(s0[0]), "step");
  EXPECT_EQ(I(s0[Col(t, "ranks")]), 3);
  EXPECT_EQ(I(s0[Col(t, "cpu_min_ns")]), 1000);
  EXPECT_EQ(I(s0[Col(t, "cpu_median_ns")]), 1100);
  EXPECT_EQ(I(s0[Col(t, "cpu_max_ns")]), 1500);
  EXPECT_EQ(S(s0[Col(t, "cpu_slowest")]), "rank 1 (pid 101)");
  EXPECT_NEAR(std::get<double>(s0[Col(t, "cpu_spread_pct")]), 100.0 * 500 / 1100, 1e-9);
  // The third step exists on rank 1 only.
  EXPECT_EQ(I(row_of("step #2")[Col(t, "ranks")]), 1);
  // Range rows are the ranges table's totals per process: forward on rank 1
  // is 3 x 750 ns.
  const auto& fwd = row_of("forward");
  EXPECT_EQ(I(fwd[Col(t, "cpu_max_ns")]), 2250);
  EXPECT_EQ(I(fwd[Col(t, "cpu_min_ns")]), 1000);
  // GPU: the kernel spans launch + 10 .. half the step.
  EXPECT_EQ(I(fwd[Col(t, "gpu_max_ns")]), 3 * 740);
  EXPECT_EQ(S(fwd[Col(t, "gpu_slowest")]), "rank 1 (pid 101)");
}

TEST(SeveralRanks, RankAndPidSelectProcesses) {
  ThreeRanks r;
  ProcessSelection sel;
  sel.ranks = {1, 2};
  EXPECT_EQ(SelectProcesses(sel, &r.trace), "");
  ASSERT_EQ(r.trace.processes.size(), 2u);
  EXPECT_EQ(r.trace.processes[0].header.pid, 101u);
  sel = {};
  sel.pids = {102};
  EXPECT_EQ(SelectProcesses(sel, &r.trace), "");
  ASSERT_EQ(r.trace.processes.size(), 1u);
  sel = {};
  sel.ranks = {7};
  const std::string error = SelectProcesses(sel, &r.trace);
  EXPECT_NE(error.find("no process matches --rank / --pid"), std::string::npos) << error;
  EXPECT_NE(error.find("rank 2 (pid 102)"), std::string::npos) << error;
}

TEST(SeveralRanks, RanksIsAnExtraTableWithTheReportFilter) {
  ThreeRanks r;
  AnalyzedTrace analyzed(r.trace, {});
  ExtraTableOptions o;
  o.report.filter = "^forward$";
  auto tables = BuildExtraTables(analyzed, {"ranks"}, o);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const Table& t = tables->front();
  int ranges = 0;
  for (const auto& row : t.rows) ranges += S(row[0]) == "range" ? 1 : 0;
  EXPECT_EQ(ranges, 1);  // forward only
}

// --by rank: the per-range-name tables (gaps, top, range categories) and the
// groups table have one row per process, process first, each with that
// process's own sums; without it, one row per name over every process.
TEST(SeveralRanks, ByRankSplitsGapsTopCategoriesAndGroupsPerProcess) {
  ThreeRanks r;
  AnalyzedTrace analyzed(r.trace, {});
  const std::string groups_file = ::testing::TempDir() + "by_rank_test.groups";
  std::ofstream(groups_file) << "fwd = forward\n";
  ExtraTableOptions o;
  o.groups_file = groups_file;
  o.report.by_process = true;
  auto tables = BuildExtraTables(analyzed, {"gaps", "top", "categories", "groups"}, o);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  // Kernel time of forward per process: 2 x 490, 3 x 740, 2 x 540 ns.
  const std::map<std::string, int64_t> kernel_ns = {
      {"rank 0 (pid 100)", 980}, {"rank 1 (pid 101)", 2220}, {"rank 2 (pid 102)", 1080}};
  const std::map<std::string, int64_t> instances = {
      {"rank 0 (pid 100)", 2}, {"rank 1 (pid 101)", 3}, {"rank 2 (pid 102)", 2}};
  std::map<std::string, int> seen;
  for (const Table& t : *tables) {
    if (t.name == "kernel_categories") continue;  // per category, not per range
    SCOPED_TRACE(t.name);
    ASSERT_EQ(t.columns[0].name, "process");
    std::map<std::string, int64_t> got_kernel_ns, got_instances;
    for (const auto& row : t.rows) {
      const std::string name = S(row[1]);
      if (name != "forward" && name != "fwd") continue;
      const std::string who = S(row[0]);
      if (t.name == "gaps") {
        got_kernel_ns[who] = I(row[Col(t, "gpu_busy_ns")]);
        got_instances[who] = I(row[Col(t, "instances")]);
      } else if (t.name == "top") {
        got_kernel_ns[who] = I(row[Col(t, "total_ns")]);
        got_instances[who] = I(row[Col(t, "count")]);
      } else if (t.name == "range_categories") {
        got_kernel_ns[who] = I(row[Col(t, "gpu_op_ns")]);
        got_instances[who] = I(row[Col(t, "instances")]);
      } else {
        EXPECT_EQ(t.name, "groups");
        got_kernel_ns[who] = I(row[Col(t, "kernel_ns")]);
        got_instances[who] = I(row[Col(t, "instances")]);
      }
    }
    EXPECT_EQ(got_kernel_ns, kernel_ns);
    EXPECT_EQ(got_instances, instances);
    ++seen[t.name];
  }
  EXPECT_EQ(seen, (std::map<std::string, int>{
                      {"gaps", 1}, {"groups", 1}, {"range_categories", 1}, {"top", 1}}));

  // Without --by rank: one row per name, summed over the processes.
  o.report.by_process = false;
  auto merged = BuildExtraTables(analyzed, {"gaps", "groups"}, o);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  for (const Table& t : *merged) {
    SCOPED_TRACE(t.name);
    EXPECT_NE(t.columns[0].name, "process");
    int rows = 0;
    for (const auto& row : t.rows) {
      if (S(row[0]) != "forward" && S(row[0]) != "fwd") continue;
      ++rows;
      EXPECT_EQ(I(row[Col(t, t.name == "gaps" ? "gpu_busy_ns" : "kernel_ns")]), 980 + 2220 + 1080);
      EXPECT_EQ(I(row[Col(t, "instances")]), 7);
    }
    EXPECT_EQ(rows, 1);
  }
  std::remove(groups_file.c_str());
}

// One rank of the job the bounded ranks table is checked on: `steps` steps
// named step_name(i), then `extra` top-level ranges named extra_name of
// extra_ns each; nested: the steps sit inside a top-level "outer" range
// instead of at top level.
struct RankSpec {
  int rank = 0, steps = 2;
  uint64_t step_ns = 1000;
  std::string (*step_name)(int) = [](int) { return std::string("step"); };
  int extra = 0;
  std::string extra_name = "eval";
  uint64_t extra_ns = 0;
  bool nested = false;
};

void AddRankOf(Trace* trace, const RankSpec& s) {
  testing::TraceFixture f(trace, 100 + s.rank);
  f.P().header.rank = s.rank;
  uint64_t t = 0;
  const uint64_t outer =
      s.nested ? f.Range("outer", 0, static_cast<uint64_t>(s.steps) * 10 * s.step_ns) : 0;
  for (int i = 0; i < s.steps; ++i) {
    t = static_cast<uint64_t>(i) * 10 * s.step_ns;
    const uint64_t step = f.Range(s.step_name(i), t, t + s.step_ns, outer);
    const uint64_t fwd = f.Range("forward", t, t + s.step_ns / 2, step);
    f.Kernel("k_fwd", t + 10, t + s.step_ns / 2, fwd, t + 1);
    const uint64_t bwd = f.Range("backward", t + s.step_ns / 2, t + s.step_ns, step);
    f.Kernel("k_bwd", t + s.step_ns / 2 + 5, t + s.step_ns - 1, bwd, t + s.step_ns / 2 + 1);
  }
  t += 10 * s.step_ns;
  for (int i = 0; i < s.extra; ++i, t += 2 * s.extra_ns) {
    const uint64_t e = f.Range(s.extra_name, t, t + s.extra_ns);
    f.Kernel("k_eval", t + 3, t + s.extra_ns / 2, e, t + 1);
  }
}

// The ranks table of the ranks read at once (CrossRankTable over one trace)
// and one at a time (CrossRankBuilder over one trace per rank, as
// `tracer report --table ranks` reads files too large to read at once).
struct BothWays {
  Table whole, bounded;
  std::string inexact;
};

BothWays RanksBothWays(const std::vector<RankSpec>& ranks, const CrossRankOptions& o) {
  BothWays out;
  Trace all;
  for (const RankSpec& s : ranks) AddRankOf(&all, s);
  AnalyzedTrace analyzed(all, {});
  ReportModel model(analyzed);
  out.whole = CrossRankTable(analyzed, model, o);
  CrossRankBuilder builder(o);
  for (const RankSpec& s : ranks) {
    Trace one;
    AddRankOf(&one, s);
    AnalyzedTrace a(one, {});
    ReportModel m(a);
    builder.Add(a, m);
  }
  out.bounded = builder.Finish(&out.inexact);
  return out;
}

void ExpectSameTable(const Table& a, const Table& b) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) EXPECT_TRUE(a.rows[i] == b.rows[i]) << "row " << i;
  EXPECT_EQ(a.notes, b.notes);
  EXPECT_EQ(a.columns.size(), b.columns.size());
}

// Rank 2 alone would take "eval" as its step (two instances, more time than
// its steps); over all ranks "step" covers more, as it must be for each.
std::vector<RankSpec> MixedJob() {
  std::vector<RankSpec> ranks(4);
  ranks[0] = {.rank = 0, .steps = 2, .step_ns = 1000, .extra = 1, .extra_ns = 500};
  ranks[1] = {.rank = 1, .steps = 3, .step_ns = 1500};
  ranks[2] = {.rank = 2, .steps = 2, .step_ns = 1100, .extra = 2, .extra_ns = 3000};
  ranks[3] = {.rank = 3, .steps = 2, .step_ns = 1200};
  return ranks;
}

TEST(BoundedRanks, OneFileAtATimeEqualsAllAtOnce) {
  const BothWays t = RanksBothWays(MixedJob(), {});
  EXPECT_EQ(t.inexact, "");
  ExpectSameTable(t.whole, t.bounded);
  // Not vacuous: step rows of "step" (not rank 2's "eval"), range rows.
  ASSERT_GE(t.bounded.rows.size(), 6u);
  EXPECT_EQ(S(t.bounded.rows[0][1]), "step #0");
  EXPECT_EQ(I(t.bounded.rows[0][Col(t.bounded, "ranks")]), 4);
  EXPECT_EQ(S(t.bounded.rows[2][1]), "step #2");
  EXPECT_EQ(I(t.bounded.rows[2][Col(t.bounded, "ranks")]), 1);
}

TEST(BoundedRanks, StepRangeFilterAndTopAsReadAtOnce) {
  CrossRankOptions o;
  o.step_range = "eval";
  ExpectSameTable(RanksBothWays(MixedJob(), o).whole, RanksBothWays(MixedJob(), o).bounded);
  o = {};
  o.ranges.filter = "^(forward|eval)$";
  o.ranges.top = 1;
  const BothWays t = RanksBothWays(MixedJob(), o);
  ExpectSameTable(t.whole, t.bounded);
  o = {};
  o.step_range = "nothing";  // no step rows, the same note
  const BothWays none = RanksBothWays(MixedJob(), o);
  ExpectSameTable(none.whole, none.bounded);
  EXPECT_NE(none.bounded.notes[0].find("no range named 'nothing'"), std::string::npos);
}

TEST(BoundedRanks, NumberedStepNamesLineUpAcrossFiles) {
  // ProfilerStep#<n>: rank 0 from step 5, rank 1 from step 6 (the program's
  // numbers); --step-range ProfilerStep means ProfilerStep#*.
  std::vector<RankSpec> ranks(2);
  ranks[0] = {.rank = 0, .steps = 3, .step_ns = 1000, .step_name = [](int i) {
                return "ProfilerStep#" + std::to_string(5 + i);
              }};
  ranks[1] = {.rank = 1, .steps = 3, .step_ns = 1300, .step_name = [](int i) {
                return "ProfilerStep#" + std::to_string(6 + i);
              }};
  for (const std::string step_range : {"", "ProfilerStep"}) {
    const BothWays t = RanksBothWays(ranks, {step_range, {}});
    EXPECT_EQ(t.inexact, "");
    ExpectSameTable(t.whole, t.bounded);
    EXPECT_EQ(S(t.bounded.rows[0][1]), "ProfilerStep#* #5");
    EXPECT_EQ(I(t.bounded.rows[1][Col(t.bounded, "ranks")]), 2);  // step 6 on both
  }
}

TEST(BoundedRanks, StepsNestedInOneFileAreNotGuessed) {
  // Rank 3's steps sit inside "outer": read at once they are steps of the
  // chosen range "step"; one file at a time they were no candidate of
  // rank 3's file, so the builder says it cannot give that table.
  std::vector<RankSpec> ranks = MixedJob();
  ranks[3].nested = true;
  ranks[3].step_ns = 100;  // "outer" must not win over "step"
  const BothWays t = RanksBothWays(ranks, {});
  EXPECT_EQ(S(t.whole.rows[0][1]), "step #0");
  EXPECT_NE(t.inexact.find("'step'"), std::string::npos) << t.inexact;
  // --step-range names it: every file lists it, exact again.
  const BothWays named = RanksBothWays(ranks, {"step", {}});
  EXPECT_EQ(named.inexact, "");
  ExpectSameTable(named.whole, named.bounded);
}

}  // namespace
}  // namespace tracer::analysis::reports
