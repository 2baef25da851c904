#include "libtracer/capture/thread_state.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libtracer/capture/session.h"
#include "libtracer/capture/thread_registry.h"

namespace tracer {

ThreadState::ThreadState(uint32_t slot, uint32_t id, uint64_t ring_bytes, uint64_t os_tid,
                         uint64_t pthread_id, std::unique_ptr<InternCacheBlock> cache,
                         bool yield_when_nearly_full)
    : slot_(slot),
      id_(id),
      os_tid_(os_tid),
      pthread_id_(pthread_id),
      last_id_(static_cast<uint64_t>(slot) << 40),
      cache_(cache ? std::move(cache) : std::make_unique<InternCacheBlock>()),
      ring_(ring_bytes, yield_when_nearly_full) {}

void ThreadState::Reuse(uint32_t id, uint64_t os_tid, uint64_t pthread_id) noexcept {
  id_ = id;
  os_tid_ = os_tid;
  pthread_id_ = pthread_id;
  depth_ = 0;
  overflow_ = 0;
  reserved_pops_ = 0;
  UpdateFastPopDepth();
  counters_.Reset();
  ring_.Reset();
  exited.store(false, std::memory_order_relaxed);
}

int ThreadState::PushOverflow() noexcept {
  ++overflow_;
  UpdateFastPopDepth();
  ThreadCounters::Bump(counters_.stack_overflow);
  return -1;
}

const ThreadState::OpenRange* ThreadState::PopOpenSlow(uint16_t domain) noexcept {
  if (overflow_ > 0) {  // the innermost pushes were never put on the stack
    --overflow_;
    UpdateFastPopDepth();
    return nullptr;
  }
  for (int i = depth_; i-- > 0;) {
    if (stack_[i].domain != domain) continue;
    popped_ = stack_[i];
    for (int j = i; j + 1 < depth_; ++j) stack_[j] = stack_[j + 1];
    --depth_;
    return &popped_;
  }
  ThreadCounters::Bump(counters_.pop_without_push);
  return nullptr;
}

namespace {

__attribute__((tls_model("initial-exec"))) thread_local bool t_exited = false;

struct ThreadExitGuard {
  ThreadState* state = nullptr;
  ~ThreadExitGuard() {
    t_exited = true;
    internal::t_current.state = nullptr;
    internal::t_current.names = nullptr;
    if (!state) return;
    Session* s = Session::Instance();
    if (s) s->threads().ReturnCache(state);
    // The last touch of the state: from here the writer may recycle it.
    state->exited.store(true, std::memory_order_release);
    if (s) s->OnThreadExit();
  }
};
thread_local ThreadExitGuard t_guard;

}  // namespace

void RingPassedFillMark() noexcept {
  Session* s = Session::Instance();
  if (s) s->DrainSoon();
}

void RingWantsPopulate() noexcept {
  Session* s = Session::Instance();
  if (s) s->PopulateSoon();
}

namespace internal {

constinit thread_local CurrentThread t_current __attribute__((tls_model("initial-exec")));

ThreadState* CreateCurrentThreadState() {
  if (t_exited) return nullptr;  // thread_local destructors already ran
  Session* session = Session::Instance();
  if (!session) session = Session::EnsureStarted();
  if (!session) return nullptr;
  ThreadState* state = session->threads().Register(static_cast<uint64_t>(syscall(SYS_gettid)),
                                                   static_cast<uint64_t>(pthread_self()));
  if (!state) return nullptr;
  state->SetFlushTopLevelRanges(Session::flush_top_level_ranges());
  t_guard.state = state;
  t_current.names = state->name_cache();
  t_current.state = state;
  return state;
}

}  // namespace internal

// Called in a forked child: the forking thread's state belongs to the
// parent's session.
void ResetCurrentThreadStateAfterFork() noexcept {
  internal::t_current.state = nullptr;
  internal::t_current.names = nullptr;
  t_guard.state = nullptr;
}

}  // namespace tracer
