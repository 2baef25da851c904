#include "libtracer/capture/session.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>

#include "libtracer/capture/definitions.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/log.h"
#include "libtracer/capture/run_id.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/writer.h"
#include "libtracer/core/clock.h"
#include "libtracer/core/shared_name_cache.h"
#include "libtracer/core/string_table.h"

#ifndef TRACER_VERSION
#define TRACER_VERSION "0.1.0"
#endif

namespace tracer {

void ResetCurrentThreadStateAfterFork() noexcept;  // thread_state.cc

namespace {

enum State : int { kIdle = 0, kRunning = 1, kDisabled = 2, kEnded = 3 };
std::atomic<int> g_state{kIdle};
std::mutex g_start_mu;
bool g_process_hooks_installed = false;  // under g_start_mu
// Set in a forked child (TRACER_FORK=child): the next start reuses the
// parent's configuration and records the parent's pid.
const Config* g_inherited_config = nullptr;
uint32_t g_parent_pid = 0;

constexpr uint32_t kStopTimeoutMs = 5000;
constexpr uint32_t kFlushTimeoutMs = 2000;

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

std::vector<std::string> CommandLine() {
  std::vector<std::string> args;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\0', pos);
    if (end == std::string::npos) end = all.size();
    args.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  return args;
}

const char* RealGetenv(const char* name) { return getenv(name); }

// "run.trace" + "-7" -> "run-7.trace".
std::string WithSuffix(const std::string& path, const std::string& suffix) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + suffix;
  }
  return path.substr(0, dot) + suffix + path.substr(dot);
}

// A forked child's file must not replace its parent's when the template has
// no %p: "run.trace" -> "run-<pid>.trace".
std::string ChildPath(const std::string& tmpl, const std::string& expanded, uint32_t pid) {
  if (tmpl.find("%p") != std::string::npos) return expanded;
  return WithSuffix(expanded, "-" + std::to_string(pid));
}

// The names a process tries, in order, until one is not in use by another
// process of the run (TraceFile::Open): with the variables set by hand, an
// early-forked child, an exec'ed one or a program exec'ing itself cannot
// tell from its environment that its name is taken.
std::vector<std::string> CandidatePaths(const std::string& path, uint32_t pid) {
  const std::string p = "-" + std::to_string(pid);
  return {path, WithSuffix(path, p), WithSuffix(path, p + "-2"), WithSuffix(path, p + "-3"),
          WithSuffix(path, p + "-4")};
}

// `tracer run` lists the files its processes wrote in TRACER_RUN_MANIFEST,
// one absolute path a line, so it reports exactly those (never whatever
// else matches the template in a shared directory); a line starting with
// '!' is why a process wrote none, for the command's closing line. Appended
// with one write(2): lines from concurrent processes do not interleave.
void AppendToRunManifest(const std::string& line) {
  const char* manifest = getenv("TRACER_RUN_MANIFEST");
  if (!manifest || !*manifest) return;
  int fd = open(manifest, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = write(fd, line.data(), line.size());
  (void)n;  // best effort: only the closing summary of `tracer run` misses it
  close(fd);
}

void AddToRunManifest(const std::string& path) {
  std::string line;
  if (path.empty() || path[0] != '/') {
    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd))) return;
    line = std::string(cwd) + "/";
  }
  AppendToRunManifest(line + path + "\n");
}

bool UnderTracerRun() {
  const char* manifest = getenv("TRACER_RUN_MANIFEST");
  return manifest != nullptr && *manifest != '\0';
}

// CUDA_INJECTION64_PATH names a library (`tracer run` sets it): CUPTI
// capture was asked for, so its absence is worth a line.
bool CudaInjectionRequested() {
  const char* path = getenv("CUDA_INJECTION64_PATH");
  return path != nullptr && *path != '\0';
}

// The NVIDIA kernel driver publishes its version there; without it no CUDA
// call can reach CUPTI. (Checked without loading libcuda into the host.)
bool NvidiaDriverPresent() { return access("/proc/driver/nvidia/version", F_OK) == 0; }

// Logs why this process traces nothing and tells `tracer run` the same.
void NoTrace(const std::string& why) {
  Log(LogLevel::kError, why);
  std::string line = "!" + why;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  AppendToRunManifest(line + "\n");
}

}  // namespace

