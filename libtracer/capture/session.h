// The one tracing session of a process, however many entry points fire (NVTX
// init, CUDA injection, LD_PRELOAD constructor): parses the configuration,
// opens the output file, runs the writer thread, shuts down exactly once at
// exit (bounded time), and restarts in a forked child (TRACER_FORK=child).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libtracer/capture/capture_instance_ids.h"
#include "libtracer/capture/capture_window.h"
#include "libtracer/capture/config.h"
#include "libtracer/capture/record_sink.h"

namespace tracer {

class ThreadRegistry;
class Writer;

class Session {
 public:
  // Idempotent and thread-safe; nullptr when tracing is disabled, the
  // configuration is bad or the output cannot be opened (logged once).
  // Throws when out of memory (tracing is then disabled for good). Like every
  // function below, it runs under an entry point's guard (entry_guard.h).
  static Session* EnsureStarted();
  // The running session, or nullptr (not started, disabled, or shut down).
  static Session* Instance() noexcept { return instance_.load(std::memory_order_acquire); }

  const Config& config() const { return config_; }
  // The trace file (the expanded TRACER_OUTPUT, or a name derived from it
  // when another process of the run holds that one).
  const std::string& output_path() const { return output_path_; }
  // Writer polls it until shutdown (Drain(final = true) last). Thread-safe.
  void AddSource(RecordSource* source);
  // Run before the final drain (e.g. to force-flush CUPTI buffers).
  void AddShutdownHook(std::function<void()> hook);

  bool capture_active() const noexcept { return window_.active(); }
  CaptureWindow& window() noexcept { return window_; }
  const CaptureWindow& window() const noexcept { return window_; }
  // The open start/end instances of the capture range (nvtx_handler.cc).
  CaptureInstanceIds& capture_ids() noexcept { return capture_ids_; }
  // cuProfilerStart / cuProfilerStop.
  void SetProfilerActive(bool active) noexcept { RequestProfilerActive(active); }
  // tracerStart / tracerStop / cuProfilerStart / cuProfilerStop, whenever
  // they come: before any session starts (a tracerStop() before the first
  // NVTX call), the session starts with the profiler off. The last request
  // wins; a forked child starts in its parent's state.
  static void RequestProfilerActive(bool active) noexcept;
  // String id of TRACER_CAPTURE_RANGE (0 when unset).
  uint32_t capture_range_name() const noexcept { return capture_range_name_; }
  // The same, or ~0 (no name has that id) when unset: whether a name is the
  // capture range's is then one compare (the NVTX push fast path).
  uint32_t capture_range_match() const noexcept { return capture_range_match_; }

  // Wakes the writer and waits (bounded) until it drained everything
  // appended before the call.
  void Flush();
  // Final drain, footer, close. Exactly once; later calls return at once.
  // The session has ended when it returns, even by an exception.
  void Shutdown();

  ThreadRegistry& threads() noexcept { return *threads_; }

  // The CUDA injection entry point ran (the driver loaded libtracer.so):
  // without it, a session ending on a machine without an NVIDIA driver says
  // once that CUPTI was unavailable (the driver never asked for CUPTI).
  static void NoteCudaInjection() noexcept {
    cuda_injection_seen_.store(true, std::memory_order_release);
  }

  // In a forked child (e.g. a DataLoader worker), which typically ends with
  // _exit() and so never runs atexit handlers, every top-level push/pop
  // range is written out soon after it ends: the NVTX handler calls this
  // after a pop that leaves the thread's stack empty, and it only wakes the
  // writer thread (Writer::RequestDrain: no lock, no write(), never waits),
  // which drains within about a millisecond, at most once per millisecond.
  static bool flush_top_level_ranges() noexcept {
    return flush_top_level_.load(std::memory_order_relaxed);
  }
  void DrainAfterTopLevelRange() noexcept;
  // A thread's ring passed its fill mark (thread_ring.h): the writer drains
  // it soon rather than at the next flush interval. Only wakes the writer,
  // as DrainAfterTopLevelRange does.
  void DrainSoon() noexcept;
  // A thread's ring needs more of its fresh pages faulted in ahead of it
  // (thread_ring.h): the writer does it soon (Writer::RequestPopulate, a
  // wake-up at most, as DrainSoon).
  void PopulateSoon() noexcept;
  // A registered thread exited: once enough exited threads wait, the writer
  // is woken (as for DrainAfterTopLevelRange) to drain and recycle them, so
  // a program that churns threads holds states for about its live threads.
  void OnThreadExit() noexcept;

  // Shuts the running session down (atexit handler and library destructor).
  static void ShutdownProcess();
  // Registers the exit-time shutdown once more, so that it runs before the
  // exit-time teardown of every library loaded so far. atexit handlers and
  // the destructors of a library's C++ statics run in reverse order of
  // registration, and a session started by an NVTX call registers its
  // handler before the CUDA injection dlopens libcupti: its shutdown then
  // ran after libcupti had destroyed its state, and real libcupti 13 died
  // with SIGSEGV in cuptiActivityDisable (seen on an H100, driver 580). Call
  // it after libcupti is loaded and subscribed; the handler that runs second
  // finds the session ended.
  static void ShutDownAtExitBeforeLibrariesLoadedSoFar() noexcept;

  ~Session() = delete;  // sessions are never destroyed (see session.cc)

 private:
  Session(Config config, std::string output_path, uint32_t parent_pid);
  bool Open();
  static void InstallForkHandlers();
  // pthread_atfork handlers: C boundaries, each one guard.
  static void AtExit() noexcept;
  static void ForkPrepare() noexcept;
  static void ForkParent() noexcept;
  static void ForkChild() noexcept;
  static void ForkChildBody();
  static Session* StartNew(const Config& config, uint32_t parent_pid);

  static std::atomic<Session*> instance_;
  // Chains a session that is no longer the instance (g_retired_sessions).
  static void Retire(Session* s) noexcept;
  static std::atomic<bool> flush_top_level_;
  static std::atomic<bool> profiler_active_;
  static std::atomic<bool> cuda_injection_seen_;

  const Config config_;
  std::string output_path_;  // the template's expansion, then the file chosen (Open)
  const uint32_t parent_pid_;
  uint32_t capture_range_name_ = 0;
  uint32_t capture_range_match_ = ~0u;
  CaptureWindow window_;
  CaptureInstanceIds capture_ids_;
  std::unique_ptr<ThreadRegistry> threads_;
  std::unique_ptr<Writer> writer_;
  std::mutex hooks_mu_;
  std::vector<std::function<void()>> shutdown_hooks_;
  std::atomic<bool> shut_down_{false};
  // The session retired before this one (Retire): ended and forked-away
  // sessions stay reachable, so a leak checker sees them as kept on purpose.
  Session* previous_retired_ = nullptr;
};

}  // namespace tracer
