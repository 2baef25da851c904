// Turns the events of every thread's ring into stream records: pairs push/pop
// per thread with a stack (parent id, depth), start/end by instance id across
// threads (an end may be drained before its start), attaches payloads and
// emits marks, launches, graph-node snapshots and thread names. Event times
// are trace clock ticks (NowTicks): records get them in ns through
// tick_map(), which the writer keeps up to date with the clock's calibration
// (RefreshTickMap) before each ring it drains. A pure function of the event
// sequence and the map, so it is tested without threads or files.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/capture/event.h"
#include "libtracer/core/records.h"
#include "libtracer/core/tick_map.h"

namespace tracer {

class EventDecoder {
 public:
  class Output {
   public:
    virtual ~Output() = default;
    virtual void Range(const RangeRecord& r) = 0;
    virtual void Mark(const MarkRecord& r) = 0;
    virtual void Launch(const LaunchRecord& r) = 0;
    virtual void GraphNode(const GraphNodeSnapshotRecord& r) = 0;
    virtual void ThreadName(uint32_t thread, uint32_t name) = 0;
    virtual void Count(std::string_view counter, uint64_t delta) = 0;
  };

  // Ends waiting for their start are kept up to this many (about 50 MB);
  // beyond, an end without a start already drained is counted and dropped.
  static constexpr size_t kMaxEarlyEnds = size_t{1} << 20;

  explicit EventDecoder(Output* out) : out_(out) {}

  // Ticks -> ns for every event time; the identity until set.
  TickMap* tick_map() { return &ticks_; }

  // Events of one thread must arrive in that thread's ring order; threads
  // may interleave arbitrarily.
  //
  // Inline, the events of a thread pushing and popping without payloads
  // (most of them): a push opens a range on the thread's stack in place, a
  // pop of the innermost range hands it to Output::Range from there. The
  // writer must decode faster than a thread pushes (about 20-50 ns a
  // range), and the general path's copies of the record cost a third of
  // that. Everything else goes through ConsumeSlow, which is the same
  // decoding for every event.
  void Consume(uint32_t thread, const Event& e) {
    ThreadStack& ts = StackOf(thread);
    if (__builtin_expect(!ts.has_held, 1)) {
      if (e.type == EventType::kPop) {
        if (!ts.open.empty() && ts.open.back().id == e.a) {
          RangeRecord& r = ts.open.back();
          r.end_ns = ticks_.ToNs(e.time);
          out_->Range(r);
          ts.open.pop_back();
          return;
        }
      } else if (e.type == EventType::kPush && (e.flags & kEventHasPayload) == 0) {
        // Every field written in place, once: a record built on the stack
        // and copied in (or a zeroed slot, `rep stos`) cost several ns a
        // range (the copy's wide loads of narrow stores cannot be
        // forwarded).
        const uint64_t parent = ts.open.empty() ? 0 : ts.open.back().id;
        const auto depth = static_cast<uint32_t>(ts.open.size());
        RangeRecord& r = ts.open.PushSlot();
        r.id = e.a;
        r.parent_id = parent;
        r.thread = thread;
        r.name = e.name;
        r.domain = e.domain;
        r.category = static_cast<uint32_t>(e.b);
        r.start_ns = ticks_.ToNs(e.time);
        r.end_ns = 0;
        r.kind = RangeKind::kPushPop;
        r.depth = depth;
        r.end_thread = 0;
        r.flags = 0;
        r.color = static_cast<uint32_t>(e.b >> 32);
        r.raw_name = 0;
        r.payload.type = PayloadValue::Type::kNone;
        r.payload.u64 = 0;
        return;
      }
    }
    ConsumeSlow(thread, ts, e);
  }

  // Ends the session: ranges still open are written with end = end_ns and
  // RANGE_FLAG_UNCLOSED. Returns how many there were.
  uint64_t Finish(uint64_t end_ns);

  size_t open_ranges() const;

  // The thread exited and its last events were consumed: its stack is
  // released unless ranges are still open on it (closed at Finish).
  void ThreadExited(uint32_t thread);
  size_t threads_tracked() const { return threads_.size(); }

 private:
  // The open push/pop ranges of a thread, innermost last: a vector whose
  // slots keep their storage when popped, so that a push fills one in place
  // (PushSlot) without constructing it first.
  class RangeStack {
   public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    RangeRecord& back() { return slots_[size_ - 1]; }
    const RangeRecord& back() const { return slots_[size_ - 1]; }
    RangeRecord& operator[](size_t i) { return slots_[i]; }
    // A slot past the top, holding whatever it held last: the caller sets
    // every field.
    RangeRecord& PushSlot() {
      if (__builtin_expect(size_ == slots_.size(), 0)) slots_.resize(size_ + size_ / 2 + 8);
      return slots_[size_++];
    }
    void push_back(const RangeRecord& r) { PushSlot() = r; }
    void pop_back() { --size_; }
    void erase(size_t i) {
      for (size_t j = i; j + 1 < size_; ++j) slots_[j] = slots_[j + 1];
      --size_;
    }

   private:
    std::vector<RangeRecord> slots_;
    size_t size_ = 0;
  };

  struct ThreadStack {
    RangeStack open;  // push/pop ranges, innermost last
    Event held{};     // an event waiting for its kPayload
    bool has_held = false;
  };
  struct PendingEnd {
    uint64_t time;
    uint32_t thread;
  };

  ThreadStack& StackOf(uint32_t thread) {
    if (thread != last_thread_ || !last_stack_) {
      last_stack_ = &threads_[thread];
      last_thread_ = thread;
    }
    return *last_stack_;
  }
  void ConsumeSlow(uint32_t thread, ThreadStack& ts, const Event& e);
  void Process(uint32_t thread, ThreadStack& ts, const Event& e, const Event* payload);
  static void SetPayload(PayloadValue* p, const Event* payload);
  // The range a push or start event e opens on thread (stack ts), end not set.
  RangeRecord OpenedRange(uint32_t thread, const ThreadStack& ts, const Event& e,
                          const Event* payload, RangeKind kind);

  Output* out_;
  TickMap ticks_;
  std::unordered_map<uint32_t, ThreadStack> threads_;  // node-based: pointers stay valid
  uint32_t last_thread_ = 0;
  ThreadStack* last_stack_ = nullptr;
  std::unordered_map<uint64_t, RangeRecord> open_starts_;
  std::unordered_map<uint64_t, PendingEnd> early_ends_;  // end drained before its start
};

}  // namespace tracer
