// ThreadRing across many laps: every event comes out once and in order, the
// page-granular tail costs at most one page of room, and a ring that holds
// little keeps little resident however large it is.
#include "libtracer/capture/thread_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace tracer {
namespace {

constexpr uint64_t kEventsPerPage = 4096 / sizeof(Event);

// Pushes `n` events numbered from *next (time = number); false when full.
bool PushNumbered(ThreadRing& ring, uint64_t n, uint64_t* next) {
  for (uint64_t i = 0; i < n; ++i) {
    if (!ring.HasRoom(1, 0)) return false;
    Event e;
    e.type = EventType::kMark;
    e.time = ++*next;
    ring.PushUnchecked(&e, 1);
  }
  return true;
}

// PushNumbered one event at a time with the writer making progress before
// each (as a draining writer does): the yields then do not depend on how
// long each took (seconds in all on a loaded machine).
bool PushWhileTheWriterMoves(ThreadRing& ring, uint64_t n, uint64_t* next) {
  for (uint64_t i = 0; i < n; ++i) {
    g_ring_writer_progress.fetch_add(1, std::memory_order_relaxed);
    if (!PushNumbered(ring, 1, next)) return false;
  }
  return true;
}

// Drains, checking the numbers continue from *expected.
void DrainChecking(ThreadRing& ring, uint64_t* expected) {
  ring.Drain([&](const Event& e) { ASSERT_EQ(e.time, ++*expected); });
  ring.PrefaultAhead();
}

TEST(ThreadRingLapsTest, EveryEventOnceInOrderOverManyLapsOfMixedBatches) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  ThreadRing ring(1 << 20);  // 32 k events
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  // Batches below and above the fill mark (half), not page multiples.
  const uint64_t batches[] = {1, 127, 129, 5000, cap / 2 + 77, 3, cap - 2 * kEventsPerPage, 999};
  for (int lap = 0; lap < 40; ++lap) {
    for (uint64_t b : batches) {
      ASSERT_TRUE(PushNumbered(ring, b, &next)) << "lap " << lap << " batch " << b;
      DrainChecking(ring, &expected);
    }
  }
  EXPECT_EQ(expected, next);
  EXPECT_GT(next, 10 * cap);
}

// The tail goes back to the producer a page at a time: after a drain the
// room is the capacity less the part of the head's page already read.
TEST(ThreadRingLapsTest, RoomAfterADrainLacksAtMostThePartialPage) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  ThreadRing ring(1 << 20);
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  ASSERT_TRUE(PushNumbered(ring, 1000, &next));
  DrainChecking(ring, &expected);
  const uint64_t lost = 1000 % kEventsPerPage;
  EXPECT_TRUE(ring.HasRoom(cap - lost, 0));
  EXPECT_FALSE(ring.HasRoom(cap - lost + 1, 0));
  // Small rings (under 16 pages) hand back every slot.
  ThreadRing small(4096);
  ASSERT_TRUE(PushNumbered(small, 100, &next));
  small.Drain([](const Event&) {});
  EXPECT_TRUE(small.HasRoom(small.capacity(), 0));
}

// A 32 MiB ring (the default) through 4 laps in batches of 4 k events: what
// it keeps resident follows what it holds (a batch, plus the writer's
// prefault window of 8 batches), not its capacity. Before pages were handed
// back, every page stayed resident after the first lap: 32 MiB.
TEST(ThreadRingLapsTest, ResidentMemoryFollowsWhatTheRingHoldsNotItsCapacity) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  ThreadRing ring(32 << 20);
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  while (next < 4 * cap) {
    ASSERT_TRUE(PushNumbered(ring, 4096, &next));
    DrainChecking(ring, &expected);
  }
  const uint64_t resident = ring.ResidentBytes();
  EXPECT_GT(resident, 0u);
  EXPECT_LE(resident, uint64_t{2} << 20) << resident;  // 4096 x 32 B x (1 + 8) = 1.1 MiB
  // A full ring keeps its pages: it is in use.
  ThreadRing full(4 << 20);
  ASSERT_TRUE(PushNumbered(full, full.capacity(), &next));
  full.Drain([](const Event&) {});
  EXPECT_EQ(full.ResidentBytes(), uint64_t{4} << 20);
}

