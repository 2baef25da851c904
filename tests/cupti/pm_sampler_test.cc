// PmSampler in process, over the fake libcupti (device half scripted, host
// half the real libcupti's), with the trace and wall clocks injected: exact
// clock mapping, the bound on samples held for the writer, and a stop with
// nothing to sample.
#include "libtracer/capture/pm_sampler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/cupti_api/real_cupti_api.h"
#include "tests/cupti/recording_sink.h"

namespace tracer {
namespace {

using AddSampleFn = void (*)(uint32_t, uint64_t, uint64_t, const double*, size_t);

class PmSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_CUPTI_REAL_LIBRARY", REAL_CUPTI_PATH, 1);
    std::string error;
    api_ = RealCuptiApi::Load(FAKE_CUPTI_PATH, &error);
    ASSERT_NE(api_, nullptr) << error;
    void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    add_ = reinterpret_cast<AddSampleFn>(dlsym(h, "fakeCuptiPmAddSample"));
    ASSERT_NE(add_, nullptr);
  }
  PmSampler::Options Basic() {
    PmSampler::Options o;
    o.metrics = {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"};
    o.decode_period_ms = 1;
    o.log = [this](const std::string& line) { lines_.push_back(line); };
    return o;
  }
  static void WaitFor(PmSampler& s, uint64_t samples) {
    for (int i = 0; i < 5000 && s.stats().samples < samples; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::unique_ptr<RealCuptiApi> api_;
  AddSampleFn add_ = nullptr;
  std::vector<std::string> lines_;
};

// Wall (GPU global timer) W maps to trace time T measured together: a
// sample at W + 5 ms lands at T + 5 ms, whatever the two clocks read.
TEST_F(PmSamplerTest, GpuTimesMapOntoTheTraceClockByOneOffset) {
  const uint64_t wall = 1'790'000'000'000'000'000ull, trace = 12'345'000'000ull;
  PmSampler::Options o = Basic();
  o.trace_now = [&] { return trace; };
  o.wall_now = [&] { return wall; };
  PmSampler sampler(api_.get(), o);
  const double v[3] = {1, 2, 3};
  add_(2, wall + 5'000'000, wall + 6'000'000, v, 3);
  ASSERT_TRUE(sampler.Start());
  sampler.DeviceSeen(2);
  WaitFor(sampler, 1);
  sampler.Stop();
  testing::RecordingSink sink;
  sampler.Drain(sink, true);
  ASSERT_EQ(sink.pm_samples.size(), 3u) << (lines_.empty() ? "" : lines_[0]);
  for (const PmSampleRecord& r : sink.pm_samples) {
    EXPECT_EQ(r.start_ns, trace + 5'000'000);
    EXPECT_EQ(r.end_ns, trace + 6'000'000);
    EXPECT_EQ(r.device, 2u);
  }
  EXPECT_EQ(sink.pm_samples[2].value, 3);
  EXPECT_TRUE(lines_.empty()) << lines_[0];
}

// Samples already on the trace clock (a CUPTI honouring the timestamp
// callback) are kept as they are.
TEST_F(PmSamplerTest, TimesNearTheTraceClockAreKept) {
  const uint64_t wall = 1'790'000'000'000'000'000ull, trace = 12'345'000'000ull;
  PmSampler::Options o = Basic();
  o.trace_now = [&] { return trace; };
  o.wall_now = [&] { return wall; };
  PmSampler sampler(api_.get(), o);
  const double v[3] = {1, 2, 3};
  add_(3, trace - 2'000'000, trace - 1'000'000, v, 3);
  ASSERT_TRUE(sampler.Start());
  sampler.DeviceSeen(3);
  WaitFor(sampler, 1);
  sampler.Stop();
  testing::RecordingSink sink;
  sampler.Drain(sink, true);
  ASSERT_EQ(sink.pm_samples.size(), 3u);
  EXPECT_EQ(sink.pm_samples[0].start_ns, trace - 2'000'000);
}

// The writer drains every 200 ms; samples beyond max_pending metric values
// are dropped whole and counted (dropped.pm_queue_full), never queued
// without bound.
TEST_F(PmSamplerTest, SamplesBeyondTheQueueBoundAreCountedAsDropped) {
  PmSampler::Options o = Basic();
  o.max_pending = 7;  // two whole samples of three values
  PmSampler sampler(api_.get(), o);
  const uint64_t t = 1'790'000'000'000'000'000ull;
  for (int i = 0; i < 5; ++i) {
    const double v[3] = {1.0 * i, 2, 3};
    add_(4, t + i * 1000, t + i * 1000 + 900, v, 3);
  }
  ASSERT_TRUE(sampler.Start());
  sampler.DeviceSeen(4);
  WaitFor(sampler, 5);
  sampler.Stop();
  testing::RecordingSink sink;
  sampler.Drain(sink, true);
  EXPECT_EQ(sink.pm_samples.size(), 6u);
  EXPECT_EQ(sink.counters["dropped.pm_queue_full"], 3u);
  EXPECT_EQ(sampler.stats().samples, 5u);
}

// The hardware buffer overflowed (keep-oldest) between two samples and no
// periodic decode came before the stop: the final decode meets the
// overflow first and must go on past it, to the sample taken once the
// buffer had room again (it stays in the hardware buffer until decoded),
// and count the 3 intervals lost between the two. A stop at the end of a
// short run, or a sampler thread starved by a loaded machine, is that case.
TEST_F(PmSamplerTest, FinalDecodeGoesOnPastAnOverflow) {
  void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto overflow = reinterpret_cast<void (*)(uint32_t)>(dlsym(h, "fakeCuptiPmOverflow"));
  ASSERT_NE(overflow, nullptr);
  PmSampler::Options o = Basic();
  o.interval_ns = 1'000'000;
  o.decode_period_ms = 60'000;  // no periodic decode after the first
  PmSampler sampler(api_.get(), o);
  const uint64_t t = 1'790'000'000'000'000'000ull;
  const double v0[3] = {0, 0, 0}, v1[3] = {1, 1, 1}, v2[3] = {2, 2, 2};
  add_(5, t, t + 1'000'000, v0, 3);
  ASSERT_TRUE(sampler.Start());
  sampler.DeviceSeen(5);
  WaitFor(sampler, 1);  // the set-up's decode is done; the next is the final one
  ASSERT_EQ(sampler.stats().samples, 1u);
  add_(5, t + 1'000'000, t + 2'000'000, v1, 3);
  overflow(5);
  add_(5, t + 5'000'000, t + 6'000'000, v2, 3);
  sampler.Stop();
  testing::RecordingSink sink;
  sampler.Drain(sink, true);
  ASSERT_EQ(sink.pm_samples.size(), 9u);
  EXPECT_EQ(sink.pm_samples[8].value, 2);
  EXPECT_EQ(sink.counters["dropped.pm_hw_buffer_overflow"], 3u);
}

TEST_F(PmSamplerTest, StopWithNoDeviceReturnsAtOnce) {
  PmSampler sampler(api_.get(), Basic());
  ASSERT_TRUE(sampler.Start());
  const auto t0 = std::chrono::steady_clock::now();
  sampler.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  testing::RecordingSink sink;
  sampler.Drain(sink, true);
  EXPECT_TRUE(sink.pm_samples.empty());
  EXPECT_TRUE(lines_.empty());
}

}  // namespace
}  // namespace tracer
