// Per-thread capture state: the thread's event ring, its stack of open
// push/pop ranges, its string intern cache and its counters. Only the owning
// thread touches the producer side; the writer thread drains the ring. The
// hot path (push/pop) takes no lock, allocates nothing and makes no syscall.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>

#include "libtracer/capture/event.h"
#include "libtracer/capture/thread_ring.h"
#include "libtracer/core/intern_cache.h"
#include "libtracer/core/pointer_name_cache.h"

namespace tracer {

// Range instance ids: bits 40..61 = the state's slot (states are recycled
// across threads; a slot's sequence goes on), bits 0..39 = per-slot
// sequence, so ids are unique without a shared atomic. Bit 63 marks an id
// handed to the application for a start/end range that was not recorded
// (dropped or outside the capture window), so its End is ignored too. Bit 62
// marks an instance of the capture-window range (TRACER_CAPTURE_RANGE).
inline constexpr uint64_t kRangeIdNotRecorded = 1ull << 63;
inline constexpr uint64_t kRangeIdCaptureInstance = 1ull << 62;
inline constexpr uint64_t kRangeIdMask = (1ull << 62) - 1;

// Counters the owning thread increments with plain load+store (no locked
// read-modify-write); the writer reads them relaxed.
struct ThreadCounters {
  std::atomic<uint64_t> ring_full{0};       // events dropped: ring full
  std::atomic<uint64_t> stack_overflow{0};  // pushes deeper than kMaxDepth
  std::atomic<uint64_t> pop_without_push{0};
  std::atomic<uint64_t> gated{0};  // outside the capture window or excluded domain
  // Pushes, starts and marks made after the session began its final drain
  // (exit() while this thread runs): they cannot be written any more.
  std::atomic<uint64_t> after_session_end{0};

  void Reset() noexcept {
    for (auto* c : {&ring_full, &stack_overflow, &pop_without_push, &gated, &after_session_end}) {
      c->store(0, std::memory_order_relaxed);
    }
  }

