// Single-producer single-consumer ring of Events: the owning application
// thread produces, the writer thread consumes. The producer keeps its own
// copy of the consumer position and rereads the shared one only when the ring
// looks full, so a push writes no cache line the writer writes.
//
// Fill mark: the producer's fast check is against half the capacity, not
// all of it. Past it (stale view) it rereads the consumer position, and when
// the ring really is more than half full it calls RingPassedFillMark(),
// which asks the writer for an early drain (a flag and at most one futex
// wake per drain: never a wait). A burst thus gets the writer's attention
// long before the ring fills, instead of waiting for the flush interval.
//
// Yield mark: past three quarters full, the producer also gives its core
// away once per event (sched_yield) while the writer is making progress.
// One writer drains every thread: threads recording flat out on a machine
// whose cores are all busy get the cores and the writer a thread's share,
// so rings fill and events drop however cheap the writer is (4 threads
// flat out on 2 shared cores dropped about 25 % with the writer at 6 % of
// a core). A thread past the mark runs at the writer's pace instead; past
// 15/16 it sleeps 50 us per event rather than yields (YieldToWriter).
// Never a wait: when the writer has handed no ring any room for
// kYieldWithoutProgressNs while blocked writing the trace (a full disk, a
// pipe nobody reads), or for kStarvedWriterNs whatever it was doing, the
// producer stops yielding and drops as before until the writer moves again.
// A writer that is merely starved (runnable but not run, or waiting on the
// memory map lock, for over 100 ms on a loaded machine) is not stuck:
// dropping then lost up to 5 % of four flat-out threads' events.
#pragma once

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "libtracer/capture/event.h"

namespace tracer {

// Defined by the capture session (thread_state.cc): requests an early drain.
// Never blocks, never throws.
void RingPassedFillMark() noexcept;

// Defined by the capture session (thread_state.cc): asks the writer to fault
// in more of the calling thread's ring ahead of it (ThreadRing::PrefaultAhead)
// soon. Only wakes the writer, as RingPassedFillMark does.
void RingWantsPopulate() noexcept;

// MADV_POPULATE_WRITE on [addr, addr + len) (page-aligned): 0, or -1 with
// errno (EINVAL: a kernel before 5.14, which has no such advice).
inline int RingPopulateBySystem(void* addr, size_t len) noexcept {
#ifdef MADV_POPULATE_WRITE
  return madvise(addr, len, MADV_POPULATE_WRITE);
#else
  (void)addr;
  (void)len;
  errno = EINVAL;
  return -1;
#endif
}

// What every ring calls to fault pages in: a variable so that tests can make
// it fail as an old kernel does.
inline int (*g_ring_populate)(void* addr, size_t len) noexcept = &RingPopulateBySystem;

// CLOCK_MONOTONIC in ns: the writer's clock for a producer's rate
// (PrefaultAhead).
inline uint64_t RingNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Bumped by the consumer each time it hands room back to a producer, in any
// ring: a producer yields only while this moves (the writer works through
// the rings one after the other, so one ring's tail may rest for a long
// while when the writer is starved but busy).
inline std::atomic<uint64_t> g_ring_writer_progress{0};

// CLOCK_MONOTONIC_COARSE in ns (vDSO, no syscall): the producer's clock for
// YieldToWriter, and the writer's for g_ring_writer_writing_since_ns.
inline uint64_t RingCoarseNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Set by the consumer (RingCoarseNowNs, at least 1) while it writes the
// trace file, 0 otherwise: a producer tells a writer blocked in write() (a
// full disk: stuck) from one that has no core yet (starved).
inline std::atomic<uint64_t> g_ring_writer_writing_since_ns{0};

class ThreadRing {
 public:
  // Capacity in events: ring_bytes / sizeof(Event) rounded down to a power of
  // two, at least 16. yield_when_nearly_full: TRACER_BUFFER_FULL, true
  // (yield, the default) = the producer past the yield mark yields its core
  // to the writer; false (drop) = it only drops when full. Given per ring,
  // at construction: a session's setting, not a process-wide global that
  // another session (a forked child's, a test's) would overwrite.
  explicit ThreadRing(uint64_t ring_bytes, bool yield_when_nearly_full = true)
      : yield_when_nearly_full_(yield_when_nearly_full) {
    uint64_t want = ring_bytes / sizeof(Event);
    size_t cap = 16;
    while (cap * 2 <= want && cap < (size_t{1} << 30)) cap *= 2;
    capacity_ = cap;
    mask_ = cap - 1;
    fill_mark_ = cap / 2;
    yield_mark_ = cap - cap / 4;
    sleep_mark_ = cap - cap / 16;
    // Mapped, not allocated: page-aligned fresh zero pages, none resident
    // until written (a thread pays, in page faults, only for what it fills),
    // and index pages line up with memory pages (ReleaseConsumed).
    const size_t bytes = cap * sizeof(Event);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
      // Small pages: with transparent huge pages on "always", a thread's
      // first event would make 2 MiB resident, and handing read pages back
      // would split huge pages. Tried and dropped (issue 13): huge pages past
      // a ring's first 2 MiB (the mapping 2 MiB-aligned). They fault in at
      // 0.44 us per 4 KiB against 0.97 us populated in 64 KiB batches and
      // 1.2 us faulted (2-core VM), yet nvtx_push_pop_bench's first lap did
      // not improve clearly at 8-16 threads under load (1.70-1.86x the floor
      // against 1.80x before in one run, 1.82-2.16x against 1.86-1.92x at 16),
      // and 64 threads with 4 MiB rings gained nothing but up to 2 MiB resident
      // a thread past what each wrote (peak RSS 265 MiB against 159-231).
#ifdef MADV_NOHUGEPAGE
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    slots_ = static_cast<Event*>(p);
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    events_per_page_ = page / sizeof(Event);
    release_consumed_ = page % sizeof(Event) == 0 && cap >= kMinReleasePages * events_per_page_;
  }

