#include "libtracer/capture/thread_state.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/core/shared_name_cache.h"
#include "libtracer/core/string_table.h"

namespace tracer {
namespace {

Event PushEvent(uint64_t id) {
  Event e;
  e.type = EventType::kPush;
  e.a = id;
  return e;
}

// Records a push the way the NVTX handler does: append (with room for its
// pop) and put it on the stack.
bool RecordPush(ThreadState& ts, uint16_t domain = 0) {
  uint64_t id = ts.NextInstanceId();
  Event e = PushEvent(id);
  bool ok = ts.AppendPush(&e, 1);
  ts.PushOpen(id, domain, ok ? ThreadState::kRecorded : 0);
  return ok;
}

bool RecordPop(ThreadState& ts, uint16_t domain = 0) {
  ThreadState::OpenRange r;
  if (!ts.PopOpen(domain, &r)) return false;
  if (!(r.flags & ThreadState::kRecorded)) return false;
  Event e;
  e.type = EventType::kPop;
  e.a = r.id;
  return ts.AppendPop(e);
}

TEST(ThreadRingTest, CapacityIsPowerOfTwoOfEvents) {
  EXPECT_EQ(ThreadRing(4096).capacity(), 128u);
  EXPECT_EQ(ThreadRing(5000).capacity(), 128u);
  EXPECT_EQ(ThreadRing(1).capacity(), 16u);
}

TEST(ThreadStateTest, RingFullDropsCountsAndKeepsRoomForEveryPop) {
  ThreadState ts(1, 4096, 0, 0);  // 128 events
  int recorded = 0, attempted = 0;
  // Nest deeper than the ring can hold: each recorded push reserves its pop.
  for (int i = 0; i < 200; ++i) {
    ++attempted;
    if (RecordPush(ts)) ++recorded;
  }
  EXPECT_EQ(recorded, 64);  // 64 pushes + 64 reserved pops = 128 slots
  EXPECT_EQ(ts.counters().ring_full.load(), static_cast<uint64_t>(attempted - recorded));
  // Stack overflow: 200 < kMaxDepth, so nothing counted there.
  EXPECT_EQ(ts.counters().stack_overflow.load(), 0u);
  int pops = 0;
  for (int i = 0; i < 200; ++i) {
    if (RecordPop(ts)) ++pops;
  }
  EXPECT_EQ(pops, recorded);  // every recorded push got its pop, dropped ones none
  std::vector<Event> drained;
  ts.ring().Drain([&](const Event& e) { drained.push_back(e); });
  ASSERT_EQ(drained.size(), 128u);
  // Pops close the pushes in reverse order.
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(drained[i].type, EventType::kPush);
    EXPECT_EQ(drained[127 - i].type, EventType::kPop);
    EXPECT_EQ(drained[127 - i].a, drained[i].a);
  }
  // After the drain there is room again.
  EXPECT_TRUE(RecordPush(ts));
}

TEST(ThreadStateTest, DroppedPushMakesItsPopDroppedToo) {
  ThreadState ts(1, 4096, 0, 0);
  Event filler;
  filler.type = EventType::kMark;
  int marks = 0;
  while (ts.Append(filler)) ++marks;
  EXPECT_EQ(marks, 128);
  EXPECT_FALSE(RecordPush(ts));  // dropped
  std::vector<Event> drained;
  ts.ring().Drain([&](const Event& e) { drained.push_back(e); });
  EXPECT_FALSE(RecordPop(ts));  // its pop is not written although there is room now
  EXPECT_EQ(ts.ring().SizeApprox(), 0u);
  EXPECT_EQ(ts.counters().ring_full.load(), 2u);  // the failed mark and the push
}

// The launch callback's fast path (TryAppendOne) is all or nothing: past
// the ring's fast bound it writes and counts nothing, and the full path
// (Append) records the same events up to the last slot not kept for an open
// range's pop, then counts the drop.
TEST(ThreadStateTest, TryAppendOneLeavesTheRestToTheFullPath) {
  ThreadState ts(1, 4096, 0, 0);  // 128 events
  ASSERT_TRUE(RecordPush(ts));    // one open range: its pop's slot is kept
  uint64_t n = 0;
  auto launch = [&](Event* e) noexcept {
    e->type = EventType::kLaunch;
    e->a = ++n;
  };
  while (ts.TryAppendOne(launch)) {
  }
  const uint64_t fast = n;
  EXPECT_GT(fast, 0u);
  EXPECT_EQ(ts.ring().SizeApprox(), 1 + fast);
  EXPECT_EQ(ts.counters().ring_full.load(), 0u);
  Event e;
  e.type = EventType::kLaunch;
  for (e.a = n + 1; ts.Append(e); e.a = ++n + 1) {
  }
  EXPECT_GT(n, fast);
  EXPECT_EQ(1 + n + 1, 128u);  // the push, every launch, the kept pop
  EXPECT_EQ(ts.counters().ring_full.load(), 1u);
  EXPECT_FALSE(ts.TryAppendOne([](Event*) noexcept { ADD_FAILURE() << "wrote past the bound"; }));
  EXPECT_EQ(ts.counters().ring_full.load(), 1u);
  ASSERT_TRUE(RecordPop(ts));
  std::vector<Event> drained;
  ts.ring().Drain([&](const Event& d) { drained.push_back(d); });
  ASSERT_EQ(drained.size(), 128u);
  EXPECT_EQ(drained.front().type, EventType::kPush);
  EXPECT_EQ(drained.back().type, EventType::kPop);
  for (uint64_t i = 1; i <= n; ++i) {
    EXPECT_EQ(drained[i].type, EventType::kLaunch);
    EXPECT_EQ(drained[i].a, i);
  }
}

TEST(ThreadStateTest, InstanceIdsEncodeThreadAndAreUnique) {
  ThreadState a(1, 4096, 0, 0), b(2, 4096, 0, 0);
  std::set<uint64_t> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.insert(a.NextInstanceId());
    ids.insert(b.NextInstanceId());
  }
  EXPECT_EQ(ids.size(), 2000u);
  EXPECT_EQ(a.NextInstanceId() >> 40, 1u);
  EXPECT_EQ(b.NextInstanceId() >> 40, 2u);
  EXPECT_EQ(a.NextInstanceId() & kRangeIdNotRecorded, 0u);
}

