#include "libtracer/capture/event_decoder.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/capture/unit/make_event.h"

namespace tracer {
namespace {

using testing::MakeEvent;

// Collects what the decoder emits, standing in for the writer.
struct Collector : EventDecoder::Output {
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  std::vector<LaunchRecord> launches;
  std::vector<GraphNodeSnapshotRecord> graph_nodes;
  std::map<uint32_t, uint32_t> thread_names;
  std::map<std::string, uint64_t> counts;
  void Range(const RangeRecord& r) override { ranges.push_back(r); }
  void Mark(const MarkRecord& r) override { marks.push_back(r); }
  void Launch(const LaunchRecord& r) override { launches.push_back(r); }
  void GraphNode(const GraphNodeSnapshotRecord& r) override { graph_nodes.push_back(r); }
  void ThreadName(uint32_t t, uint32_t n) override { thread_names[t] = n; }
  void Count(std::string_view c, uint64_t d) override { counts[std::string(c)] += d; }
  const RangeRecord* Find(uint64_t id) const {
    for (const auto& r : ranges) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }
};

Event Payload(PayloadValue::Type type, uint64_t bits) {
  Event e;
  e.type = EventType::kPayload;
  e.flags = static_cast<uint8_t>(type);
  e.a = bits;
  return e;
}

TEST(EventDecoderTest, PairsPushPopWithParentsAndDepth) {
  Collector out;
  EventDecoder d(&out);
  d.Consume(1, MakeEvent(EventType::kPush, 10, 100, 1, 7 | (0xFF112233ull << 32)));
  d.Consume(1, MakeEvent(EventType::kPush, 20, 101, 2));
  d.Consume(1, MakeEvent(EventType::kPush, 30, 102, 3));
  d.Consume(1, MakeEvent(EventType::kPop, 40, 102));
  d.Consume(1, MakeEvent(EventType::kPop, 50, 101));
  d.Consume(1, MakeEvent(EventType::kPush, 60, 103, 2));
  d.Consume(1, MakeEvent(EventType::kPop, 70, 103));
  d.Consume(1, MakeEvent(EventType::kPop, 80, 100));
  ASSERT_EQ(out.ranges.size(), 4u);
  const RangeRecord* outer = out.Find(100);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->parent_id, 0u);
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(outer->start_ns, 10u);
  EXPECT_EQ(outer->end_ns, 80u);
  EXPECT_EQ(outer->category, 7u);
  EXPECT_EQ(outer->color, 0xFF112233u);
  EXPECT_EQ(out.Find(101)->parent_id, 100u);
  EXPECT_EQ(out.Find(101)->depth, 1u);
  EXPECT_EQ(out.Find(102)->parent_id, 101u);
  EXPECT_EQ(out.Find(102)->depth, 2u);
  EXPECT_EQ(out.Find(103)->parent_id, 100u);
  EXPECT_EQ(out.Find(103)->depth, 1u);
  EXPECT_EQ(d.Finish(100), 0u);
}

TEST(EventDecoderTest, ThreadsHaveSeparateStacks) {
  Collector out;
  EventDecoder d(&out);
  d.Consume(1, MakeEvent(EventType::kPush, 1, 10, 1));
  d.Consume(2, MakeEvent(EventType::kPush, 2, 20, 1));
  d.Consume(2, MakeEvent(EventType::kPush, 3, 21, 2));
  d.Consume(1, MakeEvent(EventType::kPop, 4, 10));
  d.Consume(2, MakeEvent(EventType::kPop, 5, 21));
  d.Consume(2, MakeEvent(EventType::kPop, 6, 20));
  ASSERT_EQ(out.ranges.size(), 3u);
  EXPECT_EQ(out.Find(21)->parent_id, 20u);
  EXPECT_EQ(out.Find(21)->thread, 2u);
  EXPECT_EQ(out.Find(10)->thread, 1u);
}

TEST(EventDecoderTest, StartEndAcrossThreadsInEitherDrainOrder) {
  Collector out;
  EventDecoder d(&out);
  // Drained in order: start, then end on another thread.
  d.Consume(1, MakeEvent(EventType::kStart, 10, 500, 9));
  d.Consume(2, MakeEvent(EventType::kEnd, 30, 500));
  // The end's thread drained before the start's thread.
  d.Consume(3, MakeEvent(EventType::kEnd, 60, 501));
  EXPECT_EQ(out.ranges.size(), 1u);
  d.Consume(1, MakeEvent(EventType::kStart, 40, 501, 9));
  ASSERT_EQ(out.ranges.size(), 2u);
  for (uint64_t id : {500u, 501u}) {
    const RangeRecord* r = out.Find(id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->kind, RangeKind::kStartEnd);
    EXPECT_EQ(r->thread, 1u);
    EXPECT_GT(r->end_ns, r->start_ns);
  }
  EXPECT_EQ(out.Find(500)->end_thread, 2u);
  EXPECT_EQ(out.Find(501)->end_thread, 3u);
  EXPECT_EQ(out.Find(501)->end_ns, 60u);
}

TEST(EventDecoderTest, PayloadsAttachToPushStartAndMark) {
  Collector out;
  EventDecoder d(&out);
  Event push = MakeEvent(EventType::kPush, 1, 10, 1);
  push.flags = kEventHasPayload;
  d.Consume(1, push);
  d.Consume(1, Payload(PayloadValue::Type::kI64, static_cast<uint64_t>(-5)));
  Event mark = MakeEvent(EventType::kMark, 2, 0, 3, 4);
  mark.flags = kEventHasPayload;
  d.Consume(1, mark);
  double v = 2.5;
  uint64_t bits;
  memcpy(&bits, &v, 8);
  d.Consume(1, Payload(PayloadValue::Type::kF64, bits));
  d.Consume(1, MakeEvent(EventType::kPop, 3, 10));
  Event start = MakeEvent(EventType::kStart, 4, 11, 2);
  start.flags = kEventHasPayload;
  d.Consume(2, start);
  d.Consume(2, Payload(PayloadValue::Type::kU64, 77));
  d.Consume(2, MakeEvent(EventType::kEnd, 5, 11));
  ASSERT_EQ(out.ranges.size(), 2u);
  EXPECT_EQ(out.Find(10)->payload.type, PayloadValue::Type::kI64);
  EXPECT_EQ(out.Find(10)->payload.i64, -5);
  EXPECT_EQ(out.Find(11)->payload.type, PayloadValue::Type::kU64);
  EXPECT_EQ(out.Find(11)->payload.u64, 77u);
  ASSERT_EQ(out.marks.size(), 1u);
  EXPECT_EQ(out.marks[0].payload.type, PayloadValue::Type::kF64);
  EXPECT_EQ(out.marks[0].payload.f64, 2.5);
  EXPECT_EQ(out.marks[0].category, 4u);
  EXPECT_TRUE(out.counts.empty());
}

TEST(EventDecoderTest, LaunchesGraphNodesAndThreadNames) {
  Collector out;
  EventDecoder d(&out);
  Event launch = MakeEvent(EventType::kLaunch, 7, 1234, 211, 99);
  launch.flags = static_cast<uint8_t>(ApiDomain::kDriver);
  d.Consume(4, launch);
  d.Consume(4, MakeEvent(EventType::kGraphNode, 8, 55, 0, 99));
  d.Consume(4, Payload(PayloadValue::Type::kU64, 66));
  d.Consume(4, MakeEvent(EventType::kGraphNode, 9, 56, 0, 98));  // its payload never comes
  d.Consume(4, MakeEvent(EventType::kThreadName, 10, 0, 42));
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].correlation_id, 1234u);
  EXPECT_EQ(out.launches[0].range_id, 99u);
  EXPECT_EQ(out.launches[0].cbid, 211u);
  EXPECT_EQ(out.launches[0].thread, 4u);
  EXPECT_EQ(out.launches[0].domain, ApiDomain::kDriver);
  ASSERT_EQ(out.graph_nodes.size(), 2u);
  EXPECT_EQ(out.graph_nodes[0].graph_id, 55u);
  EXPECT_EQ(out.graph_nodes[0].graph_node_id, 66u);
  EXPECT_EQ(out.graph_nodes[0].range_id, 99u);
  EXPECT_EQ(out.graph_nodes[1].graph_node_id, 0u);
  EXPECT_EQ(out.counts["nvtx_payload_missing"], 1u);
  EXPECT_EQ(out.thread_names[4], 42u);
}

