// The compact kernel and launch columns (read/op_columns.h) give back every
// record exactly as stored: values past their narrow slots (durations of
// 2^32 ns and more, ends before starts, 64-bit correlation and range ids,
// large cbids) go through the overflow tables, graph ids through the side
// table, also after rows are replaced, kept, sorted or truncated.
#include "libtracer/analysis/read/op_columns.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {
namespace {

bool Same(const KernelRecord& a, const KernelRecord& b) {
  return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.name == b.name &&
         a.stream == b.stream && a.correlation_id == b.correlation_id &&
         a.launch_config == b.launch_config && a.graph_id == b.graph_id &&
         a.graph_node_id == b.graph_node_id;
}

bool Same(const LaunchRecord& a, const LaunchRecord& b) {
  return a.correlation_id == b.correlation_id && a.time_ns == b.time_ns && a.thread == b.thread &&
         a.range_id == b.range_id && a.cbid == b.cbid && a.domain == b.domain;
}

template <typename Column, typename Record>
void ExpectColumn(const Column& c, const std::vector<Record>& want) {
  ASSERT_EQ(c.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(Same(c[i], want[i])) << "row " << i;
  size_t i = 0;
  for (const Record& r : c) EXPECT_TRUE(Same(r, want[i++])) << "iterated row " << i - 1;
  EXPECT_EQ(i, want.size());
}

KernelRecord Kernel(uint64_t start, uint64_t end, uint64_t corr) {
  KernelRecord k;
  k.start_ns = start;
  k.end_ns = end;
  k.correlation_id = corr;
  k.name = 7;
  k.stream = 3;
  k.launch_config = 2;
  return k;
}

TEST(OpColumns, RowsAreSmallerThanTheRecords) {
  EXPECT_LT(KernelColumn::kRowBytes, sizeof(KernelRecord));
  EXPECT_LT(LaunchColumn::kRowBytes, sizeof(LaunchRecord));
  EXPECT_LE(KernelColumn::kRowBytes + LaunchColumn::kRowBytes, 56u);
}

TEST(OpColumns, KernelValuesPastTheNarrowSlotsReadBackExact) {
  std::vector<KernelRecord> want;
  want.push_back(Kernel(1000, 1040, 1));                 // fits
  want.push_back(Kernel(5, 5 + 0xFFFFFFFEull, 2));       // largest narrow duration
  want.push_back(Kernel(5, 5 + 0xFFFFFFFFull, 3));       // first overflowing one
  want.push_back(Kernel(100, 50, 4));                    // end before start
  want.push_back(Kernel(0, UINT64_MAX, 0xFFFFFFFEull));  // whole range; largest narrow id
  want.push_back(Kernel(UINT64_MAX - 1, UINT64_MAX, 0xFFFFFFFFull));  // first overflowing id
  want.push_back(Kernel(7, 9, (uint64_t{1234} << 32) | 5));           // 64-bit id
  want.push_back(Kernel(7, 7, UINT64_MAX));
  KernelColumn c;
  for (const auto& k : want) c.push_back(k);
  ExpectColumn(c, want);
  EXPECT_EQ(c.overflowed(), 6u);  // 3 ends + 3 ids
  EXPECT_EQ(c.graph_refs(), 0u);
}

TEST(OpColumns, GraphIdsLiveInTheSideTable) {
  std::vector<KernelRecord> want(5, Kernel(10, 20, 1));
  want[1].graph_id = 42;
  want[1].graph_node_id = 0xFFFFFFFFFFull;
  want[3].graph_id = UINT64_MAX;  // node 0: a launch-level graph id alone
  want[4].graph_node_id = 9;      // node without graph id: still kept
  KernelColumn c(want);
  ExpectColumn(c, want);
  EXPECT_EQ(c.graph_refs(), 3u);

  // Replacing rows: a graph kernel by a plain one and the reverse.
  want[1] = Kernel(11, 12, 13);
  c.Set(1, want[1]);
  want[2].graph_id = 77;
  want[2].graph_node_id = 78;
  c.Set(2, want[2]);
  want[3].graph_id = 5;
  c.Set(3, want[3]);
  ExpectColumn(c, want);
}

TEST(OpColumns, SetMovesValuesInAndOutOfTheOverflowTables) {
  std::vector<KernelRecord> want = {Kernel(0, 1, 1), Kernel(0, 2, 2), Kernel(0, 3, 3)};
  KernelColumn c(want);
  want[1] = Kernel(0, uint64_t{1} << 40, uint64_t{1} << 40);
  c.Set(1, want[1]);
  want[0] = Kernel(9, 3, UINT64_MAX);
  c.Set(0, want[0]);
  ExpectColumn(c, want);
  EXPECT_EQ(c.overflowed(), 4u);
  want[1] = Kernel(0, 8, 8);
  c.Set(1, want[1]);
  ExpectColumn(c, want);
  EXPECT_EQ(c.overflowed(), 2u);

  // Truncating drops the overflow entries of the rows cut off.
  c.resize(1);
  want.resize(1);
  ExpectColumn(c, want);
  c.resize(3);
  want.resize(3);  // new rows: default records
  ExpectColumn(c, want);
  EXPECT_EQ(c.overflowed(), 2u);
}

TEST(OpColumns, LaunchValuesPastTheNarrowSlotsReadBackExact) {
  std::vector<LaunchRecord> want;
  for (uint64_t big :
       {uint64_t{0}, uint64_t{0xFFFFFFFE}, uint64_t{0xFFFFFFFF}, uint64_t{1} << 40, UINT64_MAX}) {
    LaunchRecord l;
    l.correlation_id = big;
    l.range_id = UINT64_MAX - big;
    l.time_ns = UINT64_MAX - 3;
    l.thread = UINT32_MAX;
    l.cbid = static_cast<uint32_t>(big);
    l.domain = big % 2 == 0 ? ApiDomain::kDriver : ApiDomain::kRuntime;
    want.push_back(l);
  }
  LaunchRecord l;
  l.cbid = 0xFFFFFE;  // largest narrow cbid
  l.domain = ApiDomain::kDriver;
  want.push_back(l);
  l.cbid = 0xFFFFFF;  // first overflowing one
  want.push_back(l);
  LaunchColumn c(want);
  ExpectColumn(c, want);
  EXPECT_GT(c.overflowed(), 0u);
}

TEST(OpColumns, KeepRowsAndSortKeepEveryValue) {
  std::mt19937_64 rng(7);
  std::vector<KernelRecord> all;
  for (int i = 0; i < 500; ++i) {
    KernelRecord k = Kernel(rng() % 1000, 0, rng() % 3 == 0 ? rng() : rng() % 100);
    k.end_ns = rng() % 4 == 0 ? rng() : k.start_ns + rng() % 100;
    if (rng() % 5 == 0) {
      k.graph_id = rng();
      k.graph_node_id = rng();
    }
    all.push_back(k);
  }
  KernelColumn c(all);
  std::vector<bool> keep(all.size());
  std::vector<KernelRecord> kept;
  for (size_t i = 0; i < all.size(); ++i) {
    keep[i] = rng() % 3 != 0;
    if (keep[i]) kept.push_back(all[i]);
  }
  KeepRows(keep, &c);
  ExpectColumn(c, kept);

  std::stable_sort(kept.begin(), kept.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return a.start_ns < b.start_ns;
  });
  StableSortByStart(&c);
  ExpectColumn(c, kept);

  std::vector<bool> wrong_size(3, true);
  KeepRows(wrong_size, &c);  // ignored
  ExpectColumn(c, kept);
}

TEST(OpColumns, MapNamesRewritesNamesOnly) {
  std::vector<KernelRecord> want = {Kernel(1, 2, 3), Kernel(0, UINT64_MAX, UINT64_MAX)};
  want[1].graph_id = 4;
  KernelColumn c(want);
  c.MapNames([](uint32_t n) { return n + 100; });
  for (auto& k : want) k.name += 100;
  ExpectColumn(c, want);
}

}  // namespace
}  // namespace tracer::analysis