  static void Bump(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

// A thread's intern caches (64 KiB, most of a state's memory) in a block the
// registry can pool: a thread hands it back as it exits, before the writer
// drained its ring, so caches follow the live threads even when the writer
// lags behind thread churn.
struct InternCacheBlock {
  InternCache cache;
  // In front of `cache` for ASCII names, with the process's shared table.
  PointerNameCache by_address{&GlobalSharedNames()};
  InternCacheBlock* next_free = nullptr;
};

class ThreadState {
 public:
  static constexpr int kMaxDepth = 256;
  enum OpenFlags : uint8_t { kRecorded = 1, kCaptureInstance = 2 };
  struct OpenRange {
    uint64_t id;
    uint16_t domain;
    uint8_t flags;
    uint8_t zero = 0;  // so domain and flags read as one word (Tag)
    // domain and flags in one 32-bit word: the pop fast path checks both
    // with one compare.
    static constexpr uint32_t TagOf(uint16_t domain, uint8_t flags) noexcept {
      return uint32_t{domain} | uint32_t{flags} << 16;
    }
    uint32_t Tag() const noexcept {
      uint32_t t;
      std::memcpy(&t, &domain, sizeof(t));
      return t;
    }
  };
  static_assert(sizeof(OpenRange) == 16 && offsetof(OpenRange, flags) == 10);

  // slot: the state's index in its registry, for instance ids (1..2^22-1);
  // id: the thread's ThreadDef id in the stream.
  // cache: a pooled intern cache, or nullptr for a new one.
  // yield_when_nearly_full: the ring's policy past its yield mark (ThreadRing).
  ThreadState(uint32_t slot, uint32_t id, uint64_t ring_bytes, uint64_t os_tid, uint64_t pthread_id,
              std::unique_ptr<InternCacheBlock> cache = nullptr,
              bool yield_when_nearly_full = true);
  ThreadState(uint32_t id, uint64_t ring_bytes, uint64_t os_tid, uint64_t pthread_id)
      : ThreadState(id, id, ring_bytes, os_tid, pthread_id) {}
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;

  // Makes a drained state of an exited thread the state of a new thread:
  // empty ring, stack and counters; the slot's sequence and the intern cache
  // (process-wide string ids) carry over. Only while no thread owns it and
  // the writer does not look at it (ThreadRegistry's free list).
  void Reuse(uint32_t id, uint64_t os_tid, uint64_t pthread_id) noexcept;

  uint32_t id() const noexcept { return id_; }  // ThreadDef id in the stream
  uint32_t slot() const noexcept { return slot_; }
  // 0 = no open push/pop range. Inline: the launch path reads it.
  uint64_t innermost_range_id() const noexcept {
    for (int i = depth_; i-- > 0;) {
      if (stack_[i].flags & kRecorded) return stack_[i].id;
    }
    return 0;
  }
  bool Append(const Event& e) noexcept { return Append(&e, 1); }  // false = ring full (counted)
  // Appends n (1 or 2) events atomically, keeping room for the pops of every
  // recorded open range, so a recorded push always gets its pop.
  bool Append(const Event* events, int n) noexcept {
    return AppendKeeping(events, n, reserved_pops_);
  }

  // Appends a push/start event (plus its payload) only when its pop also
  // fits, so every recorded push is matched by a recorded pop.
  bool AppendPush(const Event* events, int n) noexcept {
    return AppendKeeping(events, n, reserved_pops_ + 1);
  }

  // In-place hot-path variants (push/pop): the caller fills the returned slot
  // and publishes it. nullptr when full (counted, like AppendPush).
  Event* BeginPush() noexcept {
    if (__builtin_expect(ring_.HasRoom(1, reserved_pops_ + 1), 1)) return ring_.SlotAfterHead(0);
    ThreadCounters::Bump(counters_.ring_full);
    return nullptr;
  }
  // The pop of a recorded range writes to the slot its push reserved (the
  // push checked room for itself and every open range's pop): no room check.
  Event* BeginPop() noexcept {
    if (__builtin_expect(reserved_pops_ > 0, 1)) {
      --reserved_pops_;
      return ring_.SlotAfterHead(0);
    }
    return BeginAppend();  // no reservation (cannot happen): checked
  }
  // In-place Append of one event: nullptr when full (counted).
  Event* BeginAppend() noexcept {
    if (__builtin_expect(ring_.HasRoom(1, reserved_pops_), 1)) return ring_.SlotAfterHead(0);
    ThreadCounters::Bump(counters_.ring_full);
    return nullptr;
  }
  void Publish1() noexcept { ring_.Publish(1); }

  // The launch hot path (cupti_adapter.cc), all or nothing like the two
  // below: fill(e) writes one event in place when the ring has room below
  // its limit (HasRoom's first compare, head read once); otherwise nothing
  // changes and it returns false, for the full path (Append) to count,
  // yield or drop. No call on the way, so its caller saves no registers.
  template <typename Fill>
  __attribute__((always_inline)) bool TryAppendOne(Fill fill) noexcept {
    const uint64_t head = ring_.head();
    if (__builtin_expect(!ring_.HasRoomBelowLimit(head, 1, reserved_pops_), 0)) return false;
    fill(ring_.SlotAt(head));
    ring_.PublishTo(head + 1);
    return true;
  }

  // The push+pop hot path (nvtx_handler.cc), each all or nothing: when
  // the call needs more than the common case they change nothing and return
  // slow(), the full path, which counts and handles the rest.
  //
  // Records a push of `name` in `domain` and opens its range: the stack
  // has room, and the ring has room for the push and every open range's
  // pop without rereading the consumer's position. Returns the range's
  // nesting level. now() reads the clock, after the checks.
  template <typename Clock, typename Slow>
  __attribute__((always_inline)) int TryPushRecorded(uint16_t domain, uint32_t name, Clock now,
                                                     Slow slow) noexcept {
    const int d = depth_;
    const uint64_t head = ring_.head();
    if (__builtin_expect(
            d >= kMaxDepth || !ring_.HasRoomBelowLimit(head, 1, uint64_t{reserved_pops_} + 1), 0)) {
      return slow();
    }
    if (d < 0) __builtin_unreachable();
    const uint64_t id = NextInstanceId();
    Event* e = ring_.SlotAt(head);
    SetEventHead(e, EventType::kPush, domain, name);
    e->a = id;
    e->b = 0;
    e->time = now();
    ring_.PublishTo(head + 1);
    stack_[d] = OpenRange{id, domain, kRecorded};
    ++reserved_pops_;
    depth_ = d + 1;
    return d;
  }
  // Pops the innermost open range when it is a recorded range of `domain`
  // whose end needs nothing else (not the capture range, not a top-level
  // range flushed as it ends, no overflow) and writes its pop event, at
  // `now`, to the slot its push reserved. Returns the depth after the pop.
  template <typename Slow>
  __attribute__((always_inline)) int TryPopRecorded(uint16_t domain, uint64_t now,
                                                    Slow slow) noexcept {
    const int d = depth_;
    if (__builtin_expect(d < min_fast_pop_depth_, 0)) return slow();
    if (d < 1) __builtin_unreachable();  // min_fast_pop_depth_ >= 1
    const OpenRange& r = stack_[d - 1];
    if (__builtin_expect(r.Tag() != OpenRange::TagOf(domain, kRecorded), 0)) return slow();
    --reserved_pops_;  // > 0: r is recorded (reserved_pops_ counts them)
    const uint64_t head = ring_.head();
    Event* e = ring_.SlotAt(head);
    SetEventHead(e, EventType::kPop, domain, 0);
    e->time = now;
    e->a = r.id;
    e->b = 0;
    ring_.PublishTo(head + 1);
    depth_ = d - 1;
    return d - 1;
  }
  // Whether a pop that empties the stack must be written out at once
  // (Session::flush_top_level_ranges, a forked child): set as the thread
  // registers, which is after its session set it.
  void SetFlushTopLevelRanges(bool on) noexcept {
    flush_top_level_ = on;
    UpdateFastPopDepth();
  }

  // slot << 40 | the slot's sequence, the slot's bits kept in last_id_ (an
  // add, not a shift and an or, per push).
  uint64_t NextInstanceId() noexcept { return ++last_id_; }

  // Range stack. PushOpen returns the nesting level (0-based) or -1 when
  // deeper than kMaxDepth (counted; the matching pop is then ignored).
  int PushOpen(uint64_t id, uint16_t domain, uint8_t flags) noexcept {
    if (__builtin_expect(depth_ >= kMaxDepth, 0)) return PushOverflow();
    stack_[depth_] = OpenRange{id, domain, flags};
    reserved_pops_ += flags & kRecorded;
    return depth_++;
  }
  // Pops the innermost open range of `domain`; false when there is none.
  bool PopOpen(uint16_t domain, OpenRange* out) noexcept {
    const OpenRange* r = PopOpen(domain);
    if (r) *out = *r;
    return r != nullptr;
  }
  // The same, in place (the pop hot path reads the fields it needs, no
  // copy): the popped range, valid until the next PushOpen, or nullptr.
  const OpenRange* PopOpen(uint16_t domain) noexcept {
    if (__builtin_expect(overflow_ == 0 && depth_ > 0 && stack_[depth_ - 1].domain == domain, 1)) {
      return &stack_[--depth_];
    }
    return PopOpenSlow(domain);
  }
  int depth() const noexcept { return depth_; }
  // Appends a pop event to the room reserved for it (see Append).
  bool AppendPop(const Event& e) noexcept {
    if (reserved_pops_ > 0) --reserved_pops_;
    // Cannot fail while the reservation invariant holds; checked anyway.
    return AppendKeeping(&e, 1, reserved_pops_);
  }

  // Only while the owning thread runs (it gives the cache back as it exits).
  InternCache& intern_cache() noexcept { return cache_->cache; }
  // The id of an ASCII name (not null): by its address first, then by its
  // content. Inlined into the push path.
  __attribute__((always_inline)) uint32_t NameId(const char* text) {
    return cache_->by_address.Lookup(text, &cache_->cache);
  }
  // NameId's common cases alone (PointerNameCache::TryPredicted, TryHome):
  // the id, or kNoNameId (then NameId). They never allocate or throw.
  static constexpr uint64_t kNoNameId = PointerNameCache::kNoId;
  __attribute__((always_inline)) uint64_t TryPredictedNameId(const char* text) noexcept {
    return cache_->by_address.TryPredicted(text);
  }
  // The address-keyed cache itself (internal::t_current.names).
  PointerNameCache* name_cache() noexcept { return &cache_->by_address; }
  uint64_t TryHomeNameId(const char* text) noexcept { return cache_->by_address.TryHome(text); }
  ThreadCounters& counters() noexcept { return counters_; }
  ThreadRing& ring() noexcept { return ring_; }
  uint64_t os_tid() const noexcept { return os_tid_; }
  uint64_t pthread_id() const noexcept { return pthread_id_; }

  // Set when the thread exits; the writer drains what is left, then gives
  // the state back to the registry for reuse.
  std::atomic<bool> exited{false};
  // False while the state waits in the registry's free list: the writer
  // skips it (ThreadRegistry::Snapshot).
  std::atomic<bool> in_use{true};

 private:
  bool AppendKeeping(const Event* events, int n, uint32_t keep_free) noexcept {
    if (__builtin_expect(ring_.HasRoom(static_cast<size_t>(n), keep_free), 1)) {
      ring_.PushUnchecked(events, static_cast<size_t>(n));
      return true;
    }
    ThreadCounters::Bump(counters_.ring_full, static_cast<uint64_t>(n));
    return false;
  }
  int PushOverflow() noexcept;
  const OpenRange* PopOpenSlow(uint16_t domain) noexcept;
  // The least depth_ TryPopRecorded takes: 1, or 2 when a pop to depth 0 is
  // flushed; never while pushes beyond kMaxDepth are open (overflow_).
  void UpdateFastPopDepth() noexcept {
    min_fast_pop_depth_ = overflow_ > 0 ? INT_MAX : 1 + int{flush_top_level_};
  }

  friend class ThreadRegistry;  // links states into its lists

  const uint32_t slot_;
  uint32_t id_;
  uint64_t os_tid_;
  uint64_t pthread_id_;
  ThreadState* next_all_ = nullptr;   // every state of the registry (never unlinked)
  ThreadState* next_free_ = nullptr;  // the registry's free list
  uint64_t last_id_;                  // the last instance id handed out (NextInstanceId)
  int depth_ = 0;
  int min_fast_pop_depth_ = 1;  // UpdateFastPopDepth
  uint32_t reserved_pops_ = 0;  // recorded open ranges, each owed one ring slot
  int overflow_ = 0;            // pushes beyond kMaxDepth still open
  bool flush_top_level_ = false;
  OpenRange stack_[kMaxDepth];
  OpenRange popped_{};  // PopOpenSlow's answer (taken out of the stack's middle)
  ThreadCounters counters_;
  std::unique_ptr<InternCacheBlock> cache_;  // nullptr once handed back (ThreadRegistry)
  ThreadRing ring_;
};

namespace internal {
// The calling thread's state and its address-keyed name cache (the
// state's, for the thread's life: the NVTX push reaches it without going
// through the state, one dependent load fewer before its text compare).
// Both set, or both null; the name cache set first and cleared last.
struct CurrentThread {
  ThreadState* state = nullptr;
  PointerNameCache* names = nullptr;
};
// initial-exec: plain %fs-relative loads instead of a __tls_get_addr call;
// two pointers fit glibc's static TLS surplus for dlopen'ed libraries.
extern constinit thread_local CurrentThread t_current __attribute__((tls_model("initial-exec")));
// May throw (allocation): callers sit below an entry guard.
ThreadState* CreateCurrentThreadState();
}  // namespace internal

// The calling thread's state, created on first use; nullptr when tracing is
// off. Throws when the state cannot be created (the next call tries again).
inline ThreadState* CurrentThreadState() {
  ThreadState* s = internal::t_current.state;
  if (__builtin_expect(s != nullptr, 1)) return s;
  return internal::CreateCurrentThreadState();
}

}  // namespace tracer