TEST(EventDecoderTest, FinishClosesOpenRangesAsUnclosed) {
  Collector out;
  EventDecoder d(&out);
  d.Consume(1, MakeEvent(EventType::kPush, 10, 1, 1));
  d.Consume(1, MakeEvent(EventType::kPush, 20, 2, 2));
  d.Consume(2, MakeEvent(EventType::kStart, 30, 3, 3));
  d.Consume(2, MakeEvent(EventType::kEnd, 40, 999));  // never started
  d.Consume(1, MakeEvent(EventType::kPop, 50, 77));   // unknown id
  EXPECT_EQ(d.open_ranges(), 3u);
  EXPECT_EQ(d.Finish(100), 3u);
  ASSERT_EQ(out.ranges.size(), 3u);
  EXPECT_EQ(out.ranges[0].id, 2u);  // innermost first
  for (const auto& r : out.ranges) {
    EXPECT_EQ(r.flags & kRangeFlagUnclosed, kRangeFlagUnclosed);
    EXPECT_EQ(r.end_ns, 100u);
  }
  EXPECT_EQ(out.Find(2)->parent_id, 1u);
  EXPECT_EQ(out.counts["nvtx_end_without_start"], 1u);
  EXPECT_EQ(out.counts["nvtx_pop_unmatched"], 1u);
  EXPECT_EQ(d.open_ranges(), 0u);
}

