// Turns the events of every thread's ring into stream records: pairs push/pop
// per thread with a stack (parent id, depth), start/end by instance id across
// threads (an end may be drained before its start), attaches payloads and
// emits marks, launches, graph-node snapshots and thread names. A pure
// function of the event sequence, so it is tested without threads or files.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/capture/event.h"
#include "libtracer/core/records.h"

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
          r.end_ns = e.time;
          out_->Range(r);
          ts.open.pop_back();
          return;
        }
      } else if (e.type == EventType::kPush && (e.flags & kEventHasPayload) == 0) {
        // Built here and copied in (a few vector stores): emplace_back()
        // zeroes the slot first with `rep stos`, which alone cost several
        // ns a range.
        RangeRecord r;
        r.id = e.a;
        r.parent_id = ts.open.empty() ? 0 : ts.open.back().id;
        r.depth = static_cast<uint32_t>(ts.open.size());
        r.thread = thread;
        r.name = e.name;
        r.domain = e.domain;
        r.category = static_cast<uint32_t>(e.b);
        r.color = static_cast<uint32_t>(e.b >> 32);
        r.start_ns = e.time;
        r.kind = RangeKind::kPushPop;
        ts.open.push_back(r);
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
  struct ThreadStack {
    std::vector<RangeRecord> open;  // push/pop ranges, innermost last
    Event held{};                   // an event waiting for its kPayload
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
  static RangeRecord OpenedRange(uint32_t thread, const ThreadStack& ts, const Event& e,
                                 const Event* payload, RangeKind kind);

  Output* out_;
  std::unordered_map<uint32_t, ThreadStack> threads_;  // node-based: pointers stay valid
  uint32_t last_thread_ = 0;
  ThreadStack* last_stack_ = nullptr;
  std::unordered_map<uint64_t, RangeRecord> open_starts_;
  std::unordered_map<uint64_t, PendingEnd> early_ends_;  // end drained before its start
};

}  // namespace tracer