  ~ThreadRing() { munmap(slots_, capacity_ * sizeof(Event)); }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  // Empties the ring for a new owner (thread churn recycles rings). Only
  // when no producer or consumer uses it: the registry hands a drained ring
  // from the writer to a registering thread under its lock.
  void Reset() noexcept {
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_tail_ = 0;
    limit_ = 0;
    populated_end_ = 0;
    producer_populates_ = populate_supported_;
    asked_at_ = ~uint64_t{0};
    producer_populated_to_.store(0, std::memory_order_relaxed);
    consumed_ = 0;
    prefaulted_to_ = 0;
    populated_to_.store(0, std::memory_order_relaxed);
    populating_to_.store(0, std::memory_order_relaxed);
    request_at_.store(kFirstAskEvents, std::memory_order_relaxed);
    head_at_prefault_ = 0;
    ns_at_prefault_ = 0;
    producer_seen_ = 0;
    window_ = kMinWindowEvents;
    released_to_ = 0;
    progress_seen_ = ~uint64_t{0};
    progress_ns_ = 0;
    yields_ = 0;
  }

  size_t capacity() const noexcept { return capacity_; }

  // Producer: true when n more events fit while keeping `keep_free` slots.
  // One compare: limit_ is the fill mark by the cached consumer position,
  // or the end of the slots known to be faulted in when that comes first.
  bool HasRoom(size_t n, size_t keep_free) noexcept {
    const uint64_t end = head_.load(std::memory_order_relaxed) + n + keep_free;
    if (__builtin_expect(end <= limit_, 1)) return true;
    return HasRoomPastMark(end);
  }

  // Producer, for a hot path that reads the head once: HasRoom's first
  // compare alone, with no side effect (true: HasRoom would be; false: only
  // HasRoom can tell), the slot at `index`, and the new head published.
  uint64_t head() const noexcept { return head_.load(std::memory_order_relaxed); }
  bool HasRoomBelowLimit(uint64_t head, size_t n, size_t keep_free) const noexcept {
    return head + n + keep_free <= limit_;
  }
  Event* SlotAt(uint64_t index) noexcept { return slots_ + (index & mask_); }
  void PublishTo(uint64_t head) noexcept { head_.store(head, std::memory_order_release); }

  // Producer: writes n events; the caller checked HasRoom(n, ...).
  void PushUnchecked(const Event* events, size_t n) noexcept {
    uint64_t head = head_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i) slots_[(head + i) & mask_] = events[i];
    head_.store(head + n, std::memory_order_release);
  }