TEST(EventDecoderTest, DomainPopBelowOtherDomainsRange) {
  Collector out;
  EventDecoder d(&out);
  d.Consume(1, MakeEvent(EventType::kPush, 1, 1, 1));
  d.Consume(1, MakeEvent(EventType::kPush, 2, 2, 2));
  d.Consume(1, MakeEvent(EventType::kPop, 3, 1));  // closes the outer one (other domain)
  d.Consume(1, MakeEvent(EventType::kPop, 4, 2));
  ASSERT_EQ(out.ranges.size(), 2u);
  EXPECT_EQ(out.Find(1)->end_ns, 3u);
  EXPECT_EQ(out.Find(2)->end_ns, 4u);
  EXPECT_TRUE(out.counts.empty());
}

// The inline push/pop path fills stack slots in place, reusing slots of
// ranges already closed: nothing of a closed range (payload, flags, end,
// category, color, domain) may show through in the next range pushed into
// its slot, and every field of the event must come through.
TEST(EventDecoderTest, ReusedStackSlotsCarryNothingOver) {
  Collector out;
  EventDecoder d(&out);
  // Slot 0 holds a range with a payload, category, color and domain; the
  // range in slot 1 is closed by a pop below the top (erased).
  Event rich[2] = {
      MakeEvent(EventType::kPush, 10, 1, 5, 9 | (0xAABBCCDDull << 32), 3, kEventHasPayload),
      Payload(PayloadValue::Type::kF64, 0x400921FB54442D18ull)};
  d.Consume(1, rich[0]);
  d.Consume(1, rich[1]);
  d.Consume(1, MakeEvent(EventType::kPush, 20, 2, 6, 0, 4));
  d.Consume(1, MakeEvent(EventType::kPush, 25, 3, 7));
  d.Consume(1, MakeEvent(EventType::kPop, 30, 2, 0, 0, 4));  // below the top: erased
  d.Consume(1, MakeEvent(EventType::kPop, 35, 3));
  d.Consume(1, MakeEvent(EventType::kPop, 40, 1, 0, 0, 3));
  ASSERT_EQ(out.ranges.size(), 3u);
  // The same slots again, plain pushes.
  d.Consume(1, MakeEvent(EventType::kPush, 50, 4, 8));
  d.Consume(1, MakeEvent(EventType::kPush, 60, 5, 9, 0, 0));
  d.Consume(1, MakeEvent(EventType::kPop, 70, 5));
  d.Consume(1, MakeEvent(EventType::kPop, 80, 4));
  ASSERT_EQ(out.ranges.size(), 5u);
  const RangeRecord* first = out.Find(1);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->payload.type, PayloadValue::Type::kF64);
  EXPECT_EQ(first->payload.u64, 0x400921FB54442D18ull);
  EXPECT_EQ(first->category, 9u);
  EXPECT_EQ(first->color, 0xAABBCCDDu);
  EXPECT_EQ(first->domain, 3u);
  const RangeRecord* third = out.Find(3);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->parent_id, 2u);  // pushed while 2 was open
  EXPECT_EQ(third->depth, 2u);
  EXPECT_EQ(third->start_ns, 25u);
  EXPECT_EQ(third->end_ns, 35u);
  for (uint64_t id : {4, 5}) {
    const RangeRecord* r = out.Find(id);
    ASSERT_NE(r, nullptr) << id;
    EXPECT_EQ(r->payload.type, PayloadValue::Type::kNone) << id;
    EXPECT_EQ(r->payload.u64, 0u) << id;
    EXPECT_EQ(r->category, 0u) << id;
    EXPECT_EQ(r->color, 0u) << id;
    EXPECT_EQ(r->domain, 0u) << id;
    EXPECT_EQ(r->flags, 0u) << id;
    EXPECT_EQ(r->end_thread, 0u) << id;
    EXPECT_EQ(r->raw_name, 0u) << id;
    EXPECT_EQ(r->kind, RangeKind::kPushPop) << id;
    EXPECT_EQ(r->thread, 1u) << id;
  }
  EXPECT_EQ(out.Find(4)->parent_id, 0u);
  EXPECT_EQ(out.Find(4)->depth, 0u);
  EXPECT_EQ(out.Find(4)->name, 8u);
  EXPECT_EQ(out.Find(4)->start_ns, 50u);
  EXPECT_EQ(out.Find(4)->end_ns, 80u);
  EXPECT_EQ(out.Find(5)->parent_id, 4u);
  EXPECT_EQ(out.Find(5)->depth, 1u);
  EXPECT_EQ(out.Find(5)->name, 9u);
  EXPECT_EQ(out.Find(5)->start_ns, 60u);
  EXPECT_EQ(out.Find(5)->end_ns, 70u);
  EXPECT_EQ(d.open_ranges(), 0u);
}

