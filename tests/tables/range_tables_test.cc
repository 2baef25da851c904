// Gaps and top tables on hand-checked traces, and the "parts never exceed
// the whole" properties on random traces.
#include <gtest/gtest.h>

#include <random>

#include "libtracer/analysis/reports/gaps.h"
#include "libtracer/analysis/reports/group_rules.h"
#include "libtracer/analysis/reports/groups.h"
#include "libtracer/analysis/reports/top.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

std::string S(const Cell& c) { return std::get<std::string>(c); }
int64_t I(const Cell& c) { return std::get<int64_t>(c); }
double D(const Cell& c) { return std::get<double>(c); }

TEST(GapsTable, IdleLaunchesAndApiTime) {
  Trace trace;
  testing::TraceFixture f(&trace);
  // "attn": kernels [100, 200) and [300, 450): span 350, busy 250, idle 100.
  // Launch calls [10, 30) and [50, 90): API 20 + 40, gap 50 - 30 = 20.
  const uint64_t attn = f.Range("attn", 0, 100);
  f.Kernel("k1", 100, 200, attn, 10, 20);
  f.Kernel("k2", 300, 450, attn, 50, 40);
  f.Range("cpu_only", 500, 600);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  Table t = GapsTable(model);
  ASSERT_EQ(t.rows.size(), 1u);  // cpu_only has no GPU work
  EXPECT_EQ(S(t.rows[0][0]), "attn");
  EXPECT_EQ(I(t.rows[0][2]), 350);
  EXPECT_EQ(I(t.rows[0][3]), 250);
  EXPECT_EQ(I(t.rows[0][4]), 100);
  EXPECT_NEAR(D(t.rows[0][5]), 100.0 * 100 / 350, 1e-9);
  EXPECT_EQ(I(t.rows[0][6]), 2);
  EXPECT_EQ(I(t.rows[0][7]), 60);
  EXPECT_EQ(I(t.rows[0][8]), 30);
  EXPECT_EQ(I(t.rows[0][9]), 20);
}

TEST(TopKernelsTable, MostExpensiveKernelsPerRange) {
  Trace trace;
  testing::TraceFixture f(&trace);
  const uint64_t a = f.Range("a", 0, 1000);
  f.Kernel("small", 10, 20, a, 1);
  f.Kernel("big", 20, 120, a, 2);
  f.Kernel("mid", 120, 170, a, 3);
  f.Kernel("mid", 170, 220, a, 4);
  const uint64_t b = f.Range("b", 2000, 3000);
  f.Kernel("only", 2000, 2005, b, 2001);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  Table t = TopKernelsTable(model, 2);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(S(t.rows[0][0]), "a");
  EXPECT_EQ(S(t.rows[0][2]), "big");
  EXPECT_EQ(I(t.rows[0][4]), 100);
  EXPECT_EQ(S(t.rows[1][2]), "mid");
  EXPECT_EQ(I(t.rows[1][3]), 2);
  EXPECT_EQ(I(t.rows[1][5]), 50);
  EXPECT_NEAR(D(t.rows[1][6]), 100.0 * 100 / 210, 1e-9);
  EXPECT_EQ(S(t.rows[2][0]), "b");
}

// Random nested traces with worker-thread launches: busy <= span for every
// instance, group kernel time <= all kernel time, and the kernel shares of
// groups over disjoint names add to at most 100 %.
TEST(Properties, PartsNeverExceedTheWhole) {
  std::mt19937_64 rng(11);
  const char* names[] = {"f_w1", "f_w3", "f_lora_a_x", "f_lora_b_x", "f_lora_a_y", "other"};
  for (int iter = 0; iter < 40; ++iter) {
    Trace trace;
    testing::TraceFixture f(&trace);
    uint64_t t = 0;
    uint64_t all_kernels = 0;
    for (int s = 0; s < 4; ++s) {
      const uint64_t step = f.Range("step", t, t + 5000);
      uint64_t c = t;
      std::vector<uint64_t> open = {step};
      for (int k = 0; k < 20; ++k) {
        const std::string name =
            std::string(names[rng() % 6]) + "_" + std::to_string(rng() % 3);  // layer suffix
        const uint64_t r = f.Range(name, c, c + 200, open.back());
        const uint64_t ks = c + rng() % 300, ke = ks + 1 + rng() % 500;
        f.Kernel("kern" + std::to_string(rng() % 4), ks, ke, r, c + 1, 5, (rng() % 3) ? 1 : 2);
        all_kernels += ke - ks;
        c += 220;
      }
      t += 6000;
    }
    AnalyzedTrace analyzed(trace, {});
    ReportModel model(analyzed);
    for (const auto& r : model.ranges()) {
      if (r.has_gpu) {
        ASSERT_LE(r.busy_ns, r.gpu_span_ns());
      }
    }
    Table g =
        GroupsTable(model,
                    ParseGroupRules("mlp = f_w1 + f_w3\nf_lora_{a} = f_lora_a_{a} + f_lora_b_{a}\n"
                                    "all = step\n",
                                    "p.groups")
                        .value(),
                    {{"layer_id"}})
            .value();
    double pct_disjoint = 0;
    for (const auto& row : g.rows) {
      ASSERT_LE(static_cast<uint64_t>(I(row[7])), all_kernels);
      if (S(row[0]) != "all") pct_disjoint += D(row[9]);
      if (S(row[0]) == "all") {
        ASSERT_EQ(static_cast<uint64_t>(I(row[7])), all_kernels);
      }
    }
    ASSERT_LE(pct_disjoint, 100.0 + 1e-9);
  }
}

}  // namespace
}  // namespace tracer::analysis::reports