  // Producer, in-place variant of PushUnchecked (no staging copy): the i-th
  // slot after the head, then Publish(n). The caller checked HasRoom(n, ...).
  Event* SlotAfterHead(size_t i) noexcept {
    return slots_ + ((head_.load(std::memory_order_relaxed) + i) & mask_);
  }
  void Publish(size_t n) noexcept {
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // Consumer: calls fn(const Event&) for every event available now, in order.
  //
  // The slots it read go back to the producer at page granularity: the tail
  // published is the start of the page holding the new head (the producer
  // sees at most one page less room), so every page is at some drain wholly
  // between the old and the new published tail. Those pages cannot be
  // written before the new tail is published (the producer stays below the
  // old tail plus the capacity), so they are handed back to the system
  // first when the ring is no more than half full: a ring's resident memory
  // follows what it holds (plus PrefaultAhead's window), not its capacity,
  // however many laps the producer makes.
  //
  // keep_pages: hand no pages back in this drain (the caller knows the ring
  // is busy; see the busy rule below).
  template <typename Fn>
  size_t Drain(Fn&& fn, bool keep_pages = false) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    const size_t n = static_cast<size_t>(head - consumed_);
    // A busy ring (this drain reads at least 1 / kBusyFraction of it, or
    // the caller says so) keeps its pages: the producer writes them again
    // within a lap, and handing them back only for PrefaultAhead to fault
    // them in again (a page allocated, zeroed and charged) cost the writer
    // about 14 ns of its 37 ns per range when a thread pushed flat out. Its
    // resident memory stays within its capacity; the first quieter drain
    // hands pages back again.
    // Read once: PrefaultAhead, which the caller may run on this ring from
    // fn, clears it when the kernel cannot populate.
    const bool page_tails = release_consumed_;
    const bool release =
        page_tails && !keep_pages && n < capacity_ / kBusyFraction && head - tail <= fill_mark_;
    uint64_t i = consumed_;
    while (i != head) {
      // A long drain (half a ring is milliseconds of decoding, more when
      // the writer is preempted) gives the producer its room back as it
      // goes, every kPublishEvery events, not only at its end.
      const uint64_t stop =
          release ? head : std::min(head, (i + kPublishEvery) & ~(kPublishEvery - 1));
      for (; i != stop; ++i) {
        // The producer wrote these lines on another core, mostly out of
        // this one's caches, and the hardware prefetcher stops at every
        // page: the loads ahead overlap their misses with the decoding.
        __builtin_prefetch(&slots_[(i + kPrefetchAhead) & mask_]);
        fn(slots_[i & mask_]);
      }
      consumed_ = i;
      const uint64_t publish = page_tails ? i - i % events_per_page_ : i;
      if (publish > tail) {
        if (release) {
          ReleaseSlots(tail, publish);
          released_to_ = publish;
        }
        tail_.store(publish, std::memory_order_release);
        tail = publish;
        g_ring_writer_progress.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return n;
  }

  // Consumer, with no producer (its thread exited): returns the pages past
  // the first `keep` bytes that the producer may have touched to the system
  // (they read back as zeros, touched again only if a later owner fills
  // that far). Whole pages only.
  void ReleasePagesBeyond(uint64_t keep) noexcept {
    // Touched: written, or faulted in ahead of the head (PrefaultAhead,
    // PopulateFor).
    const uint64_t used =
        std::min<uint64_t>(std::max({head_.load(std::memory_order_relaxed), prefaulted_to_,
                                     producer_populated_to_.load(std::memory_order_relaxed)}),
                           capacity_);
    const uint64_t used_bytes = used * sizeof(Event);
    const uint64_t page = events_per_page_ * sizeof(Event);
    const uint64_t begin = (keep + page - 1) / page * page;
    const uint64_t end = (used_bytes + page - 1) / page * page;
    const auto base = reinterpret_cast<uintptr_t>(slots_);
    if (end > begin) madvise(reinterpret_cast<void*>(base + begin), end - begin, MADV_DONTNEED);
  }

  // Consumer: the ring's pages are not resident until written (thread
  // registration stays cheap, and ReleaseConsumed hands read pages back),
  // so the producer would take a page fault every page of events on its hot
  // path (about 1 us each here, most of it the kernel zeroing the page).
  // The writer faults pages in ahead of the producer instead
  // (MADV_POPULATE_WRITE: the kernel maps them writable without touching
  // their contents, so it may run while the producer writes), at each drain
  // and, on the first lap, whenever the producer asks (RingWantsPopulate:
  // it got within half a window of the end of what is populated).
  //
  // How far ahead, on the first lap: what the producer writes in kAheadNs
  // at its rate since the last call; twice what it wrote since the last
  // call (a writer that was away long, busy or without a core, is likely to
  // be away as long again); and at least window_, which starts at
  // kMinWindowEvents (a thread that records little keeps a small
  // footprint) and doubles, up to kMaxWindowEvents, each time the producer
  // outran it (faulted slots in itself, PopulateFor: a burst faster than
  // its average, or a writer slow to answer); all at most kMaxAheadEvents
  // or a quarter of the ring.
  // A thread that stops leaves that much populated and unused; one that goes
  // on asks for more, and while it asks in time, what it wrote since the
  // last call is about half a window, so the window does not grow on its
  // own.
  // From the second lap on only drains call: eight times what the producer
  // wrote since the last (several flush intervals), at least
  // kMinWindowEvents. Never over slots the producer may not write yet.
  //
  // In chunks of kPopulateChunkEvents, each published (populated_to_) as it
  // is done: the producer writes the chunks done while later ones are
  // populated, and a producer that overtook the writer is skipped over
  // rather than raced page by page.
  void PrefaultAhead() noexcept {
    if (!populate_supported_) return;
    const uint64_t now = RingNowNs();
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t written = head - std::min(head, head_at_prefault_);
    const uint64_t elapsed = now - std::min(now, ns_at_prefault_);
    const bool first_call = ns_at_prefault_ == 0;
    head_at_prefault_ = head;
    ns_at_prefault_ = now;
    const bool first_lap = head < capacity_;
    const uint64_t by_producer = producer_populated_to_.load(std::memory_order_relaxed);
    if (first_lap && prefaulted_to_ != 0 &&
        by_producer > std::max(prefaulted_to_, producer_seen_)) {
      window_ = std::min(2 * window_, kMaxWindowEvents);  // outran: it faulted slots in itself
    }
    producer_seen_ = by_producer;
    uint64_t ahead = std::max(kMinWindowEvents, 8 * written);
    if (first_lap) {
      ahead = std::max(window_, 2 * written);
      if (!first_call && elapsed > 0) ahead = std::max(ahead, written * kAheadNs / elapsed);
      ahead = std::min<uint64_t>(ahead, std::max<uint64_t>(kMaxAheadEvents, capacity_ / 4));
    }
    const uint64_t free_slots = capacity_ - std::min<uint64_t>(capacity_, head - tail);
    ahead = std::min<uint64_t>(ahead, free_slots);
    // Index j shares its slot with j - capacity_, which was written and,
    // when at or past released_to_, never handed back: such slots are
    // resident already (populating them again walks their page tables for
    // nothing, a few ns per range of a busy ring). Only the slots below
    // released_to_ + capacity_ may need faulting in.
    const uint64_t to = std::min(head + ahead, released_to_ + capacity_);
    const uint64_t from = std::max({prefaulted_to_, head, by_producer});
    if (to > from) PopulateSlots(from, to);
    if (first_lap && populate_supported_) {
      const uint64_t end = std::max({prefaulted_to_, by_producer, head});
      request_at_.store(end - std::min(end, ahead / 2), std::memory_order_relaxed);
    }
    if (!populate_supported_) release_consumed_ = false;  // faults would land on the producer
  }

  // False once the kernel refused MADV_POPULATE_WRITE (EINVAL: before
  // 5.14): the ring's pages then fault in on the producer as it writes.
  bool populate_supported() const noexcept { return populate_supported_; }

  // Producer: the slow half of HasRoom (past the fill mark by the cached
  // consumer position, or past the slots known to be faulted in). `end` =
  // head + n + keep_free.
  __attribute__((noinline)) bool HasRoomPastMark(uint64_t end) noexcept {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    const uint64_t fill = end - cached_tail_;
    bool room = true;
    if (fill > fill_mark_) {
      RingPassedFillMark();
      if (fill > yield_mark_ && yield_when_nearly_full_) YieldToWriter(fill);
      room = fill <= capacity_;
    }
    uint64_t limit = cached_tail_ + fill_mark_;
    if (producer_populates_) limit = std::min(limit, PopulateFor(end));
    limit_ = limit;
    return room;
  }

  // Producer: times it yielded to the writer (YieldToWriter), for tests.
  uint64_t yields() const noexcept { return yields_; }

  // Bytes of the ring resident in memory now (mincore), for tests and
  // benchmarks; 0 when it cannot tell.
  uint64_t ResidentBytes() const {
    const uint64_t page = events_per_page_ * sizeof(Event);
    const uint64_t bytes = capacity_ * sizeof(Event);
    std::unique_ptr<unsigned char[]> pages(new unsigned char[(bytes + page - 1) / page]);
    if (mincore(slots_, bytes, pages.get()) != 0) return 0;
    uint64_t resident = 0;
    for (uint64_t i = 0; i < (bytes + page - 1) / page; ++i) resident += (pages[i] & 1) * page;
    return resident;
  }

  // Bytes PrefaultAhead asked the system to fault in so far (consumer
  // side), for tests and benchmarks.
  uint64_t populated_bytes() const noexcept { return populated_bytes_; }

  size_t SizeApprox() const noexcept {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_acquire));
  }