// Deep stacks grow past their first storage: parents and depths stay right,
// and ranges left open come out innermost first as unclosed at Finish.
TEST(EventDecoderTest, DeepStacksKeepParentsAndCloseInnermostFirst) {
  Collector out;
  EventDecoder d(&out);
  constexpr uint64_t kDepth = 300;
  for (uint64_t i = 1; i <= kDepth; ++i) d.Consume(2, MakeEvent(EventType::kPush, i, i, 1));
  for (uint64_t i = kDepth; i > kDepth / 2; --i) {
    d.Consume(2, MakeEvent(EventType::kPop, 1000 + i, i));
  }
  ASSERT_EQ(out.ranges.size(), kDepth / 2);
  for (const RangeRecord& r : out.ranges) {
    EXPECT_EQ(r.depth, r.id - 1);
    EXPECT_EQ(r.parent_id, r.id - 1);
    EXPECT_EQ(r.end_ns, 1000 + r.id);
    EXPECT_EQ(r.flags, 0u);
  }
  EXPECT_EQ(d.Finish(5000), kDepth / 2);
  ASSERT_EQ(out.ranges.size(), kDepth);
  for (size_t k = kDepth / 2; k < kDepth; ++k) {
    const RangeRecord& r = out.ranges[k];
    EXPECT_EQ(r.id, kDepth - k) << k;  // innermost first
    EXPECT_EQ(r.end_ns, 5000u);
    EXPECT_EQ(r.flags, kRangeFlagUnclosed);
    EXPECT_EQ(r.parent_id, r.id - 1);
  }
}

