// Calls the host made with values the tracer never handed out (a registered-
// string handle, a range id or a domain handle that is not one of ours). They are ignored or
// recorded without the bad value, never trusted, and counted here; the writer
// reports the counts in the trace (footer and counter deltas). Process-wide
// atomics: misuse is rare, so a shared counter costs nothing on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

namespace tracer {

struct MisuseCounters {
  // nvtxEventAttributes_t::message.registered that is no string id of ours:
  // the event is recorded with the empty name.
  std::atomic<uint64_t> invalid_string_handle{0};
  // nvtxRangeEnd / nvtxDomainRangeEnd with an id no start returned (or one
  // ended twice, for a capture-range instance): the call is ignored.
  std::atomic<uint64_t> invalid_range_id{0};
  // A call with an nvtxDomainHandle_t the tracer never handed out (made up,
  // another tool's, or destroyed): never dereferenced; the call is dropped.
  std::atomic<uint64_t> invalid_domain_handle{0};
};

// Constant-initialised, trivially destroyed: usable from any exit path.
inline constinit MisuseCounters g_misuse_counters;
inline MisuseCounters& GlobalMisuse() noexcept { return g_misuse_counters; }

}  // namespace tracer
