// The tracer's part of the launch path (docs/design.md section 7: under 50 ns):
// the CUPTI ENTER callback of a launch-type call, which reads the calling
// thread's state and appends one 32-byte kLaunch event to its ring. Measured
// through a function pointer as CUPTI calls it, against, in the same run:
//  - an empty callback (the call itself), and
//  - the floor: a callback that reads a thread-local, reads the clock once
//    and stores 32 bytes to a thread-local array.
// The ring is drained (Session::Flush) between batches, outside the timing.
//
// usage: cupti_launch_bench [--quick]
#include <cupti.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "libtracer/capture/config.h"
#include "libtracer/capture/cupti_adapter.h"
#include "libtracer/capture/event.h"
#include "libtracer/capture/session.h"
#include "libtracer/core/clock.h"

namespace {

using Clock = std::chrono::steady_clock;

void CUPTIAPI EmptyCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* d) {
  asm volatile("" : : "r"(d) : "memory");
}

struct FloorRing {
  tracer::Event events[4096];
  uint32_t next = 0;
};
thread_local FloorRing* floor_ring = nullptr;

void CUPTIAPI FloorCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  FloorRing* r = floor_ring;
  if (r == nullptr) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  tracer::Event& e = r->events[r->next++ & 4095];
  e.type = tracer::EventType::kLaunch;
  e.name = cbid;
  e.time = tracer::NowTicks();  // the read the tracer makes (raw ticks)
  e.a = d->correlationId;
  e.b = 0;
}

double NsPerCall(CUpti_CallbackFunc fn_arg, void* userdata, int batches, int batch,
                 tracer::Session* session) {
  // Through a volatile pointer, as CUPTI calls it: no inlining.
  CUpti_CallbackFunc volatile fn = fn_arg;
  CUpti_CallbackData d;
  std::memset(&d, 0, sizeof(d));
  d.callbackSite = CUPTI_API_ENTER;
  double best = 1e9;
  for (int b = 0; b < batches; ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) {
      d.correlationId = static_cast<uint32_t>(i + 1);
      fn(userdata, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
         &d);
    }
    auto t1 = Clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
    if (session != nullptr) session->Flush();  // empty the ring, untimed
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::string out = "/tmp/cupti_launch_bench_" + std::to_string(getpid()) + ".trace";
  setenv("TRACER_OUTPUT", out.c_str(), 1);
  setenv("TRACER_LOG_LEVEL", "error", 1);
  tracer::Session* session = tracer::Session::EnsureStarted();
  if (session == nullptr) {
    std::fprintf(stderr, "cupti_launch_bench: no tracing session\n");
    return 1;
  }
  // The launch path never calls CUPTI, so no CuptiApi is needed here.
  tracer::CuptiAdapter::Options options;
  options.activities = tracer::kActivityKernel;
  options.session_window = &session->window();
  tracer::CuptiAdapter adapter(nullptr, options);

  FloorRing ring;
  floor_ring = &ring;
  const int batches = quick ? 3 : 200, batch = 8192;  // 8192 x 32 B fits a 1 MiB ring
  // Warm up every path (thread state creation, page faults).
  NsPerCall(&tracer::CuptiAdapter::OnCallback, &adapter, 2, batch, session);
  NsPerCall(&FloorCallback, nullptr, 2, batch, nullptr);
  const double empty = NsPerCall(&EmptyCallback, nullptr, batches, batch, nullptr);
  const double floor = NsPerCall(&FloorCallback, nullptr, batches, batch, nullptr);
  const double ours =
      NsPerCall(&tracer::CuptiAdapter::OnCallback, &adapter, batches, batch, session);
  std::printf("launch callback (ENTER of __cudaLaunchKernel, best batch of %d):\n", batch);
  std::printf("  empty callback:                         %6.1f ns\n", empty);
  std::printf("  floor (TLS read + clock + 32 B store):  %6.1f ns\n", floor);
  std::printf(
      "  tracer's launch callback:               %6.1f ns  (our part %.1f ns, target < 50)\n", ours,
      ours - empty);
  std::printf("  ratio tracer / floor: %.2fx\n", ours / floor);
  tracer::Session::ShutdownProcess();
  unlink(out.c_str());
  return 0;
}
