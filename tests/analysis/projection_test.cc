// GPU projection per range instance and stream (docs/design.md "Projection"), on
// the scenario of scenario.h; expected values derived by hand from the op
// table there.
#include "libtracer/analysis/model/projection.h"

#include <gtest/gtest.h>

#include "libtracer/analysis/read/reader.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

using testing::BuildScenario;
using testing::TraceFileBuilder;

class ProjectionTest : public ::testing::Test {
 protected:
  void Build(AttributionOptions o = {}) {
    TraceFileBuilder b;
    BuildScenario(&b);
    std::string error;
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "s.trace", &trace_, &error));
    const ProcessTrace& p = trace_.processes[0];
    index_ = std::make_unique<RangeIndex>(p);
    attribution_ = std::make_unique<Attribution>(p, *index_, o);
    projection_ = std::make_unique<Projection>(p, *attribution_);
  }
  const InstanceProjection* Of(uint64_t range_id) {
    return projection_->Of(index_->Find(range_id));
  }
  Trace trace_;
  std::unique_ptr<RangeIndex> index_;
  std::unique_ptr<Attribution> attribution_;
  std::unique_ptr<Projection> projection_;
};

TEST_F(ProjectionTest, PerStreamSpanBusyAndOpCount) {
  Build();
  // layer #3: K1 [1000,1400] + K3 [1500,1600] on stream 1, K2 [1200,1300] on 2.
  const InstanceProjection* l3 = Of(3);
  ASSERT_NE(l3, nullptr);
  ASSERT_EQ(l3->streams.size(), 2u);
  EXPECT_EQ(l3->streams[0].stream, 1u);
  EXPECT_EQ(l3->streams[0].span_ns(), 600u);  // 1600 - 1000
  EXPECT_EQ(l3->streams[0].busy_ns, 500u);    // 400 + 100, gap [1400,1500] idle
  EXPECT_EQ(l3->streams[0].op_count, 2u);
  EXPECT_EQ(l3->streams[1].span_ns(), 100u);
  // Across streams: span [1000,1600]; K2 lies inside K1, so busy stays 500;
  // kernel time sums all three: 400 + 100 + 100.
  EXPECT_EQ(l3->total.span_ns(), 600u);
  EXPECT_EQ(l3->total.busy_ns, 500u);
  EXPECT_EQ(l3->total.op_count, 3u);
  EXPECT_EQ(l3->total.kernel_ns, 600u);
  EXPECT_EQ(l3->total.kernel_count, 3u);
}

TEST_F(ProjectionTest, OverlappingOpsOnOneStreamAndAMemcpy) {
  Build();
  // layer #4: K4 [2500,2900] and K5 [2800,3000] overlap on stream 1 (union
  // [2500,3000] = 500); M1 [3500,3600] on stream 2 is an op, not a kernel.
  const InstanceProjection* l4 = Of(4);
  ASSERT_NE(l4, nullptr);
  EXPECT_EQ(l4->streams[0].busy_ns, 500u);
  EXPECT_EQ(l4->streams[0].kernel_ns, 600u);  // 400 + 200
  EXPECT_EQ(l4->streams[1].op_count, 1u);
  EXPECT_EQ(l4->streams[1].kernel_count, 0u);
  EXPECT_EQ(l4->total.span_ns(), 1100u);  // 3600 - 2500
  EXPECT_EQ(l4->total.busy_ns, 600u);     // 500 + 100
  EXPECT_EQ(l4->total.op_count, 3u);
}

TEST_F(ProjectionTest, ParentsIncludeChildrenAndInheritedWork) {
  Build();
  // fwd #2: K1..K5 + M1: span [1000,3600]; busy 500 (layer #3) + 600 (#4).
  EXPECT_EQ(Of(2)->total.span_ns(), 2600u);
  EXPECT_EQ(Of(2)->total.busy_ns, 1100u);
  EXPECT_EQ(Of(2)->total.op_count, 6u);
  // step #1 also gets K6 [6000,6500] inherited from the worker thread.
  EXPECT_EQ(Of(1)->total.span_ns(), 5500u);  // 6500 - 1000
  EXPECT_EQ(Of(1)->total.busy_ns, 1600u);    // 1100 + 500
  EXPECT_EQ(Of(1)->total.op_count, 7u);
  EXPECT_EQ(Of(1)->total.kernel_ns, 1700u);  // 600 + 600 + 500
  // A range without GPU work has no projection at all.
  EXPECT_EQ(Of(6), nullptr);
}

TEST_F(ProjectionTest, WithoutInheritanceStepLosesTheWorkerKernel) {
  AttributionOptions o;
  o.main_thread = MainThreadMode::kOff;
  Build(o);
  EXPECT_EQ(Of(1)->total.span_ns(), 2600u);
  EXPECT_EQ(Of(1)->total.op_count, 6u);
  EXPECT_EQ(Of(5)->total.op_count, 1u);  // bwd keeps its own kernel
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

TEST(ProjectionOrderTest, OpsOutOfOrderAcrossBuffersGiveTheSameProjection) {
  // CUPTI delivers kernels of different streams out of order and splits one
  // launch's records across buffers: here the kernels come newest first, in
  // a different chunk from their launch records.
  testing::TraceFileBuilder b;
  b.Thread(1, 100);
  b.Range(1, 0, 1, "r", 0, 1000);
  b.Launch(1, 1, 10, 1);
  b.Launch(2, 1, 20, 1);
  b.Launch(3, 1, 30, 1);
  b.Frame();
  b.Kernel("c", 1, 400, 500, 3);
  b.Frame();
  b.Kernel("b", 2, 150, 300, 2);
  b.Kernel("a", 1, 100, 200, 1);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "ooo.trace", &trace, &error));
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  const Attribution a(p, index, {});
  const Projection proj(p, a);
  const InstanceProjection* r = proj.Of(0);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->total.span_ns(), 400u);  // 500 - 100
  // Union of [100,200], [150,300], [400,500] = [100,300] + [400,500] = 300.
  EXPECT_EQ(r->total.busy_ns, 300u);
  EXPECT_EQ(r->streams[0].busy_ns, 200u);  // stream 1: 100 + 100
  EXPECT_EQ(r->streams[1].busy_ns, 150u);
}

}  // namespace
}  // namespace tracer::analysis
