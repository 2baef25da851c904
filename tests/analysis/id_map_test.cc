// IdMap (aggregate/id_map.h): the stream aggregator's range id -> node map.
#include "libtracer/analysis/aggregate/id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace tracer::analysis {
namespace {

// Random inserts, erases and lookups against std::unordered_map, with ids
// drawn from a small range (long probe runs, erases inside them) and from
// the whole 64-bit range (ids differing only in their high half).
TEST(IdMapTest, AgreesWithUnorderedMapUnderRandomInsertsAndErases) {
  for (const uint64_t span : {uint64_t{300}, uint64_t{1} << 40, UINT64_MAX}) {
    std::mt19937_64 rng(42 + span);
    IdMap map;
    std::unordered_map<uint64_t, uint32_t> want;
    for (int step = 0; step < 200000; ++step) {
      uint64_t id = rng() % span + 1;
      if (span == UINT64_MAX) id = (rng() % 64 + 1) << 32 | (rng() % 4);
      const uint32_t* got = map.Find(id);
      auto it = want.find(id);
      ASSERT_EQ(got != nullptr, it != want.end()) << "id " << id << " step " << step;
      if (got != nullptr) ASSERT_EQ(*got, it->second);
      if (it == want.end() && rng() % 3 != 0) {
        const uint32_t value = static_cast<uint32_t>(rng());
        map.Insert(id, value);
        want[id] = value;
      } else if (it != want.end()) {
        map.Erase(id);
        want.erase(it);
      }
      ASSERT_EQ(map.size(), want.size());
    }
    // Every entry is still found after all the shifting, and ForEach sees
    // each once.
    size_t seen = 0;
    map.ForEach([&](uint64_t id, uint32_t value) {
      ++seen;
      auto it = want.find(id);
      ASSERT_NE(it, want.end());
      EXPECT_EQ(it->second, value);
    });
    EXPECT_EQ(seen, want.size());
    for (const auto& [id, value] : want) {
      const uint32_t* got = map.Find(id);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(*got, value);
    }
    map.Clear();
    EXPECT_EQ(map.size(), 0u);
    EXPECT_EQ(map.Find(want.empty() ? 1 : want.begin()->first), nullptr);
  }
}

// A sliding window of ids (the aggregator's pattern: instances open in id
// order and fold soon after) keeps the table at its working size.
TEST(IdMapTest, ASlidingWindowOfIdsEraseAndInsertForever) {
  IdMap map;
  for (uint64_t id = 1; id <= 1000000; ++id) {
    map.Insert(id, static_cast<uint32_t>(id));
    if (id > 100) {
      ASSERT_NE(map.Find(id - 100), nullptr);
      map.Erase(id - 100);
    }
  }
  EXPECT_EQ(map.size(), 100u);
  for (uint64_t id = 1000000 - 99; id <= 1000000; ++id) {
    ASSERT_NE(map.Find(id), nullptr);
    EXPECT_EQ(*map.Find(id), static_cast<uint32_t>(id));
  }
  EXPECT_EQ(map.Find(1000000 - 100), nullptr);
}

}  // namespace
}  // namespace tracer::analysis
