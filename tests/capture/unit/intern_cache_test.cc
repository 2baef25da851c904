#include "libtracer/core/intern_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tracer {
namespace {

TEST(InternCacheTest, KeyedByContentNotPointer) {
  StringTable table;
  InternCache cache(&table);
  char buf[32] = "layer_1";
  uint32_t a = cache.Lookup(buf);
  std::string copy = "layer_1";
  EXPECT_EQ(cache.Lookup(copy.c_str()), a);  // same text, other pointer
  buf[6] = '2';                              // same pointer, other text
  uint32_t b = cache.Lookup(buf);
  EXPECT_NE(a, b);
  EXPECT_EQ(table.Text(a), "layer_1");
  EXPECT_EQ(table.Text(b), "layer_2");
}

TEST(InternCacheTest, HitsDoNotReachTheTable) {
  StringTable table;
  InternCache cache(&table);
  cache.Lookup("forward");
  uint64_t misses = cache.misses();
  for (int i = 0; i < 100; ++i) cache.Lookup("forward");
  EXPECT_EQ(cache.misses(), misses);
}

TEST(InternCacheTest, EvictionKeepsIdsStable) {
  StringTable table;
  InternCache a(&table), b(&table);
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("name_" + std::to_string(i));
  std::vector<uint32_t> ids;
  for (const auto& n : names) ids.push_back(a.Lookup(n));
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(b.Lookup(names[i]), ids[i]);  // another thread's cache agrees
    EXPECT_EQ(a.Lookup(names[i]), ids[i]);  // after evictions too
    EXPECT_EQ(table.Text(ids[i]), names[i]);
  }
  EXPECT_EQ(table.size(), names.size() + 1);  // + the empty string, id 0
  EXPECT_EQ(a.Lookup(""), 0u);
}

// Names that share one set of the cache.
std::vector<std::string> CollidingNames(size_t k) {
  std::vector<std::string> names = {"f_block_0"};
  const size_t set = InternCache::SetOf(names[0]);
  for (int i = 1; names.size() < k; ++i) {
    std::string n = "f_block_" + std::to_string(i);
    if (InternCache::SetOf(n) == set) names.push_back(n);
  }
  return names;
}

// Two names sharing a set both stay cached (two ways).
TEST(InternCacheTest, TwoCollidingNamesBothStayCached) {
  StringTable table;
  InternCache cache(&table);
  const auto names = CollidingNames(2);
  const uint32_t a = cache.Lookup(names[0]), b = cache.Lookup(names[1]);
  const uint64_t misses = cache.misses();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(cache.Lookup(names[0]), a);
    ASSERT_EQ(cache.Lookup(names[1]), b);
  }
  EXPECT_EQ(cache.misses(), misses);
  EXPECT_EQ(table.locked_interns(), 2u);
}

// More names than ways in one set evict each other on every lookup; each
// miss is served by the table's lock-free index, not its lock.
TEST(InternCacheTest, CollidingNamesTakeTheLockOnlyOnce) {
  StringTable table;
  InternCache cache(&table);
  const auto names = CollidingNames(3);
  std::vector<uint32_t> ids;
  for (const auto& n : names) ids.push_back(cache.Lookup(n));
  const uint64_t locked = table.locked_interns();
  EXPECT_EQ(locked, 3u);
  for (int i = 0; i < 1000; ++i) {
    for (size_t k = 0; k < names.size(); ++k) ASSERT_EQ(cache.Lookup(names[k]), ids[k]);
  }
  EXPECT_GE(cache.misses(), 3000u);  // they do evict each other
  EXPECT_EQ(table.locked_interns(), locked);
}