 private:
  // Producer, first lap only (fresh pages): makes sure the slots below `end`
  // are faulted in and returns the bound for HasRoom's fast compare: the
  // index below which they are, or the point at which to ask the writer for
  // more (request_at_, half the writer's window before the end of what it
  // populated: the writer then has half a window of the producer's time to
  // answer). The writer's PrefaultAhead keeps ahead when it has a core; when
  // it does not (more producers than cores, or a writer busy writing), the
  // producer faults in the next kProducerPopulateBytes itself in one
  // MADV_POPULATE_WRITE rather than taking a page fault every 128 events
  // (measured here: 0.99 us a page populated in 64 KiB batches against
  // 1.33 us a page faulted, most of both the kernel zeroing the page).
  // Resident memory stays bounded: at most that much beyond what the
  // producer wrote, or the writer's window. From the second lap on, slots
  // were written before and stay resident while the ring is busy (Drain):
  // the writer's window alone.
  __attribute__((noinline)) uint64_t PopulateFor(uint64_t end) noexcept {
    const uint64_t by_writer = populated_to_.load(std::memory_order_acquire);
    if (by_writer > populated_end_) populated_end_ = by_writer;
    if (end > capacity_) {  // past the first lap: the writer's window
      producer_populates_ = false;
      return ~uint64_t{0};
    }
    // One ask per request point the writer set: a wake-up at most (never a
    // wait), and none while the writer's answer is pending.
    const uint64_t ask_at = request_at_.load(std::memory_order_relaxed);
    if (ask_at != asked_at_ && end > ask_at) {
      asked_at_ = ask_at;
      RingWantsPopulate();
    }
    const auto bound = [&](uint64_t resident) {
      return ask_at != asked_at_ && ask_at >= end ? std::min(resident, ask_at) : resident;
    };
    if (end <= populated_end_) return bound(populated_end_);
    // The writer is populating the chunk that holds `end` right now: the
    // producer writes behind its cursor, which outruns it (a page fault at
    // most on the pages it has not reached yet), rather than populating the
    // same pages again beside it.
    const uint64_t in_progress = populating_to_.load(std::memory_order_relaxed);
    if (end <= in_progress) return bound(in_progress);
    const uint64_t page = events_per_page_;
    const uint64_t from =
        std::max(populated_end_, head_.load(std::memory_order_relaxed)) / page * page;
    const uint64_t to = std::min<uint64_t>(
        capacity_, (end + page - 1) / page * page + kProducerPopulateBytes / sizeof(Event));
    if (g_ring_populate(slots_ + from, (to - from) * sizeof(Event)) != 0 && errno == EINVAL) {
      producer_populates_ = false;  // kernel before 5.14: faults stay inline
      return ~uint64_t{0};
    }
    populated_end_ = to;
    producer_populated_to_.store(to, std::memory_order_relaxed);
    if (to == capacity_) {
      producer_populates_ = false;  // the whole first lap is faulted in
      return ~uint64_t{0};
    }
    return bound(to);
  }

