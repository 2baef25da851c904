// The thread registry under churn: states of exited, drained threads are
// reused (memory follows live threads), a reused state starts empty under a
// new thread id while its range ids stay unique, the writer's snapshot never
// waits on registration's lock, and the writer retires exited threads with
// their definitions settled.
#include "libtracer/capture/thread_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/capture/writer.h"
#include "libtracer/core/string_table.h"
#include "tests/capture/trace_file_reader.h"
#include "tests/capture/unit/make_event.h"

namespace tracer {
namespace {

using testing::MakeEvent;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/tracer_registry_test_" + std::to_string(getpid()) +
         "_" + name;
}

uint32_t Id(const char* s) { return GlobalStrings().Intern(s).id; }

TEST(ThreadRegistryTest, ADrainedExitedThreadsStateIsReusedEmptyUnderANewId) {
  ThreadRegistry registry(4096);
  ThreadState* a = registry.Register(100, 0xa);
  ASSERT_NE(a, nullptr);
  const uint32_t a_id = a->id();
  std::set<uint64_t> instance_ids;
  for (int i = 0; i < 10; ++i) instance_ids.insert(a->NextInstanceId());
  a->PushOpen(a->NextInstanceId(), 0, ThreadState::kRecorded);  // left open at exit
  ASSERT_TRUE(a->Append(MakeEvent(EventType::kMark, 1, 0, Id("m"))));
  ThreadCounters::Bump(a->counters().ring_full, 3);
  a->exited.store(true);
  a->ring().Drain([](const Event&) {});
  registry.Recycle({a});

  std::vector<ThreadState*> live;
  registry.Snapshot(&live);
  EXPECT_TRUE(live.empty());  // the writer no longer looks at it
  EXPECT_EQ(registry.free_count(), 1u);

  ThreadState* b = registry.Register(200, 0xb);
  ASSERT_EQ(b, a);  // the same memory, ring included
  EXPECT_EQ(registry.allocated(), 1u);
  EXPECT_EQ(registry.free_count(), 0u);
  EXPECT_NE(b->id(), a_id);
  EXPECT_EQ(b->os_tid(), 200u);
  EXPECT_EQ(b->pthread_id(), 0xbu);
  EXPECT_FALSE(b->exited.load());
  EXPECT_EQ(b->depth(), 0);
  EXPECT_EQ(b->ring().SizeApprox(), 0u);
  EXPECT_EQ(b->counters().ring_full.load(), 0u);
  EXPECT_EQ(b->innermost_range_id(), 0u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(instance_ids.insert(b->NextInstanceId()).second);
  registry.Snapshot(&live);
  EXPECT_EQ(live, std::vector<ThreadState*>{b});
  // A recycled ring still holds exactly its capacity.
  for (size_t i = 0; i < b->ring().capacity(); ++i) {
    ASSERT_TRUE(b->Append(MakeEvent(EventType::kMark, 2, 0, Id("m")))) << i;
  }
  EXPECT_FALSE(b->Append(MakeEvent(EventType::kMark, 3, 0, Id("m"))));
}

// An exiting thread hands its intern cache back before the writer drained
// it; the next registration, of a reused or a new state, takes it.
TEST(ThreadRegistryTest, ExitingThreadsInternCacheServesTheNextThread) {
  ThreadRegistry registry(4096);
  ThreadState* a = registry.Register(1, 1);
  InternCache* cache = &a->intern_cache();
  const uint32_t name = a->intern_cache().Lookup("cached_name");
  registry.ReturnCache(a);
  a->exited.store(true);
  ThreadState* b = registry.Register(2, 2);  // a is not recycled yet: a new state
  ASSERT_NE(b, a);
  EXPECT_EQ(&b->intern_cache(), cache);
  EXPECT_EQ(b->intern_cache().Lookup("cached_name"), name);
  registry.Recycle({a});
  ThreadState* c = registry.Register(3, 3);  // a's state, which has no cache now
  ASSERT_EQ(c, a);
  EXPECT_NE(&c->intern_cache(), cache);
  EXPECT_EQ(c->intern_cache().Lookup("cached_name"), name);
}

// A ring a thread filled gives its pages back while its state waits for
// reuse; the first 64 KiB stay (a short-lived thread's next owner uses them).
TEST(ThreadRingTest, ReleasePagesBeyondDropsOnlyTheTail) {
  ThreadRing ring(1 << 20);
  const size_t n = ring.capacity();
  ASSERT_EQ(n * sizeof(Event), size_t{1} << 20);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(ring.HasRoom(1, 0));
    Event e = MakeEvent(EventType::kMark, i + 1);
    ring.PushUnchecked(&e, 1);
  }
  EXPECT_EQ(ring.Drain([](const Event&) {}), n);
  ring.ReleasePagesBeyond(ThreadRegistry::kKeptRingBytes);
  // head == capacity: SlotAfterHead(i) is slot i.
  const size_t kept = ThreadRegistry::kKeptRingBytes / sizeof(Event);
  EXPECT_EQ(ring.SlotAfterHead(0)->time, 1u);
  EXPECT_EQ(ring.SlotAfterHead(kept - 1)->time, kept);
  EXPECT_EQ(ring.SlotAfterHead(kept + 256)->time, 0u);  // a page well past the kept part
  // The allocation need not start on a page: its last partial page stays.
  EXPECT_EQ(ring.SlotAfterHead(n - 1 - 4096 / sizeof(Event))->time, 0u);
  // Still a working ring after Reset.
  ring.Reset();
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(ring.HasRoom(1, 0) && (ring.Publish(1), true));
  EXPECT_FALSE(ring.HasRoom(1, 0));
}

TEST(ThreadRegistryTest, SnapshotNeverWaitsForTheRegistrationLock) {
  ThreadRegistry registry(4096);
  ThreadState* a = registry.Register(1, 1);
  registry.LockForFork();  // as a registering thread holding the free list
  auto snap = std::async(std::launch::async, [&] {
    std::vector<ThreadState*> v;
    registry.Snapshot(&v);
    return v.size();
  });
  const bool done = snap.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  registry.UnlockAfterFork();
  ASSERT_TRUE(done);
  EXPECT_EQ(snap.get(), 1u);
  EXPECT_NE(a, nullptr);
}

// Real threads come and go while a stand-in writer drains and recycles:
// states stay near the number of live threads, ids stay unique.
TEST(ThreadRegistryTest, ChurnKeepsStatesNearTheLiveThreads) {
  ThreadRegistry registry(1 << 20);
  constexpr int kSpawners = 4, kPerSpawner = 1000;
  std::atomic<bool> stop{false};
  std::mutex seen_mu;
  std::set<uint32_t> thread_ids;
  std::set<uint64_t> instance_ids;
  std::thread writer([&] {
    std::vector<ThreadState*> snap, exited;
    while (true) {
      const bool last = stop.load();
      registry.Snapshot(&snap);
      exited.clear();
      for (ThreadState* t : snap) {
        const bool gone = t->exited.load(std::memory_order_acquire);
        t->ring().Drain([](const Event&) {});
        if (gone) exited.push_back(t);
      }
      registry.Recycle(exited);
      if (last) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> spawners;
  for (int s = 0; s < kSpawners; ++s) {
    spawners.emplace_back([&, s] {
      for (int i = 0; i < kPerSpawner; ++i) {
        std::thread([&, s, i] {
          ThreadState* t = registry.Register(static_cast<uint64_t>(s * kPerSpawner + i + 1), 7);
          ASSERT_NE(t, nullptr);
          uint64_t ids[3] = {t->NextInstanceId(), t->NextInstanceId(), t->NextInstanceId()};
          t->Append(MakeEvent(EventType::kMark, 1, 0, 1));
          {
            std::lock_guard<std::mutex> lock(seen_mu);
            EXPECT_TRUE(thread_ids.insert(t->id()).second);
            for (uint64_t id : ids) EXPECT_TRUE(instance_ids.insert(id).second);
          }
          t->exited.store(true, std::memory_order_release);
        }).join();
      }
    });
  }
  for (auto& t : spawners) t.join();
  stop.store(true);
  writer.join();
  EXPECT_EQ(thread_ids.size(), static_cast<size_t>(kSpawners * kPerSpawner));
  // 4 live at once; exited ones wait for the next writer pass (200 us
  // apart, more on a busy machine). 4,000 without reuse.
  EXPECT_LE(registry.allocated(), 1000u);
  EXPECT_EQ(registry.free_count(), registry.allocated());
}

// The writer retires an exited thread and the registry hands its state to
// the next thread: both keep their own ThreadDef, and a start/end range the
// first thread began is still attributed to it when another thread ends it
// after the first one was retired.
TEST(ThreadRegistryTest, WriterRetiresExitedThreadsAndTheirStatesServeTheNext) {
  const std::string path = TempPath("retire.trace");
  ThreadRegistry registry(1 << 16);
  ThreadState* ender = registry.Register(300, 0x300);
  ThreadState* first = registry.Register(100, 0x100);
  const uint32_t first_id = first->id();
  const uint64_t a = first->NextInstanceId();
  ASSERT_TRUE(first->Append(MakeEvent(EventType::kPush, 10, a, Id("a"))));
  ASSERT_TRUE(first->Append(MakeEvent(EventType::kPop, 20, a)));
  const uint64_t cross = first->NextInstanceId();
  ASSERT_TRUE(first->Append(MakeEvent(EventType::kStart, 30, cross, Id("cross"))));
  first->exited.store(true);

  Writer writer(&registry, 1000);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, {}, &error)) << error;
  writer.DrainOnce(false);  // drains and retires `first`

  ThreadState* second = registry.Register(200, 0x200);
  ASSERT_EQ(second, first);
  const uint32_t second_id = second->id();
  EXPECT_NE(second_id, first_id);
  const uint64_t b = second->NextInstanceId();
  ASSERT_TRUE(second->Append(MakeEvent(EventType::kPush, 40, b, Id("b"))));
  ASSERT_TRUE(second->Append(MakeEvent(EventType::kPop, 50, b)));
  ASSERT_TRUE(ender->Append(MakeEvent(EventType::kEnd, 60, cross)));
  writer.DrainOnce(true);

  testing::ParsedTrace p = testing::ReadTraceFile(path);
  EXPECT_TRUE(p.problems.empty()) << p.problems.front();
  std::map<std::string, const proto::Range*> by_name;
  std::set<uint64_t> range_ids;
  for (const auto& r : p.ranges) {
    by_name[p.Name(r.name())] = &r;
    EXPECT_TRUE(range_ids.insert(r.id()).second);
  }
  ASSERT_EQ(p.ranges.size(), 3u);
  ASSERT_TRUE(by_name.count("a") && by_name.count("b") && by_name.count("cross"));
  EXPECT_EQ(by_name["a"]->thread(), first_id);
  EXPECT_EQ(by_name["b"]->thread(), second_id);
  EXPECT_EQ(by_name["cross"]->thread(), first_id);
  EXPECT_EQ(by_name["cross"]->end_thread(), ender->id());
  ASSERT_TRUE(p.threads.count(first_id) && p.threads.count(second_id));
  EXPECT_EQ(p.threads.at(first_id).os_tid(), 100u);
  EXPECT_EQ(p.threads.at(second_id).os_tid(), 200u);
  EXPECT_EQ(p.threads.at(second_id).pthread_id(), 0x200u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tracer