// Thousands of names cycling (a large model's per-module ranges): after the
// first pass, no lookup takes the lock, and the index grew past its initial
// size without losing a name.
TEST(InternCacheTest, ThousandsOfNamesCyclingTakeTheLockOnlyOncePerName) {
  StringTable table;
  InternCache cache(&table);
  std::vector<std::string> names;
  for (int i = 0; i < 20000; ++i) names.push_back("f_model.layers." + std::to_string(i) + ".mlp");
  std::vector<uint32_t> ids;
  for (const auto& n : names) ids.push_back(cache.Lookup(n));
  EXPECT_EQ(table.locked_interns(), names.size());
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(cache.Lookup(names[i]), ids[i]);
  }
  EXPECT_EQ(table.locked_interns(), names.size());
  for (size_t i = 0; i < names.size(); i += 997) EXPECT_EQ(table.Text(ids[i]), names[i]);
}

// A thread cycling through 5,000 names (more than the initial 1,024 slots)
// grows its cache, bounded by kMaxSlots, until most lookups hit: the misses
// of a later pass are a fraction of the first pass's, ids never change, and
// a thread with few names stays at the initial size.
TEST(InternCacheTest, CyclingManyNamesGrowsTheCacheBoundedly) {
  StringTable table;
  InternCache cache(&table), small(&table);
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) {
    names.push_back((i % 2 ? "b_model.layers." : "f_model.layers.") + std::to_string(i / 24) +
                    ".self_attn.q_proj." + std::to_string(i % 24));
  }
  std::vector<uint32_t> ids;
  for (const auto& n : names) ids.push_back(cache.Lookup(n));
  for (int pass = 0; pass < 20; ++pass) {
    for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(cache.Lookup(names[i]), ids[i]);
  }
  EXPECT_GT(cache.slots(), InternCache::kSlots);
  EXPECT_LE(cache.slots(), InternCache::kMaxSlots);
  const uint64_t before = cache.misses();
  for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(cache.Lookup(names[i]), ids[i]);
  const uint64_t pass_misses = cache.misses() - before;
  EXPECT_LT(pass_misses, names.size() / 4) << "misses in one pass of " << names.size();
  for (int pass = 0; pass < 100; ++pass) {
    for (int i = 0; i < 10; ++i) small.Lookup(names[i]);
  }
  EXPECT_EQ(small.slots(), InternCache::kSlots);
}

// Texts that differ only past 32 bytes (hashed, not keyed by their words)
// and texts with embedded NULs stay distinct.
TEST(InternCacheTest, LongAndBinaryTextsStayDistinct) {
  StringTable table;
  InternCache cache(&table);
  const std::string prefix(40, 'x');
  const uint32_t a = cache.Lookup(prefix + "_a"), b = cache.Lookup(prefix + "_b");
  EXPECT_NE(a, b);
  const uint32_t c = cache.Lookup(std::string_view("a\0b", 3)), d = cache.Lookup("a");
  EXPECT_NE(c, d);
  EXPECT_EQ(table.Text(a), prefix + "_a");
  EXPECT_EQ(table.Text(c), std::string_view("a\0b", 3));
  EXPECT_EQ(table.Intern(prefix + "_b").id, b);
}

// Threads interning the same names in different orders while the index grows
// (lock-free readers racing the writer that publishes a bigger index) agree
// on every id, and each name is stored once.
TEST(InternCacheTest, ConcurrentThreadsAgreeOnIdsWhileTheIndexGrows) {
  StringTable table;
  constexpr int kThreads = 8;
  constexpr int kNames = 6000;
  std::vector<std::string> names;
  for (int i = 0; i < kNames; ++i) names.push_back("b_model.layers." + std::to_string(i));
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kNames));
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      InternCache cache(&table);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int pass = 0; pass < 2; ++pass) {
        for (int k = 0; k < kNames; ++k) {
          const int i = (k * 7919 + t * 1013) % kNames;  // a different order per thread
          ids[t][i] = cache.Lookup(names[i]);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[0]) << "thread " << t;
  EXPECT_EQ(table.size(), static_cast<size_t>(kNames) + 1);
  for (int i = 0; i < kNames; i += 101) EXPECT_EQ(table.Text(ids[0][i]), names[i]);
}

}  // namespace
}  // namespace tracer