  // Consumer: faults in the slots of [from, to) (at most a lap) chunk by
  // chunk, starting each past the producer's head and what it faulted in
  // itself, and publishes each chunk's end (populated_to_) once done.
  void PopulateSlots(uint64_t from, uint64_t to) noexcept {
    const uint64_t page = events_per_page_;
    for (uint64_t at = from; at < to;) {
      at = std::max({at, head_.load(std::memory_order_relaxed) / page * page,
                     producer_populated_to_.load(std::memory_order_relaxed)});
      if (at >= to) break;
      const uint64_t stop = std::min(to, at + kPopulateChunkEvents);
      populating_to_.store(stop, std::memory_order_relaxed);
      ForEachSlotRange(at, stop, [this](uintptr_t begin, uintptr_t end) {
        const uint64_t page_bytes = events_per_page_ * sizeof(Event);
        begin = begin / page_bytes * page_bytes;
        end = (end + page_bytes - 1) / page_bytes * page_bytes;
        if (!populate_supported_) return;
        if (g_ring_populate(reinterpret_cast<void*>(begin), end - begin) != 0 && errno == EINVAL) {
          populate_supported_ = false;  // kernel before 5.14: faults stay inline
          return;
        }
        populated_bytes_ += end - begin;
      });
      if (!populate_supported_) return;
      prefaulted_to_ = stop;
      populated_to_.store(stop, std::memory_order_release);
      at = stop;
    }
  }