// With no writer running ahead of it (more producers than cores), a
// producer faults its first lap in itself, 64 KiB at a time (one
// MADV_POPULATE_WRITE instead of a page fault every 128 events): resident
// memory is what it wrote plus at most that batch, never the ring's size.
TEST(ThreadRingLapsTest, ProducerFaultsItsFirstLapInInBoundedBatches) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  constexpr uint64_t kBatch = 64 << 10, kPage = 4096;
  {
    void* probe = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(probe, MAP_FAILED);
    const bool populate = madvise(probe, kPage, MADV_POPULATE_WRITE) == 0;
    munmap(probe, kPage);
    if (!populate) GTEST_SKIP() << "no MADV_POPULATE_WRITE (kernel before 5.14)";
  }
  ThreadRing ring(32 << 20);
  EXPECT_EQ(ring.ResidentBytes(), 0u);
  uint64_t next = 0, expected = 0;
  ASSERT_TRUE(PushNumbered(ring, 1, &next));
  EXPECT_EQ(ring.ResidentBytes(), kPage + kBatch);
  for (uint64_t target : {1000u, 5000u, 33333u, 100000u, 400000u}) {
    ASSERT_TRUE(PushNumbered(ring, target - next, &next));
    const uint64_t written = (next * sizeof(Event) + kPage - 1) / kPage * kPage;
    const uint64_t resident = ring.ResidentBytes();
    EXPECT_GE(resident, written) << target;
    EXPECT_LE(resident, written + kBatch) << target;
  }
  DrainChecking(ring, &expected);
  EXPECT_EQ(expected, next);
}

bool KernelPopulates() {
  constexpr size_t kPage = 4096;
  void* probe = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return false;
  const bool populate = RingPopulateBySystem(probe, kPage) == 0;
  munmap(probe, kPage);
  return populate;
}

// Whether every page of the ring's slots [from, from + n) is resident.
bool SlotsResident(ThreadRing& ring, uint64_t from, uint64_t n) {
  constexpr uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<uintptr_t>(ring.SlotAt(from)) / kPage * kPage;
  const auto end = reinterpret_cast<uintptr_t>(ring.SlotAt(from) + n);
  std::vector<unsigned char> pages((end - begin + kPage - 1) / kPage);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, pages.data()) != 0) return false;
  for (unsigned char p : pages) {
    if (!(p & 1)) return false;
  }
  return true;
}

long ThreadMinorFaults() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

// The writer's PrefaultAhead faults a fresh ring's pages in ahead of its
// producer: a producer thread pushes 32 KiB batches through a 32 MiB ring,
// and after each the writer (this thread) drains and populates ahead.
// mincore shows a window of at least 64 KiB past the head resident after
// each pass, and the producer takes no page fault after its first batch
// (minor faults of its thread, which count the pages it faults in itself
// by MADV_POPULATE_WRITE too). With PrefaultAhead doing nothing, the
// producer faults in every page itself: 8 a batch, 1,016 in all.
TEST(ThreadRingPopulateTest, WriterFaultsPagesInAheadOfTheProducer) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (kernel before 5.14)";
  ThreadRing ring(32 << 20);
  constexpr uint64_t kBatch = 1024, kBatches = 128, kWindow = (64 << 10) / sizeof(Event);
  std::atomic<uint64_t> batches_pushed{0}, batches_drained{0};
  long producer_faults = -1;
  uint64_t next = 0, expected = 0;
  std::thread producer([&] {
    long faults_after_first = 0;
    for (uint64_t b = 0; b < kBatches; ++b) {
      while (batches_drained.load(std::memory_order_acquire) < b) std::this_thread::yield();
      if (b == 1) faults_after_first = ThreadMinorFaults();
      if (!PushNumbered(ring, kBatch, &next)) return;
      batches_pushed.store(b + 1, std::memory_order_release);
    }
    producer_faults = ThreadMinorFaults() - faults_after_first;
  });
  uint64_t first_gap = kBatches;  // the first pass that left pages ahead not resident
  for (uint64_t b = 0; b < kBatches; ++b) {
    while (batches_pushed.load(std::memory_order_acquire) <= b) std::this_thread::yield();
    DrainChecking(ring, &expected);
    if (first_gap == kBatches && !SlotsResident(ring, (b + 1) * kBatch, kWindow)) first_gap = b;
    batches_drained.store(b + 1, std::memory_order_release);
  }
  producer.join();
  EXPECT_EQ(first_gap, kBatches) << "after batch " << first_gap;
  EXPECT_EQ(expected, kBatch * kBatches);
  EXPECT_GE(producer_faults, 0);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  // (A sanitizer's shadow memory faults in as the producer writes.)
  EXPECT_LE(producer_faults, 2);  // a stack page or two, not the ring's
