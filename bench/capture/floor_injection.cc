// The floor of docs/design.md section 7: the least any NVTX tool can do for a
// push+pop, i.e. read the (same) trace clock twice and store to a
// thread-local ring. The read is NowTicks, as in the tracer: a bare rdtsc
// where the TSC is used (no conversion to ns on either side). Same clock means the same source too:
// it chooses it from TRACER_CLOCK as the tracer does (the TSC on this kind of machine), so the
// ratio never credits or charges the tracer for its clock. Built as an NVTX injection library so it
// is called exactly like libtracer.so. For a like-for-like memory footprint its slots are 32 bytes
// (the tracer's Event size) and its ring has the tracer's TRACER_BUFFER_SIZE bytes, so the ratio
// measures the tracer's logic, not cache effects of different ring sizes.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "libtracer/core/clock.h"

namespace {

struct alignas(32) Slot {
  uint64_t time;
  uint64_t what;
  uint64_t pad[2];
};
struct Ring {
  uint64_t mask;
  uint64_t next;
  Slot* slots;
};

uint64_t RingSlots() {
  const char* v = getenv("TRACER_BUFFER_SIZE");
  uint64_t bytes = 1 << 20;
  if (v && *v) {
    char* end = nullptr;
    bytes = strtoull(v, &end, 10);
    if (*end == 'K' || *end == 'k') bytes <<= 10;
    if (*end == 'M' || *end == 'm') bytes <<= 20;
  }
  uint64_t n = 16;
  while (n * 2 * sizeof(Slot) <= bytes) n *= 2;
  return n;
}

__attribute__((tls_model("initial-exec"))) thread_local Ring* t_ring = nullptr;

__attribute__((noinline)) Ring* NewRing() {
  uint64_t n = RingSlots();
  // Leaked: a benchmark process. Not value-initialised: like the tracer's
  // rings, its pages become resident as they are first written.
  auto* r = new Ring{n - 1, 0, new Slot[n]};
  // NVTX_FLOOR_PREFAULT=1 (--prefault-floor): touched now, so the floor's
  // push+pop pays no page faults at all; without it the floor faults once per
  // 128 slots inline, while the tracer's writer thread faults its rings in
  // ahead of the producers (MADV_POPULATE_WRITE) when it has a core to run
  // on. The two settings bracket the like-for-like floor.
  const char* prefault = getenv("NVTX_FLOOR_PREFAULT");
  if (prefault && prefault[0] == '1') {
    for (uint64_t i = 0; i < n; i += 4096 / sizeof(Slot)) r->slots[i].time = 0;
  }
  t_ring = r;
  return r;
}

inline void Store(uint64_t what) {
  Ring* r = t_ring;
  if (__builtin_expect(r == nullptr, 0)) r = NewRing();
  // The tracer's hot-path read: raw TSC ticks (converted to ns by its
  // writer, off the measured path), or clock_gettime ns without the TSC.
  uint64_t t = tracer::NowTicks();
  // Field by field into the slot (as the tracer does): no staging copy.
  Slot* slot = &r->slots[r->next++ & r->mask];
  slot->time = t;
  slot->what = what;
  slot->pad[0] = 0;
  slot->pad[1] = 0;
}

int NVTX_API PushA(const char* message) {
  Store(reinterpret_cast<uintptr_t>(message));
  return 0;
}
int NVTX_API Pop() {
  Store(0);
  return 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* mode = getenv("TRACER_CLOCK");
  std::string note;
  tracer::InitTraceClock(mode && !strcmp(mode, "monotonic") ? tracer::ClockMode::kMonotonic
                         : mode && !strcmp(mode, "tsc")     ? tracer::ClockMode::kTsc
                                                            : tracer::ClockMode::kAuto,
                         &note);
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!cb) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) || !core) return 0;
  *core[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&PushA);
  *core[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&Pop);
  return 1;
}