  // Past the yield mark: one sched_yield, unless the writer is stuck (then
  // it is not draining: yielding would only slow the thread down): it has
  // handed no ring any room for kYieldWithoutProgressNs while blocked in a
  // write of the trace file, or for kStarvedWriterNs.
  // Past sleep_mark_ (15/16 full) sched_yield has not been enough: with
  // more busy threads than cores it mostly hands the core to another
  // producer, not to the writer (on 2 cores, 4 threads pushing flat out lost
  // up to 5 % of their ranges that way). There the producer sleeps
  // kNearlyFullSleepNs per event instead, which frees its core for whatever
  // the scheduler runs next; still bounded by the progress check above.
  __attribute__((noinline)) void YieldToWriter(uint64_t fill) noexcept {
    const uint64_t now = RingCoarseNowNs();
    const uint64_t progress = g_ring_writer_progress.load(std::memory_order_relaxed);
    if (progress != progress_seen_) {
      progress_seen_ = progress;
      progress_ns_ = now;
    }
    const uint64_t stalled = now - progress_ns_;
    if (stalled >= kYieldWithoutProgressNs) {
      if (stalled >= kStarvedWriterNs) return;
      const uint64_t writing = g_ring_writer_writing_since_ns.load(std::memory_order_relaxed);
      if (writing != 0 && now - std::min(now, writing) >= kYieldWithoutProgressNs) return;
    }
    ++yields_;
    if (fill > sleep_mark_) {
      const timespec pause{0, static_cast<long>(kNearlyFullSleepNs)};
      nanosleep(&pause, nullptr);
      return;
    }
    sched_yield();
  }

  // A writer that has handed no ring room for this long, blocked in a write
  // all along, is stuck, not starved: the producer drops instead of yielding.
  static constexpr uint64_t kYieldWithoutProgressNs = 100'000'000;
  // Stuck whatever it is doing: the longest a thread past the yield mark is
  // slowed down (yields, 50 us sleeps) by a writer that makes no progress.
  static constexpr uint64_t kStarvedWriterNs = 2'000'000'000;
  // How long a producer past sleep_mark_ sleeps per event (YieldToWriter).
  static constexpr uint64_t kNearlyFullSleepNs = 50'000;
  // Rings smaller than this many pages keep their pages (one page of room
  // lost to page-granular tails would cost them too much).
  static constexpr uint64_t kMinReleasePages = 16;
  // Drains that read at least capacity / kBusyFraction events hand no
  // pages back (Drain).
  static constexpr uint64_t kBusyFraction = 8;
  // What the producer faults in at once on its first lap (PopulateFor).
  static constexpr uint64_t kProducerPopulateBytes = 64 << 10;
  // The writer's populating window (PrefaultAhead): at least this far ahead
  // of the head...
  static constexpr uint64_t kMinWindowEvents = (64 << 10) / sizeof(Event);
  // ... growing up to this far when the producer outruns it ...
  static constexpr uint64_t kMaxWindowEvents = (2 << 20) / sizeof(Event);
  // ... and covering what the producer writes in this long at its rate ...
  static constexpr uint64_t kAheadNs = 4'000'000;
  // ... but never more than this or a quarter of the ring, whichever is
  // more, on the first lap: what a thread that stops may leave populated
  // and unused (8 MiB of the default 32 MiB ring; a producer flat out here
  // writes that in about 3.5 ms, and asks for more at half of it).
  static constexpr uint64_t kMaxAheadEvents = (4 << 20) / sizeof(Event);
  // The writer publishes what it populated every this many events (128 KiB).
  static constexpr uint64_t kPopulateChunkEvents = (128 << 10) / sizeof(Event);
  // Where a fresh ring's producer first asks the writer to populate (32 KiB
  // in, half its own first batch): a thread that records a few hundred
  // ranges and exits wakes nobody.
  static constexpr uint64_t kFirstAskEvents = (32 << 10) / sizeof(Event);
  // Events Drain loads ahead of the one it decodes (1 KiB).
  static constexpr uint64_t kPrefetchAhead = 32;
  // Events between the tails a busy drain publishes as it goes (a power of
  // two, whole pages: 128 KiB).
  static constexpr uint64_t kPublishEvery = 4096;

