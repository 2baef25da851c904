// The reader's StringTable keeps its characters in shared chunks (a
// name-heavy nsys export interns tens of thousands of names): ids, views and
// lookups must behave as with one allocation per string, across chunk
// boundaries, long strings, copies and moves.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {
namespace {

// Distinct names of varied lengths, some longer than a chunk's quarter
// (16 KiB) and one longer than a chunk, as emit_nvtx's sizes lists can be.
std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    std::string s = "aten::op" + std::to_string(i) + ", sizes = [";
    s.append(static_cast<size_t>(i % 97) * 3, '1');
    if (i % 1000 == 7) s.append(20000, 'x');
    if (i == 4321) s.append(70000, 'y');
    names.push_back(s + "]");
  }
  return names;
}

TEST(StringTableTest, IdsAndViewsSurviveChunksCopiesAndMoves) {
  const std::vector<std::string> names = Names(20000);
  StringTable t;
  EXPECT_EQ(t.Get(0), "");
  EXPECT_EQ(t.Intern(""), 0u);
  std::vector<uint32_t> ids;
  for (const std::string& s : names) ids.push_back(t.Intern(s));
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(ids[i], i + 1);  // new strings get the next id
    ASSERT_EQ(t.Intern(names[i]), ids[i]);
    ASSERT_EQ(t.Get(ids[i]), names[i]);
    ASSERT_EQ(t.Find(names[i]), ids[i]);
  }
  EXPECT_EQ(t.size(), names.size() + 1);
  EXPECT_FALSE(t.Find("absent").has_value());
  EXPECT_EQ(t.Get(static_cast<uint32_t>(t.size())), "");  // out of range: ""

  // A copy owns its characters: the original gone, every view still reads.
  auto copy = std::make_unique<StringTable>(t);
  StringTable moved = std::move(t);
  t = StringTable();
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(copy->Get(ids[i]), names[i]);
    ASSERT_EQ(moved.Get(ids[i]), names[i]);
  }
  StringTable assigned;
  assigned = *copy;
  copy.reset();
  for (size_t i = 0; i < names.size(); ++i) ASSERT_EQ(assigned.Get(ids[i]), names[i]);
  // Interning goes on in the copy and the moved-to table alike.
  EXPECT_EQ(assigned.Intern("new"), names.size() + 1);
  EXPECT_EQ(moved.Intern("new"), names.size() + 1);
  EXPECT_EQ(moved.Get(static_cast<uint32_t>(names.size() + 1)), "new");
  // The moved-from table starts again.
  StringTable from;
  from.Intern("a");
  StringTable to = std::move(from);
  EXPECT_EQ(from.Intern(""), 0u);
  EXPECT_EQ(from.Intern("b"), 1u);
  EXPECT_EQ(to.Get(1), "a");
}

// Views are C strings too: the replay of an imported trace hands kernel names
// to CUPTI's C structs through data(), which must stop at the name's end.
TEST(StringTableTest, EveryViewIsNulTerminated) {
  const std::vector<std::string> names = Names(3000);
  StringTable t;
  for (const std::string& s : names) t.Intern(s);
  for (uint32_t id = 0; id < t.size(); ++id) {
    const std::string_view v = t.Get(id);
    ASSERT_NE(v.data(), nullptr) << id;
    ASSERT_EQ(v.data()[v.size()], '\0') << id;
    ASSERT_EQ(std::string(v.data()), std::string(v)) << id;
  }
}

TEST(StringTableTest, StringsDifferingInOneByteAtAnyPositionAreDistinct) {
  // The hash reads words, the last one overlapping, and short strings in
  // pieces: a byte in any place of any length must tell strings apart.
  StringTable t;
  std::vector<std::string> all;
  for (size_t len = 1; len <= 40; ++len) {
    for (size_t at = 0; at < len; ++at) {
      for (char c : {'a', 'b', '\0'}) {
        std::string s(len, 'x');
        s[at] = c;
        all.push_back(s);
      }
    }
  }
  std::vector<uint32_t> ids;
  for (const std::string& s : all) ids.push_back(t.Intern(s));
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(t.Get(ids[i]), all[i]) << i;
    ASSERT_EQ(t.Intern(all[i]), ids[i]) << i;
    ASSERT_EQ(t.Find(all[i]), ids[i]) << i;
  }
}

TEST(StringTableTest, ReserveKeepsIdsAndLookupsAsWithout) {
  const std::vector<std::string> names = Names(5000);
  StringTable plain, reserved, short_hint;
  reserved.Reserve(names.size() + 1);
  short_hint.Reserve(100);  // a hint below the count: it still grows
  for (const std::string& s : names) {
    const uint32_t id = plain.Intern(s);
    ASSERT_EQ(reserved.Intern(s), id);
    ASSERT_EQ(short_hint.Intern(s), id);
  }
  reserved.Reserve(10);  // never shrinks what it holds
  for (uint32_t id = 0; id < plain.size(); ++id) {
    ASSERT_EQ(reserved.Get(id), plain.Get(id));
    ASSERT_EQ(reserved.Find(plain.Get(id)), id);
    ASSERT_EQ(short_hint.Find(plain.Get(id)), id);
  }
  EXPECT_FALSE(reserved.Find("not interned").has_value());
}

// Append stores a text under a new id without indexing it: Find does not see
// it and the same text appended twice has two ids, until IndexAppended gives
// each the id Intern answers (the first indexed one). A copy keeps every id.
TEST(StringTableTest, AppendedIdsAreIndexedOnlyWhenAsked) {
  StringTable t;
  const uint32_t kept = t.Intern("forward");
  const uint32_t a = t.Append("aten::mm, op_id = 1");
  const uint32_t b = t.Append("aten::mm, op_id = 1");
  const uint32_t again = t.Append("forward");
  const uint32_t empty = t.Append("");
  EXPECT_NE(a, b);
  EXPECT_EQ(t.Get(a), "aten::mm, op_id = 1");
  EXPECT_EQ(t.Get(b), t.Get(a));
  EXPECT_EQ(t.Get(again), "forward");
  EXPECT_FALSE(t.Find("aten::mm, op_id = 1").has_value());
  EXPECT_EQ(t.IndexAppended(again), kept);  // the indexed text's id
  EXPECT_EQ(t.IndexAppended(empty), 0u);
  EXPECT_EQ(t.IndexAppended(a), a);  // the first of its text: indexed now
  EXPECT_EQ(t.IndexAppended(b), a);
  EXPECT_EQ(t.IndexAppended(a), a);  // again: no change
  EXPECT_EQ(t.Find("aten::mm, op_id = 1"), a);
  EXPECT_EQ(t.Intern("aten::mm, op_id = 1"), a);
  const size_t size = t.size();
  const StringTable copy(t);
  ASSERT_EQ(copy.size(), size);
  for (uint32_t id = 0; id < size; ++id) EXPECT_EQ(copy.Get(id), t.Get(id)) << id;
  EXPECT_EQ(copy.Find("aten::mm, op_id = 1"), a);
  EXPECT_EQ(copy.Find("forward"), kept);
}

}  // namespace
}  // namespace tracer::analysis