// Event times are clock ticks; records get ns through the decoder's tick map,
// piece by piece: a range that opened before a re-calibration and closed
// after it converts each end with the piece in force when it was read, and
// every kind of event (marks, launches, graph nodes, early ends) is
// converted, on the fast path and the general one alike.
TEST(EventDecoderTest, ConvertsTicksToNsAcrossARecalibration) {
  Collector out;
  EventDecoder d(&out);
  // 0.5 ns a tick from tick 1,000 (ns 10,000), then from tick 3,000 a
  // re-calibrated rate of 0.25 ns a tick, continuing where the first ends
  // (ns 11,000).
  d.tick_map()->Add(ClockPiece{1000, 10000, uint64_t{1} << 31});
  d.tick_map()->Add(ClockPiece{3000, 11000, uint64_t{1} << 30});
  d.Consume(1, MakeEvent(EventType::kPush, 2000, 100, 1));  // fast path
  d.Consume(1, MakeEvent(EventType::kMark, 2200, 0, 2));
  d.Consume(1, MakeEvent(EventType::kPop, 3400, 100));  // after the re-calibration
  d.Consume(2, MakeEvent(EventType::kPush, 2600, 200, 1, 0, 0, kEventHasPayload));  // slow path
  d.Consume(2, Payload(PayloadValue::Type::kU64, 5));
  d.Consume(2, MakeEvent(EventType::kLaunch, 2800, 77, 3, 200));
  d.Consume(2, MakeEvent(EventType::kPop, 5000, 200));
  d.Consume(3, MakeEvent(EventType::kEnd, 4000, 300));      // drained before its start
  d.Consume(3, MakeEvent(EventType::kStart, 900, 300, 4));  // before the first piece
  ASSERT_EQ(out.ranges.size(), 3u);
  EXPECT_EQ(out.Find(100)->start_ns, 10500u);
  EXPECT_EQ(out.Find(100)->end_ns, 11100u);
  EXPECT_EQ(out.Find(200)->start_ns, 10800u);
  EXPECT_EQ(out.Find(200)->end_ns, 11500u);
  EXPECT_EQ(out.Find(300)->start_ns, 9950u);  // the oldest piece, extended back
  EXPECT_EQ(out.Find(300)->end_ns, 11250u);
  ASSERT_EQ(out.marks.size(), 1u);
  EXPECT_EQ(out.marks[0].time_ns, 10600u);
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].time_ns, 10900u);
}

// With no calibration (the clock_gettime fallback, TRACER_CLOCK=monotonic)
// ticks are ns already.
TEST(EventDecoderTest, TicksAreNsWithAnEmptyTickMap) {
  Collector out;
  EventDecoder d(&out);
  EXPECT_TRUE(d.tick_map()->identity());
  d.Consume(1, MakeEvent(EventType::kPush, 123456789, 100, 1));
  d.Consume(1, MakeEvent(EventType::kPop, 123456999, 100));
  ASSERT_EQ(out.ranges.size(), 1u);
  EXPECT_EQ(out.ranges[0].start_ns, 123456789u);
  EXPECT_EQ(out.ranges[0].end_ns, 123456999u);
}

}  // namespace
}  // namespace tracer
