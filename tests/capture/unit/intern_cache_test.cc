#include "libtracer/core/intern_cache.h"

#include <gtest/gtest.h>

#include <string>
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

}  // namespace
}  // namespace tracer