std::atomic<Session*> Session::instance_{nullptr};

namespace {
// Sessions are never freed (threads may hold pointers into one while the
// process exits, and a forked child keeps its parent's); once one stops
// being the instance it is chained here, reachable, instead of lost.
std::atomic<Session*> g_retired_sessions{nullptr};
}  // namespace

void Session::Retire(Session* s) noexcept {
  if (s) s->previous_retired_ = g_retired_sessions.exchange(s, std::memory_order_acq_rel);
}
std::atomic<bool> Session::flush_top_level_{false};
std::atomic<bool> Session::profiler_active_{true};
std::atomic<bool> Session::cuda_injection_seen_{false};

void Session::RequestProfilerActive(bool active) noexcept {
  profiler_active_.store(active, std::memory_order_release);
  // Reread: a session published meanwhile applies the latest request too
  // (EnsureStarted applies it after publishing).
  if (Session* s = Instance()) {
    s->window_.SetProfilerActive(profiler_active_.load(std::memory_order_acquire));
  }
}

Session::Session(Config config, std::string output_path, uint32_t parent_pid)
    : config_(std::move(config)),
      output_path_(std::move(output_path)),
      parent_pid_(parent_pid),
      window_(!config_.capture_range.empty(), config_.capture_start, config_.capture_stop),
      threads_(std::make_unique<ThreadRegistry>(config_.buffer_size, config_.buffer_limit,
                                                config_.buffer_full_yield)),
      writer_(std::make_unique<Writer>(threads_.get(), config_.flush_interval_ms)) {
  if (!config_.capture_range.empty()) {
    capture_range_name_ = GlobalStrings().Intern(config_.capture_range).id;
    if (capture_range_name_ != 0) capture_range_match_ = capture_range_name_;
    writer_->WatchCaptureWindow(&window_);
  }
  if (!profiler_active_.load(std::memory_order_acquire)) window_.SetProfilerActive(false);
}

bool Session::Open() {
  HeaderInfo header;
  header.tracer_version = TRACER_VERSION;
  header.host = HostName();
  header.pid = static_cast<uint32_t>(getpid());
  RankInfo rank = RankInfoFromEnv(RealGetenv);
  header.rank = rank.rank;
  header.world_size = rank.world_size;
  header.local_rank = rank.local_rank;
  header.device = std::move(rank.device);
  header.cuda_visible_devices = std::move(rank.cuda_visible_devices);
  header.clock_description = ClockDescription();
  header.session_start_trace_ns = NowNs();
  header.session_start_wall_ns = WallNowNs();
  header.config = config_.effective;
  // Tells this run's files from an earlier run's at a name already taken
  // (run_id.h); Writer::Begin opens with the same id.
  header.config.emplace_back(kRunIdVariable, ThisRunId());
  header.command_line = CommandLine();
  header.parent_pid = parent_pid_;
  std::string error;
  writer_->set_force_overwrite(config_.force_overwrite);
  if (!writer_->Begin(CandidatePaths(output_path_, header.pid), header, &error)) {
    NoTrace(error + "; tracing disabled");
    return false;
  }
  output_path_ = writer_->file().path();
  AddToRunManifest(output_path_);
  // Built first: nothing may throw once the writer thread runs, or it would
  // run for a session that never starts.
  const std::string started =
      LogEnabled(LogLevel::kInfo) ? "tracing to " + output_path_ : std::string();
  writer_->StartThread();
  Log(LogLevel::kInfo, started);
  return true;
}

Session* Session::StartNew(const Config& config, uint32_t parent_pid) {
  std::string path, why;
  uint32_t pid = static_cast<uint32_t>(getpid());
  if (!ExpandOutputTemplate(config.output_template, pid, HostName(), RealGetenv, &path, &why)) {
    NoTrace("TRACER_OUTPUT='" + config.output_template + "' " + why + "; tracing disabled");
    return nullptr;
  }
  if (parent_pid != 0) path = ChildPath(config.output_template, path, pid);
  // Leaked on purpose: threads may still hold pointers into it while the
  // process exits.
  auto* session = new Session(config, path, parent_pid);
  if (!session->Open()) {
    Retire(session);
    return nullptr;
  }
  return session;
}

