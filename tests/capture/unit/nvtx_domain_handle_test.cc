// Domain handles (nvtx_domain_handle.h): only values the tracer handed out,
// for a domain that is not destroyed, map back to a domain; anything else a
// host may pass (a real pointer, a made-up number, a tagged id never given)
// maps to nullptr without being read through.
#include "libtracer/capture/nvtx_domain_handle.h"

#include <gtest/gtest.h>

#include <memory>

namespace tracer {
namespace {

TEST(NvtxDomainHandle, HandedOutHandlesMapBackToTheirDomain) {
  Definitions defs;
  NvtxDomain* a = defs.CreateDomain(11, true);
  NvtxDomain* b = defs.CreateDomain(12, false);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(DomainFromHandleValue(defs, DomainHandleValue(a->id)), a);
  EXPECT_EQ(DomainFromHandleValue(defs, DomainHandleValue(b->id)), b);
}

TEST(NvtxDomainHandle, ValuesNeverHandedOutMapToNothing) {
  Definitions defs;
  NvtxDomain* a = defs.CreateDomain(11, true);
  auto other = std::make_unique<NvtxDomain>();  // a real pointer, not a handle
  for (uint64_t v :
       {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeef}, ~uint64_t{0}, reinterpret_cast<uint64_t>(a),
        reinterpret_cast<uint64_t>(other.get()), DomainHandleValue(0), DomainHandleValue(a->id + 1),
        DomainHandleValue(0xFFFF), DomainHandleValue(a->id) | (uint64_t{1} << 32)}) {
    EXPECT_EQ(DomainFromHandleValue(defs, v), nullptr) << std::hex << v;
  }
}

TEST(NvtxDomainHandle, DestroyedDomainMapsToNothingUntilCreatedAgain) {
  Definitions defs;
  NvtxDomain* a = defs.CreateDomain(11, true);
  const uint64_t handle = DomainHandleValue(a->id);
  a->destroyed.store(true);
  EXPECT_EQ(DomainFromHandleValue(defs, handle), nullptr);
  EXPECT_EQ(defs.CreateDomain(11, true), a);
  EXPECT_EQ(DomainFromHandleValue(defs, handle), a);
}

TEST(NvtxDomainHandle, IdsAcrossTableChunksAreFound) {
  Definitions defs;
  std::vector<NvtxDomain*> made;
  for (uint32_t name = 1; name <= 600; ++name) made.push_back(defs.CreateDomain(name, true));
  for (NvtxDomain* d : made) {
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(DomainFromHandleValue(defs, DomainHandleValue(d->id)), d);
  }
  EXPECT_EQ(DomainFromHandleValue(defs, DomainHandleValue(601)), nullptr);
}

}  // namespace
}  // namespace tracer