#endif
  EXPECT_GT(ring.populated_bytes(), 0u);
}

// A ring whose thread exited hands back, past the part kept for its next
// owner, what was faulted in ahead of the head too, not only what was
// written: a recycled state pins no window of its last owner.
TEST(ThreadRingPopulateTest, ReleasingAnExitedRingDropsWhatWasPopulatedAhead) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  if (!KernelPopulates()) GTEST_SKIP() << "no MADV_POPULATE_WRITE (kernel before 5.14)";
  ThreadRing ring(32 << 20);
  uint64_t next = 0, expected = 0;
  ASSERT_TRUE(PushNumbered(ring, 20000, &next));  // 625 KiB
  DrainChecking(ring, &expected);                 // and populates 1.25 MiB ahead
  ASSERT_TRUE(SlotsResident(ring, next, 2 * 20000));
  constexpr uint64_t kKeep = 64 << 10;
  ring.ReleasePagesBeyond(kKeep);
  EXPECT_LE(ring.ResidentBytes(), kKeep);
}

// Replaces the ring's populate call for a test's lifetime.
class FakePopulate {
 public:
  explicit FakePopulate(int (*fake)(void*, size_t) noexcept) { g_ring_populate = fake; }
  ~FakePopulate() { g_ring_populate = &RingPopulateBySystem; }
  FakePopulate(const FakePopulate&) = delete;
  FakePopulate& operator=(const FakePopulate&) = delete;
};

std::atomic<int> g_refused_populates{0};
int RefusePopulate(void*, size_t) noexcept {
  g_refused_populates.fetch_add(1);
  errno = EINVAL;  // as a kernel before 5.14 answers MADV_POPULATE_WRITE
  return -1;
}

// A kernel without MADV_POPULATE_WRITE: the producer and the writer each
// try once, then neither asks again; pages fault in as written, every event
// comes back in order over several laps, and a drained ring keeps its pages
// (handing them back would move their faults onto the producer each lap).
TEST(ThreadRingPopulateTest, KernelWithoutPopulateFallsBackToFaults) {
  FakePopulate fake(&RefusePopulate);
  g_refused_populates = 0;
  ThreadRing ring(1 << 20);  // 32 k events
  EXPECT_TRUE(ring.populate_supported());
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  while (next < 4 * cap) {
    ASSERT_TRUE(PushNumbered(ring, 4096, &next));
    DrainChecking(ring, &expected);
  }
  EXPECT_EQ(expected, next);
  EXPECT_FALSE(ring.populate_supported());
  EXPECT_EQ(ring.populated_bytes(), 0u);
  EXPECT_EQ(g_refused_populates.load(), 2);
  EXPECT_EQ(ring.ResidentBytes(), cap * sizeof(Event));
  // A recycled ring does not try again.
  ring.Reset();
  ASSERT_TRUE(PushNumbered(ring, 4096, &next));
  ring.PrefaultAhead();
  EXPECT_EQ(g_refused_populates.load(), 2);
}

// A busy ring (drains that each read an eighth of it or more: a thread
// pushing flat out) keeps the pages it cycles through, so the writer does
// not fault them in again every lap; once drains read less, a lap hands
// them back and the resident memory follows what the ring holds again.
TEST(ThreadRingLapsTest, BusyRingKeepsItsPagesAndAQuietLapHandsThemBack) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  ThreadRing ring(32 << 20);
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  while (next < cap) {
    ASSERT_TRUE(PushNumbered(ring, cap / 4, &next));
    DrainChecking(ring, &expected);
  }
  const uint64_t populated_first_lap = ring.populated_bytes();
  if (populated_first_lap == 0) GTEST_SKIP() << "no MADV_POPULATE_WRITE (kernel before 5.14)";
  while (next < 4 * cap) {
    ASSERT_TRUE(PushNumbered(ring, cap / 4, &next));
    DrainChecking(ring, &expected);
  }
  // Three more laps faulted nothing in: every page stayed resident (when
  // busy drains handed pages back, each lap faulted the whole ring in
  // again, 32 MiB).
  EXPECT_EQ(ring.populated_bytes(), populated_first_lap);
  EXPECT_GE(ring.ResidentBytes(), (uint64_t{32} << 20) - 4096);
  const uint64_t quiet_until = next + cap + 4096;
  while (next < quiet_until) {
    ASSERT_TRUE(PushNumbered(ring, 4096, &next));
    DrainChecking(ring, &expected);
  }
  EXPECT_LE(ring.ResidentBytes(), uint64_t{2} << 20) << ring.ResidentBytes();
  EXPECT_EQ(expected, next);
}