Session* Session::EnsureStarted() {
  Session* s = instance_.load(std::memory_order_acquire);
  if (s) return s;
  int state = g_state.load(std::memory_order_acquire);
  if (state == kDisabled || state == kEnded) return nullptr;
  try {
    std::lock_guard<std::mutex> lock(g_start_mu);
    s = instance_.load(std::memory_order_acquire);
    if (s) return s;
    state = g_state.load(std::memory_order_acquire);
    if (state == kDisabled || state == kEnded) return nullptr;

    Config config;
    uint32_t parent_pid = 0;
    if (g_inherited_config) {
      config = *g_inherited_config;
      parent_pid = g_parent_pid;
    } else {
      ConfigResult parsed = ParseConfig(RealGetenv);
      if (!parsed.ok()) {
        NoTrace(parsed.error);
        g_state.store(kDisabled, std::memory_order_release);
        return nullptr;
      }
      config = std::move(parsed.config);
      // A descendant of the traced program that inherited no session: it
      // forked before the library was loaded (a DataLoader worker forked
      // before the first NVTX call) or it is an exec'ed subprocess. Without
      // this it would write to the root's file name and clobber it.
      const auto self = static_cast<uint64_t>(getpid());
      if (config.root_pid != 0 && config.root_pid != self) {
        if (config.fork == ForkMode::kNone) config.enabled = false;
        parent_pid = static_cast<uint32_t>(getppid());
      }
    }
    SetLogLevel(config.log_level);
    if (!config.enabled) {
      g_state.store(kDisabled, std::memory_order_release);
      return nullptr;
    }
    if (!g_inherited_config) {
      // Before anything is recorded: the clock never changes source under a
      // running session. A forked child keeps its parent's (same TSC, same
      // calibration).
      std::string note;
      InitTraceClock(config.clock, &note);
      if (!note.empty()) {
        Log(config.clock == ClockMode::kTsc ? LogLevel::kWarn : LogLevel::kInfo,
            "TRACER_CLOCK=" + std::string(config.clock == ClockMode::kTsc ? "tsc" : "auto") + ": " +
                note);
      }
    }
    s = StartNew(config, parent_pid);
    if (!s) {
      g_state.store(kDisabled, std::memory_order_release);
      return nullptr;
    }
    if (!g_process_hooks_installed) {
      g_process_hooks_installed = true;
      atexit(&Session::AtExit);
      InstallForkHandlers();
    }
    flush_top_level_.store(parent_pid != 0, std::memory_order_relaxed);
    instance_.store(s, std::memory_order_release);
    // A tracerStart/Stop that ran between the constructor and the store
    // above found no session: apply the latest request now.
    s->window_.SetProfilerActive(profiler_active_.load(std::memory_order_acquire));
    g_state.store(kRunning, std::memory_order_release);
    return s;
  } catch (...) {
    // Out of memory while starting: tracing stays off rather than retrying
    // on every call. The entry point's guard reports it.
    g_state.store(kDisabled, std::memory_order_release);
    throw;
  }
}

void Session::AddSource(RecordSource* source) { writer_->AddSource(source); }

void Session::AddShutdownHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  shutdown_hooks_.push_back(std::move(hook));
}

void Session::DrainAfterTopLevelRange() noexcept {
  if (shut_down_.load(std::memory_order_acquire)) return;
  writer_->RequestDrain();
}

void Session::DrainSoon() noexcept {
  if (shut_down_.load(std::memory_order_acquire)) return;
  writer_->RequestDrain();
}

void Session::PopulateSoon() noexcept {
  if (shut_down_.load(std::memory_order_acquire)) return;
  writer_->RequestPopulate();
}

void Session::OnThreadExit() noexcept {
  if (shut_down_.load(std::memory_order_acquire)) return;
  if (threads_->NoteExit()) writer_->RequestDrain();
}

void Session::Flush() {
  if (shut_down_.load(std::memory_order_acquire)) return;
  writer_->Flush(kFlushTimeoutMs);
}

