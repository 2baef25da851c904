// The packed POD event that application threads append to their own ring
// (capture/thread_ring.h) and the writer thread turns into stream records.
// Keep it 32 bytes: the hot path is one clock read (raw ticks, converted to
// ns by the writer) and one 32-byte store.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tracer {

enum class EventType : uint8_t {
  kNone = 0,
  kPush,        // name, domain, time, a = range instance id, b = category | color << 32
  kPop,         // domain, time, a = instance id of the range it closes
  kStart,       // name, domain, time, a = range instance id, b = category | color << 32
  kEnd,         // time, a = range instance id
  kMark,        // name, domain, time, b = category | color << 32
  kPayload,     // follows a kPush/kStart/kMark: flags = PayloadValue::Type, a = bits
  kLaunch,      // API enter of a launch-type call: time, name = cbid, flags = ApiDomain,
                // a = correlation id, b = innermost open range instance id (0 = none)
  kGraphNode,   // graph node created/graph launched: time, a = graph id,
                // b = range instance id; the next kPayload.a = graph node id
  kThreadName,  // name = string id of the thread's new name
};

// Event.flags of kPush / kStart / kMark: a kPayload event follows. kGraphNode
// always expects one (the graph node id); a missing one reads as node 0.
inline constexpr uint8_t kEventHasPayload = 1;

struct alignas(32) Event {
  EventType type = EventType::kNone;
  uint8_t flags = 0;
  uint16_t domain = 0;
  uint32_t name = 0;
  uint64_t time = 0;  // trace clock ticks (NowTicks, clock.h): ns once decoded
  uint64_t a = 0;
  uint64_t b = 0;
};
static_assert(sizeof(Event) == 32, "Event must stay one half cache line");

// An event's first eight bytes (type, flags, domain, name) in one store
// instead of four: the push+pop hot path writes two events per pair, the
// launch callback one.
inline __attribute__((always_inline)) void SetEventHead(Event* e, EventType type, uint16_t domain,
                                                        uint32_t name, uint8_t flags = 0) noexcept {
  static_assert(std::endian::native == std::endian::little);
  static_assert(offsetof(Event, type) == 0 && offsetof(Event, flags) == 1 &&
                offsetof(Event, domain) == 2 && offsetof(Event, name) == 4);
  const uint64_t head = static_cast<uint64_t>(type) | uint64_t{flags} << 8 |
                        uint64_t{domain} << 16 | uint64_t{name} << 32;
  __builtin_memcpy(static_cast<void*>(e), &head, 8);
}

}  // namespace tracer
