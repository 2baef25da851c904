#include "libtracer/capture/event_decoder.h"

#include <cstddef>

namespace tracer {

void EventDecoder::SetPayload(PayloadValue* p, const Event* payload) {
  if (!payload) return;
  auto type = static_cast<PayloadValue::Type>(payload->flags);
  if (type > PayloadValue::Type::kF64) return;
  p->type = type;
  p->u64 = payload->a;  // the union's bits, whatever the type
}

void EventDecoder::ConsumeSlow(uint32_t thread, ThreadStack& ts, const Event& e) {
  if (ts.has_held) {
    ts.has_held = false;
    if (e.type == EventType::kPayload) {
      Process(thread, ts, ts.held, &e);
      return;
    }
    out_->Count("nvtx_payload_missing", 1);
    Process(thread, ts, ts.held, nullptr);
  }
  bool wants_payload =
      e.type == EventType::kGraphNode ||
      ((e.type == EventType::kPush || e.type == EventType::kStart || e.type == EventType::kMark) &&
       (e.flags & kEventHasPayload));
  if (wants_payload) {
    ts.held = e;
    ts.has_held = true;
    return;
  }
  if (e.type == EventType::kPayload) {
    out_->Count("nvtx_payload_orphan", 1);
    return;
  }
  Process(thread, ts, e, nullptr);
}

RangeRecord EventDecoder::OpenedRange(uint32_t thread, const ThreadStack& ts, const Event& e,
                                      const Event* payload, RangeKind kind) {
  RangeRecord r;
  r.id = e.a;
  r.parent_id = ts.open.empty() ? 0 : ts.open.back().id;
  r.depth = static_cast<uint32_t>(ts.open.size());
  r.thread = thread;
  r.name = e.name;
  r.domain = e.domain;
  r.category = static_cast<uint32_t>(e.b);
  r.color = static_cast<uint32_t>(e.b >> 32);
  r.start_ns = ticks_.ToNs(e.time);
  r.kind = kind;
  SetPayload(&r.payload, payload);
  return r;
}

void EventDecoder::Process(uint32_t thread, ThreadStack& ts, const Event& e, const Event* payload) {
  switch (e.type) {
    case EventType::kPush: {
      RangeRecord r = OpenedRange(thread, ts, e, payload, RangeKind::kPushPop);
      ts.open.push_back(r);
      break;
    }
    case EventType::kPop: {
      // Usually the innermost; a domain's pop may close a range below others
      // of different domains (each NVTX domain has its own stack).
      for (size_t i = ts.open.size(); i-- > 0;) {
        if (ts.open[i].id == e.a) {
          RangeRecord r = ts.open[i];
          r.end_ns = ticks_.ToNs(e.time);
          ts.open.erase(i);
          out_->Range(r);
          return;
        }
      }
      out_->Count("nvtx_pop_unmatched", 1);
      break;
    }
    case EventType::kStart: {
      RangeRecord r = OpenedRange(thread, ts, e, payload, RangeKind::kStartEnd);
      auto early = early_ends_.find(r.id);
      if (early != early_ends_.end()) {
        r.end_ns = early->second.time;
        r.end_thread = early->second.thread;
        early_ends_.erase(early);
        out_->Range(r);
      } else {
        open_starts_[r.id] = r;
      }
      break;
    }
    case EventType::kEnd: {
      auto it = open_starts_.find(e.a);
      if (it != open_starts_.end()) {
        RangeRecord r = it->second;
        open_starts_.erase(it);
        r.end_ns = ticks_.ToNs(e.time);
        r.end_thread = thread;
        out_->Range(r);
      } else if (early_ends_.size() < kMaxEarlyEnds) {
        early_ends_[e.a] = PendingEnd{ticks_.ToNs(e.time), thread};
      } else {
        // Ends of ids no start will match (made up by the application) must
        // not grow memory without bound.
        out_->Count("nvtx_end_without_start", 1);
      }
      break;
    }
    case EventType::kMark: {
      MarkRecord m;
      m.time_ns = ticks_.ToNs(e.time);
      m.thread = thread;
      m.name = e.name;
      m.domain = e.domain;
      m.category = static_cast<uint32_t>(e.b);
      m.color = static_cast<uint32_t>(e.b >> 32);
      SetPayload(&m.payload, payload);
      out_->Mark(m);
      break;
    }
    case EventType::kLaunch: {
      LaunchRecord l;
      l.correlation_id = e.a;
      l.time_ns = ticks_.ToNs(e.time);
      l.thread = thread;
      l.range_id = e.b;
      l.cbid = e.name;
      l.domain = static_cast<ApiDomain>(e.flags);
      out_->Launch(l);
      break;
    }
    case EventType::kGraphNode: {
      GraphNodeSnapshotRecord g;
      g.graph_id = e.a;
      g.graph_node_id = payload ? payload->a : 0;
      g.range_id = e.b;
      g.thread = thread;
      g.time_ns = ticks_.ToNs(e.time);
      out_->GraphNode(g);
      break;
    }
    case EventType::kThreadName:
      out_->ThreadName(thread, e.name);
      break;
    case EventType::kPayload:
    case EventType::kNone:
      out_->Count("nvtx_event_invalid", 1);
      break;
  }
}

uint64_t EventDecoder::Finish(uint64_t end_ns) {
  uint64_t unclosed = 0;
  for (auto& [thread, ts] : threads_) {
    if (ts.has_held) {
      ts.has_held = false;
      Process(thread, ts, ts.held, nullptr);
    }
  }
  for (auto& [thread, ts] : threads_) {
    // Innermost first, so every child precedes its parent as for real pops.
    while (!ts.open.empty()) {
      RangeRecord r = ts.open.back();
      ts.open.pop_back();
      r.end_ns = end_ns > r.start_ns ? end_ns : r.start_ns;
      r.flags |= kRangeFlagUnclosed;
      out_->Range(r);
      ++unclosed;
    }
  }
  for (auto& [id, r0] : open_starts_) {
    RangeRecord r = r0;
    r.end_ns = end_ns > r.start_ns ? end_ns : r.start_ns;
    r.flags |= kRangeFlagUnclosed;
    out_->Range(r);
    ++unclosed;
  }
  open_starts_.clear();
  if (!early_ends_.empty()) out_->Count("nvtx_end_without_start", early_ends_.size());
  early_ends_.clear();
  return unclosed;
}

void EventDecoder::ThreadExited(uint32_t thread) {
  auto it = threads_.find(thread);
  if (it == threads_.end() || !it->second.open.empty() || it->second.has_held) return;
  if (last_stack_ == &it->second) last_stack_ = nullptr;
  threads_.erase(it);
}

size_t EventDecoder::open_ranges() const {
  size_t n = open_starts_.size();
  for (const auto& [thread, ts] : threads_) n += ts.open.size();
  return n;
}

}  // namespace tracer
