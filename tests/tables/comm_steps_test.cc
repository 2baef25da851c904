// The comm table's classification and breakdown (HTA definitions, checked
// against HTA itself in tests/python/test_hta_compare.py), and --steps.
#include <gtest/gtest.h>

#include <string>

#include "libtracer/analysis/reports/comm_compute.h"
#include "libtracer/analysis/reports/step_selection.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

int64_t I(const Cell& c) { return std::get<int64_t>(c); }
std::string S(const Cell& c) { return std::get<std::string>(c); }

int Col(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

TEST(CommCompute, KernelsAreClassifiedAsHtaDoes) {
  EXPECT_EQ(ClassifyGpuOp(OpKind::kKernel, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            GpuOpClass::kCommunication);
  EXPECT_EQ(ClassifyGpuOp(OpKind::kKernel, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"),
            GpuOpClass::kCommunication);
  EXPECT_EQ(ClassifyGpuOp(OpKind::kKernel, "Memcpy DtoD (Device -> Device)"), GpuOpClass::kMemory);
  EXPECT_EQ(ClassifyGpuOp(OpKind::kKernel, "void at::native::vectorized_elementwise_kernel<4>()"),
            GpuOpClass::kCompute);
  EXPECT_EQ(ClassifyGpuOp(OpKind::kKernel, "cudaStreamSync"), GpuOpClass::kOther);
  EXPECT_EQ(ClassifyGpuOp(OpKind::kMemcpy, "anything"), GpuOpClass::kMemory);
}

// A step per 1000 ns: a compute kernel [t+100, t+300) and an NCCL kernel
// [t+200, t+500) on another stream, a copy [t+600, t+700).
Trace Steps(int n) {
  Trace trace;
  testing::TraceFixture f(&trace);
  for (int i = 0; i < n; ++i) {
    const uint64_t t = static_cast<uint64_t>(i) * 1000;
    const uint64_t step = f.Range("step", t, t + 900);
    f.Kernel("gemm_kernel", t + 100, t + 300, step, t + 10);
    f.Kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t + 200, t + 500, step, t + 20, 100, 1, 2);
    f.Memcpy(1, 4096, t + 600, t + 700, step, t + 30);
  }
  return trace;
}

TEST(CommCompute, BreakdownPerProcessAndStep) {
  Trace trace = Steps(2);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const Table t = CommComputeTable(model, {});
  ASSERT_GE(t.rows.size(), 4u);
  const auto& all = t.rows[0];
  EXPECT_EQ(S(all[Col(t, "kind")]), "process");
  EXPECT_EQ(I(all[Col(t, "span_ns")]), 1600);  // 100 .. 1700
  EXPECT_EQ(I(all[Col(t, "busy_ns")]), 2 * 500);
  EXPECT_EQ(I(all[Col(t, "idle_ns")]), 600);
  EXPECT_EQ(I(all[Col(t, "compute_ns")]), 2 * 200);
  EXPECT_EQ(I(all[Col(t, "comm_ns")]), 2 * 300);
  EXPECT_EQ(I(all[Col(t, "overlap_ns")]), 2 * 100);
  EXPECT_NEAR(std::get<double>(all[Col(t, "overlap_pct")]), 100.0 / 3, 1e-9);
  EXPECT_EQ(I(all[Col(t, "memory_ns")]), 2 * 100);
  EXPECT_EQ(I(all[Col(t, "non_compute_ns")]), 2 * 300);
  const auto& step1 = t.rows[2];
  EXPECT_EQ(S(step1[Col(t, "name")]), "step #1");
  EXPECT_EQ(I(step1[Col(t, "span_ns")]), 600);
  EXPECT_EQ(I(step1[Col(t, "ops")]), 3);
}

TEST(StepSelectionTest, ParsesRangesAndRejectsNonsense) {
  auto s = ParseStepSelection("1,3-4,7-");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->Contains(0));
  EXPECT_TRUE(s->Contains(1));
  EXPECT_TRUE(s->Contains(4));
  EXPECT_FALSE(s->Contains(5));
  EXPECT_TRUE(s->Contains(1000));
  EXPECT_TRUE(ParseStepSelection("-2")->Contains(0));
  for (const char* bad : {"", "a", "5-3", "-", "1-x", "-1-2"}) {
    EXPECT_FALSE(ParseStepSelection(bad).ok()) << bad;
  }
}

TEST(StepSelectionTest, KeepsTheSelectedStepsRecordsOnly) {
  Trace trace = Steps(4);
  auto selection = ParseStepSelection("1-2");
  ASSERT_TRUE(selection.ok());
  StatusOr<StepPlan> plan = Status::Error("");
  {
    AnalyzedTrace analyzed(trace, {});
    ReportModel model(analyzed);
    plan = PlanStepSelection(model, "", *selection);
  }
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->steps_selected, 2u);
  ApplyStepPlan(*plan, &trace);
  const ProcessTrace& p = trace.processes[0];
  ASSERT_EQ(p.ranges.size(), 2u);
  EXPECT_EQ(p.ranges[0].start_ns, 1000u);
  EXPECT_EQ(p.kernels.size(), 4u);
  EXPECT_EQ(p.memcpys.size(), 2u);
  for (const auto& k : p.kernels) EXPECT_GE(k.start_ns, 1000u);
  AnalyzedTrace after(trace, {});
  ReportModel model(after);
  EXPECT_EQ(CommComputeTable(model, {}).rows.size(),
            1u + 2u + 1u + 1u);  // process, 2 steps, sum, step range
  // Nothing in the selection: one clear error.
  AnalyzedTrace again(trace, {});
  ReportModel again_model(again);
  auto none = PlanStepSelection(again_model, "", *ParseStepSelection("9"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no step in the selection"), std::string::npos);
}

}  // namespace
}  // namespace tracer::analysis::reports