  // fn(begin_address, end_address) for the slots of indices [from, to)
  // (at most one lap): one or two address ranges.
  template <typename Fn>
  void ForEachSlotRange(uint64_t from, uint64_t to, Fn&& fn) noexcept {
    const auto base = reinterpret_cast<uintptr_t>(slots_);
    uint64_t first = from & mask_;
    uint64_t count = std::min<uint64_t>(to - from, capacity_);
    const uint64_t run = std::min<uint64_t>(count, capacity_ - first);
    fn(base + first * sizeof(Event), base + (first + run) * sizeof(Event));
    if (count > run) fn(base, base + (count - run) * sizeof(Event));
  }

  // The slots of [from, to), both page-aligned indices, back to the system.
  void ReleaseSlots(uint64_t from, uint64_t to) noexcept {
    ForEachSlotRange(from, to, [](uintptr_t begin, uintptr_t end) {
      madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    });
  }

  Event* slots_ = nullptr;  // mapped, capacity_ events
  size_t capacity_ = 0;
  uint64_t mask_ = 0;
  uint64_t fill_mark_ = 0;   // capacity_ / 2
  uint64_t yield_mark_ = 0;  // capacity_ * 3 / 4
  uint64_t sleep_mark_ = 0;  // capacity_ * 15 / 16
  uint64_t events_per_page_ = 128;
  bool release_consumed_ = false;
  const bool yield_when_nearly_full_;
  // Producer-owned line.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t limit_ = 0;  // HasRoom's fast bound (HasRoomPastMark)
  uint64_t cached_tail_ = 0;
  uint64_t populated_end_ = 0;        // slots of indices below it are faulted in
  bool producer_populates_ = true;    // PopulateFor: first lap, kernel supports it
  uint64_t asked_at_ = ~uint64_t{0};  // the request_at_ the producer last asked at
  // populated_end_ after the producer faulted slots in itself, for the writer.
  std::atomic<uint64_t> producer_populated_to_{0};
  uint64_t progress_seen_ = ~uint64_t{0};  // YieldToWriter: g_ring_writer_progress seen
  uint64_t progress_ns_ = 0;               // when it last moved
  uint64_t yields_ = 0;
  // Consumer-owned line.
  alignas(64) std::atomic<uint64_t> tail_{0};
  uint64_t consumed_ = 0;          // events read (tail_ trails it by less than a page)
  uint64_t prefaulted_to_ = 0;     // slots of indices below it were populated
  uint64_t head_at_prefault_ = 0;  // head seen by the last PrefaultAhead
  uint64_t ns_at_prefault_ = 0;    // when (RingNowNs), 0 before the first
  uint64_t producer_seen_ = 0;     // producer_populated_to_ it saw
  uint64_t window_ = kMinWindowEvents;
  uint64_t released_to_ = 0;      // end of the last slots handed back (Drain)
  uint64_t populated_bytes_ = 0;  // populated_bytes()
  // prefaulted_to_, published for the producer's PopulateFor, and where
  // the producer is to ask for more.
  std::atomic<uint64_t> populated_to_{0};
  std::atomic<uint64_t> request_at_{kFirstAskEvents};
  // The end of the chunk PopulateSlots is faulting in now (or did last).
  std::atomic<uint64_t> populating_to_{0};
  bool populate_supported_ = true;
};

}  // namespace tracer