TEST(ThreadStateTest, InnermostRangeSkipsUnrecordedEntries) {
  ThreadState ts(1, 4096, 0, 0);
  EXPECT_EQ(ts.innermost_range_id(), 0u);
  ts.PushOpen(11, 0, ThreadState::kRecorded);
  ts.PushOpen(12, 0, 0);  // outside the capture window, say
  EXPECT_EQ(ts.innermost_range_id(), 11u);
  ts.PushOpen(13, 0, ThreadState::kRecorded);
  EXPECT_EQ(ts.innermost_range_id(), 13u);
}

TEST(ThreadStateTest, DomainPopClosesInnermostOfThatDomain) {
  ThreadState ts(1, 4096, 0, 0);
  ts.PushOpen(1, 0, 0);
  ts.PushOpen(2, 5, 0);
  ts.PushOpen(3, 0, 0);
  ThreadState::OpenRange r;
  ASSERT_TRUE(ts.PopOpen(5, &r));
  EXPECT_EQ(r.id, 2u);
  ASSERT_TRUE(ts.PopOpen(0, &r));
  EXPECT_EQ(r.id, 3u);
  EXPECT_FALSE(ts.PopOpen(5, &r));  // none left in domain 5
  EXPECT_EQ(ts.counters().pop_without_push.load(), 1u);
  ASSERT_TRUE(ts.PopOpen(0, &r));
  EXPECT_EQ(r.id, 1u);
  EXPECT_FALSE(ts.PopOpen(0, &r));
  EXPECT_EQ(ts.counters().pop_without_push.load(), 2u);
}

TEST(ThreadStateTest, StackOverflowIsCountedAndItsPopsIgnored) {
  ThreadState ts(1, 1 << 20, 0, 0);
  for (int i = 0; i < ThreadState::kMaxDepth + 5; ++i) RecordPush(ts);
  EXPECT_EQ(ts.counters().stack_overflow.load(), 5u);
  EXPECT_EQ(ts.depth(), ThreadState::kMaxDepth);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(RecordPop(ts));
  EXPECT_EQ(ts.depth(), ThreadState::kMaxDepth);  // the overflowed pops did not touch the stack
  EXPECT_TRUE(RecordPop(ts));
  EXPECT_EQ(ts.depth(), ThreadState::kMaxDepth - 1);
}

// Threads' states share the process's name table: the names one thread
// looked up are entered once, and another thread's state finds them there
// with the same ids (no second entry).
TEST(ThreadStateTest, ThreadsShareOneNameTable) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "names are cached by address on x86-64 only";
#endif
  static std::deque<std::string> storage;  // never freed: --gtest_repeat
  static int run = 0;
  ++run;
  std::vector<const std::string*> names;
  for (int i = 0; i < 200; ++i) {
    storage.push_back("thread_state_test." + std::to_string(run) + ".names." + std::to_string(i));
    names.push_back(&storage.back());
  }
  SharedNameCache& shared = GlobalSharedNames();
  const size_t before = shared.size();
  std::vector<uint32_t> ids;
  {
    ThreadState a(1, 4096, 0, 0);
    for (const std::string* n : names) ids.push_back(a.NameId(n->c_str()));
  }
  // Each name A looked up is in the process's table now, entered by A: all
  // but texts across a page and any at an address an earlier test of this
  // process entered with another text (heap reuse; those are the thread's
  // own table's).
  size_t found = 0;
  for (const std::string* n : names) found += shared.Find(n->c_str()) != 0;
  const size_t entered = shared.size() - before;
  EXPECT_EQ(entered, found);
  EXPECT_GT(found, names.size() / 2);
  std::thread other([&] {
    ThreadState b(2, 4096, 0, 0);
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(b.NameId(names[i]->c_str()), ids[i]);
        EXPECT_EQ(GlobalStrings().Text(ids[i]), *names[i]);
      }
    }
  });
  other.join();
  EXPECT_EQ(shared.size() - before, entered);
}

}  // namespace
}  // namespace tracer
