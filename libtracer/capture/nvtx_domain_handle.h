// The nvtxDomainHandle_t values the tracer hands out. Not pointers: the
// domain id in the low 16 bits under a fixed tag in the high 16, which makes
// a non-canonical address (x86-64, AArch64), so no real pointer (another
// tool's handle, a stale one from a heap) ever carries it. A handle is
// checked against the tag and looked up by id in Definitions::FindDomain;
// nothing the host passes is ever dereferenced.
#pragma once

#include <cstdint>

#include "libtracer/capture/definitions.h"

namespace tracer {

inline constexpr uint64_t kDomainHandleTag = 0x7d0e'0000'0000'0000ull;
inline constexpr uint64_t kDomainHandleIdMask = 0xFFFF;

inline constexpr uint64_t DomainHandleValue(uint16_t id) noexcept { return kDomainHandleTag | id; }

// The live domain behind a handle value, or nullptr when the value is not
// one the tracer handed out (or names a destroyed domain). 0 is not a
// handle here: callers map a null handle to the default domain first.
inline NvtxDomain* DomainFromHandleValue(Definitions& defs, uint64_t value) noexcept {
  if ((value & ~kDomainHandleIdMask) != kDomainHandleTag) return nullptr;
  NvtxDomain* d = defs.FindDomain(static_cast<uint16_t>(value & kDomainHandleIdMask));
  if (!d || d->destroyed.load(std::memory_order_relaxed)) return nullptr;
  return d;
}

}  // namespace tracer