// A long drain hands room back to the producer as it goes: halfway through
// draining a full ring, the producer already has about half a ring of room
// (before, none until the drain ended, so a drain slowed by a loaded machine
// let a thread pushing flat out fill the ring behind it).
TEST(ThreadRingLapsTest, LongDrainGivesRoomBackAsItGoes) {
  ThreadRing ring(4 << 20);
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0, seen = 0;
  ASSERT_TRUE(PushNumbered(ring, cap, &next));
  ASSERT_FALSE(ring.HasRoom(1, 0));
  bool room_midway = false;
  ring.Drain([&](const Event& e) {
    ASSERT_EQ(e.time, ++expected);
    if (++seen == cap / 2) room_midway = ring.HasRoom(cap / 2 - 8192, 0);
  });
  EXPECT_TRUE(room_midway);
  EXPECT_EQ(expected, next);
  EXPECT_TRUE(ring.HasRoom(cap - kEventsPerPage, 0));
}

// Past three quarters full the producer yields once per event while the
// writer drains, never below the mark, not when switched off (drop), and
// not while the writer has left the ring alone for 100 ms blocked in a
// write of the trace (stuck, not starved): yielding then would only slow
// the thread down. A writer that made no progress for 100 ms but is not
// writing has no core yet (a loaded machine): the producer goes on yielding.
TEST(ThreadRingYieldTest, YieldsPastThreeQuartersOnlyWhileTheWriterMoves) {
  ThreadRing ring(1 << 16);  // 2048 events, yield by default
  const uint64_t cap = ring.capacity();
  uint64_t next = 0, expected = 0;
  ASSERT_TRUE(PushNumbered(ring, cap * 3 / 4, &next));
  EXPECT_EQ(ring.yields(), 0u);
  ASSERT_TRUE(PushWhileTheWriterMoves(ring, 100, &next));
  EXPECT_EQ(ring.yields(), 100u);  // one per event past the mark

  // The writer stays away, not writing (starved): yields go on.
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  uint64_t yields = ring.yields();
  ASSERT_TRUE(PushNumbered(ring, 10, &next));
  EXPECT_EQ(ring.yields(), yields + 10);

  // Blocked in a write for 100 ms without progress: stuck, no more yields.
  g_ring_writer_writing_since_ns.store(RingCoarseNowNs());
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  yields = ring.yields();
  ASSERT_TRUE(PushNumbered(ring, 10, &next));
  EXPECT_EQ(ring.yields(), yields);
  g_ring_writer_writing_since_ns.store(0);

  // It drains again: yields resume once the ring is past the mark again.
  DrainChecking(ring, &expected);
  ASSERT_TRUE(PushNumbered(ring, cap * 3 / 4, &next));
  const uint64_t before = ring.yields();
  ASSERT_TRUE(PushWhileTheWriterMoves(ring, 50, &next));
  EXPECT_EQ(ring.yields(), before + 50);

  DrainChecking(ring, &expected);
  EXPECT_EQ(expected, next);

  // Switched off (TRACER_BUFFER_FULL=drop), for this ring only: full means
  // dropped, no yield; a ring made beside it with the default still yields.
  ThreadRing drop(1 << 16, /*yield_when_nearly_full=*/false);
  ThreadRing yield(1 << 16);
  uint64_t next_drop = 0, next_yield = 0, expected_drop = 0;
  while (PushNumbered(drop, 1, &next_drop)) {
  }
  EXPECT_EQ(drop.yields(), 0u);
  EXPECT_EQ(next_drop, drop.capacity());
  ASSERT_TRUE(PushNumbered(yield, cap * 3 / 4 + 10, &next_yield));
  EXPECT_EQ(yield.yields(), 10u);
  DrainChecking(drop, &expected_drop);
  EXPECT_EQ(expected_drop, next_drop);
}

}  // namespace
}  // namespace tracer
