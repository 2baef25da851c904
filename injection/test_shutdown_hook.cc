// TEST ONLY, built into libtracer_test.so alone (injection/CMakeLists.txt):
// lets a test client run code inside the session's shutdown, after the
// session stopped recording (its window closed) and before the writer's
// final drain, so a test can make sure something happens in that window
// (tests/capture/clients/churn_client.cc sigterm_exit: threads record while
// the process exits) instead of hoping the scheduler runs it there.
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/session.h"

#ifndef TRACER_TEST_HOOKS
#error "test_shutdown_hook.cc belongs to the test variant of the library only"
#endif

// fn runs on the thread that ends the session (exit(): the thread calling
// it). Returns 0 when registered, -1 when no session is running yet.
extern "C" __attribute__((visibility("default"))) int tracerTestAddShutdownHook(
    void (*fn)()) noexcept {
  return tracer::Guarded(
      "tracerTestAddShutdownHook", tracer::kNotTraced,
      [fn] {
        tracer::Session* s = tracer::Session::Instance();
        if (!s || !fn) return -1;
        s->AddShutdownHook([fn] { fn(); });
        return 0;
      },
      []() noexcept { return -1; });
}