void Session::Shutdown() {
  if (shut_down_.exchange(true)) return;
  window_.Close();
  // However the rest goes, the session is over when this returns.
  struct Ended {
    Session* session;
    ~Ended() {
      Session* self = session;
      if (instance_.compare_exchange_strong(self, nullptr)) Retire(session);
      g_state.store(kEnded, std::memory_order_release);
    }
  } ended{this};
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    hooks.swap(shutdown_hooks_);
  }
  // A failing hook must not cost the final drain: its error is rethrown
  // after it, for the caller's guard to report.
  std::exception_ptr hook_error;
  for (auto& hook : hooks) {
    try {
      hook();
    } catch (...) {
      if (!hook_error) hook_error = std::current_exception();
    }
  }
  // Once per run: the traced program's process, not each forked worker.
  if (parent_pid_ == 0 && config_.cuda && CudaInjectionRequested() &&
      !cuda_injection_seen_.load(std::memory_order_acquire) && !NvidiaDriverPresent()) {
    Log(LogLevel::kWarn,
        "CUPTI unavailable: no NVIDIA driver on this machine (no /proc/driver/nvidia), so no "
        "CUDA call reached the tracer; NVTX ranges only, with CPU times");
  }
  const bool stopped = writer_->Stop(kStopTimeoutMs);
  if (hook_error) std::rethrow_exception(hook_error);
  if (!stopped) {
    Log(LogLevel::kWarn, "the writer did not finish within 5 s; the trace has no footer");
  } else if (LogEnabled(LogLevel::kInfo) && !UnderTracerRun()) {
    // Under `tracer run` the command says it, once for every process.
    Log(LogLevel::kInfo, "trace written to " + output_path_);
  }
}

void Session::AtExit() noexcept {
  Guarded(
      "atexit handler", "the trace may lack its last records", [] { ShutdownProcess(); },
      []() noexcept {});
}

void Session::ShutDownAtExitBeforeLibrariesLoadedSoFar() noexcept {
  // atexit only fails when out of memory; the first handler still runs then.
  atexit(&Session::AtExit);
}

void Session::ShutdownProcess() {
  Session* s = instance_.load(std::memory_order_acquire);
  if (s) s->Shutdown();
}

void Session::InstallForkHandlers() {
  pthread_atfork(&Session::ForkPrepare, &Session::ForkParent, &Session::ForkChild);
}

// Hold every lock an application thread or the writer may take, so the child
// never inherits one held by a thread that does not exist there.
void Session::ForkPrepare() noexcept {
  Guarded("fork handler (prepare)", [] {
    g_start_mu.lock();
    GlobalStrings().LockForFork();
    GlobalDefinitions().LockForFork();
    if (Session* s = instance_.load(std::memory_order_acquire)) s->threads_->LockForFork();
  });
}

void Session::ForkParent() noexcept {
  Guarded("fork handler (parent)", [] {
    if (Session* s = instance_.load(std::memory_order_acquire)) s->threads_->UnlockAfterFork();
    GlobalDefinitions().UnlockAfterFork();
    GlobalStrings().UnlockAfterFork();
    g_start_mu.unlock();
  });
}

void Session::ForkChild() noexcept {
  Guarded("fork handler (child)", [] { ForkChildBody(); });
}

void Session::ForkChildBody() {
  Session* parent = instance_.load(std::memory_order_acquire);
  if (parent) parent->threads_->UnlockAfterFork();
  GlobalDefinitions().UnlockAfterFork();
  GlobalStrings().UnlockAfterFork();
  GlobalSharedNames().AfterForkInChild();
  // The parent's session (writer thread, buffered events) stays behind: the
  // child starts its own file lazily, on its first traced call, so a child
  // that only execs writes nothing.
  ResetCurrentThreadStateAfterFork();
  flush_top_level_.store(false, std::memory_order_relaxed);
  instance_.store(nullptr, std::memory_order_release);
  Retire(parent);
  if (parent && parent->config_.fork == ForkMode::kChild &&
      !parent->shut_down_.load(std::memory_order_acquire)) {
    g_inherited_config = &parent->config_;
    g_parent_pid = static_cast<uint32_t>(getppid());
    g_state.store(kIdle, std::memory_order_release);
  } else {
    g_state.store(parent ? kDisabled : g_state.load(), std::memory_order_release);
  }
  g_start_mu.unlock();
}

}  // namespace tracer
