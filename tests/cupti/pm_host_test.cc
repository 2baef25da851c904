// The profiler-host half of PM sampling on the real libcupti 13 (it needs
// no GPU): the presets compile to one pass on current chips, and unknown
// metrics, multi-pass sets and unknown chips are errors naming them.
#include "libtracer/capture/pm_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "libtracer/capture/pm_metrics.h"
#include "libtracer/cupti_api/real_cupti_api.h"

namespace tracer {
namespace {

class PmHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    api_ = RealCuptiApi::Load(REAL_CUPTI_PATH, &error);
    if (api_ == nullptr) GTEST_SKIP() << "real libcupti not loadable: " << error;
    if (!PmHost::SupportedChips(api_.get(), &chips_, &error)) {
      GTEST_SKIP() << "libcupti's profiler-host API fails here: " << error;
    }
  }
  std::unique_ptr<RealCuptiApi> api_;
  std::vector<std::string> chips_;
};

TEST_F(PmHostTest, ListsTheSupportedChips) {
  EXPECT_GE(chips_.size(), 20u);
  for (const char* chip : {"GA100", "GA102", "GH100", "AD102", "GB202"}) {
    EXPECT_NE(std::find(chips_.begin(), chips_.end(), chip), chips_.end()) << chip;
  }
}

TEST_F(PmHostTest, EveryPresetIsOnePassOnCurrentChips) {
  for (const char* chip : {"GA100", "GA102", "GH100", "AD102", "GB100", "GB202"}) {
    for (const PmPreset& p : PmPresets()) {
      PmHost host(api_.get());
      std::string error;
      ASSERT_TRUE(host.Initialize(chip, {}, &error)) << error;
      std::vector<uint8_t> image;
      EXPECT_TRUE(host.BuildConfig({p.metrics.begin(), p.metrics.end()}, &image, &error))
          << chip << " " << p.name << ": " << error;
      EXPECT_GT(image.size(), 0u);
    }
  }
}

TEST_F(PmHostTest, UnknownMetricsAreNamed) {
  PmHost host(api_.get());
  std::string error;
  ASSERT_TRUE(host.Initialize("GA102", {}, &error)) << error;
  std::vector<uint8_t> image;
  EXPECT_FALSE(host.BuildConfig({"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                 "foo__bar.sum", "gr__cycles_active.avg", "nope__x.max"},
                                &image, &error));
  EXPECT_EQ(error,
            "unknown metrics for GA102: foo__bar.sum, nope__x.max (tracer list-metrics --chip "
            "GA102)");
}

TEST_F(PmHostTest, MetricSetsNeedingSeveralPassesNameTheHeavyMetric) {
  PmHost host(api_.get());
  std::string error;
  ASSERT_TRUE(host.Initialize("GA102", {}, &error)) << error;
  std::vector<uint8_t> image;
  EXPECT_FALSE(host.BuildConfig(
      {"gr__cycles_active.avg", "sm__throughput.avg.pct_of_peak_sustained_elapsed"}, &image,
      &error));
  EXPECT_NE(error.find("passes on GA102; PM sampling collects one: drop "
                       "sm__throughput.avg.pct_of_peak_sustained_elapsed (15 passes)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("gr__cycles_active.avg ("), std::string::npos) << error;
}

TEST_F(PmHostTest, UnknownChipListsTheSupportedOnes) {
  PmHost host(api_.get());
  std::string error;
  EXPECT_FALSE(host.Initialize("XY999", {}, &error));
  EXPECT_NE(error.find("chip 'XY999' is not supported"), std::string::npos) << error;
  EXPECT_NE(error.find("GA102"), std::string::npos) << error;
}

TEST_F(PmHostTest, ListsBaseMetricsWithTheirSuffixes) {
  PmHost host(api_.get());
  std::string error;
  ASSERT_TRUE(host.Initialize("GH100", {}, &error)) << error;
  std::vector<PmHost::MetricInfo> metrics;
  ASSERT_TRUE(host.ListMetrics(&metrics, &error)) << error;
  auto dram = std::find_if(metrics.begin(), metrics.end(),
                           [](const auto& m) { return m.name == "dram__throughput"; });
  ASSERT_NE(dram, metrics.end());
  EXPECT_STREQ(dram->type, "throughput");
  EXPECT_NE(std::find(dram->submetrics.begin(), dram->submetrics.end(),
                      ".avg.pct_of_peak_sustained_elapsed"),
            dram->submetrics.end());
  EXPECT_GT(metrics.size(), 500u);
}

TEST(PmMetrics, PresetsExpandInPlaceWithoutRepeats) {
  std::vector<std::string> out;
  std::string error;
  ASSERT_TRUE(ExpandPmMetrics({"gr__cycles_active.avg", "basic", "memory"}, &out, &error));
  ASSERT_EQ(out.size(), 6u);  // basic's and memory's DRAM throughput once
  EXPECT_EQ(out[0], "gr__cycles_active.avg");
  EXPECT_EQ(out[1], "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(out[2], "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(out[5], "lts__t_bytes.sum.per_second");
  EXPECT_FALSE(ExpandPmMetrics({"basic", "dram throughput"}, &out, &error));
  EXPECT_EQ(error,
            "has 'dram throughput', neither a metric name (unit__counter.rollup...) nor a preset "
            "(basic, compute, memory)");
}

}  // namespace
}  // namespace tracer
