// The tracer's configuration, parsed from TRACER_* environment variables
// (docs/design.md section 3, "Configuration"). Parsing is a pure function of a
// getenv-like callable so it is unit-testable; a bad value yields one clear
// error line and tracing stays off.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libtracer/core/clock.h"

namespace tracer {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError, kOff };
enum class ForkMode : uint8_t { kChild, kNone };

// Bits of Config::activities (TRACER_ACTIVITIES), read by the CUPTI adapter.
enum Activity : uint32_t {
  kActivityKernel = 1u << 0,
  kActivityMemcpy = 1u << 1,
  kActivityMemset = 1u << 2,
  kActivityRuntime = 1u << 3,
  kActivityDriver = 1u << 4,
  kActivitySync = 1u << 5,
  kActivityOverhead = 1u << 6,
  kActivityGraph = 1u << 7,
};
inline constexpr uint32_t kDefaultActivities = kActivityKernel | kActivityMemcpy | kActivityMemset |
                                               kActivityRuntime | kActivityDriver | kActivitySync |
                                               kActivityOverhead;

inline constexpr uint64_t kMaxBufferSize = uint64_t{1} << 30;  // per thread
// Per thread: 1 M events, a burst of 500 k ranges with no drain at all (a
// Llama-7B training step's emit_nvtx ranges on one thread are about 12 k;
// bench/capture/burst_bench.cc has the estimate). Pages become resident only
// as the thread writes them (thread_ring.h).
inline constexpr uint64_t kDefaultBufferSize = uint64_t{32} << 20;
inline constexpr uint64_t kDefaultBufferLimit = uint64_t{512} << 20;  // all threads
inline constexpr uint64_t kMinBufferLimit = uint64_t{64} << 10;
inline constexpr uint64_t kMaxBufferLimit = uint64_t{64} << 30;

// PM sampling: one sample per interval of GPU time, into a device-memory
// buffer the sampler thread drains every few ms (pm_sampler.h). 1 ms and
// 128 MiB: a 1 ms sample of three metrics is tens of bytes of hardware
// buffer, so the buffer holds far more than one drain period.
inline constexpr uint64_t kDefaultPmIntervalNs = 1000000;
inline constexpr uint64_t kMinPmIntervalNs = 1000;
inline constexpr uint64_t kMaxPmIntervalNs = 1000000000;
inline constexpr uint64_t kDefaultPmHwBufferSize = uint64_t{128} << 20;
inline constexpr uint64_t kMinPmHwBufferSize = uint64_t{1} << 20;
inline constexpr uint64_t kMaxPmHwBufferSize = uint64_t{4} << 30;

// The default TRACER_OUTPUT, and the default when a rank is known
// (RankFromEnv): tracer-rank<R>-<pid>.trace.
inline constexpr const char* kDefaultOutput = "tracer-%p.trace";
inline constexpr const char* kDefaultRankOutput = "tracer-rank%r-%p.trace";

struct Config {
  bool enabled = true;                           // TRACER_ENABLE
  std::string output_template = kDefaultOutput;  // TRACER_OUTPUT; see kDefaultRankOutput
  // TRACER_FORCE_OVERWRITE: replace a file left at the output path by an
  // earlier run; without it that file is kept and tracing is off.
  bool force_overwrite = false;
  uint64_t buffer_size = kDefaultBufferSize;  // TRACER_BUFFER_SIZE, per-thread ring bytes
  // TRACER_BUFFER_LIMIT: all threads' rings together (ring_budget.h); by
  // default kDefaultBufferLimit, or half the machine's memory when less.
  uint64_t buffer_limit = kDefaultBufferLimit;
  // TRACER_BUFFER_FULL: yield (true) | drop. A thread whose buffer is past
  // three quarters full yields its core to the writer (capture/thread_ring.h).
  bool buffer_full_yield = true;
  uint32_t flush_interval_ms = 200;          // TRACER_FLUSH_INTERVAL_MS
  std::vector<std::string> domains_include;  // TRACER_DOMAINS_INCLUDE; empty = all
  std::vector<std::string> domains_exclude;  // TRACER_DOMAINS_EXCLUDE
  std::string capture_range;                 // TRACER_CAPTURE_RANGE; empty = always on
  uint64_t capture_start = 1;                // TRACER_CAPTURE_START (1-based)
  uint64_t capture_stop = 1;  // TRACER_CAPTURE_STOP; 0 = never stop; defaults to capture_start
  LogLevel log_level = LogLevel::kWarn;  // TRACER_LOG_LEVEL
  ForkMode fork = ForkMode::kChild;      // TRACER_FORK
  ClockMode clock = ClockMode::kAuto;    // TRACER_CLOCK: auto|tsc|monotonic (core/clock.h)
  // TRACER_ROOT_PID: the pid of the traced program, set by `tracer run` and
  // by the LD_PRELOAD constructor. A process with another pid that starts a
  // session without having inherited one (it forked before the library was
  // loaded, or it is an exec'ed subprocess) is a child: TRACER_FORK applies
  // to it and its file gets its own name. 0 = unknown.
  uint64_t root_pid = 0;
  // (TRACER_RUN_ID, which run this process belongs to, is read once by
  // run_id.h: not a setting, it is the same for every process of a run.)
  // (TRACER_RUN_MANIFEST, set by `tracer run`, is read by the session: the
  // file each process appends its trace's path to, so the run names exactly
  // the files its processes wrote.)

  // Read by the CUPTI adapter and the PM sampler.
  uint32_t activities = kDefaultActivities;  // TRACER_ACTIVITIES
  uint64_t cupti_buffer_size = 8u << 20;     // TRACER_CUPTI_BUFFER_SIZE
  uint32_t cupti_buffer_count = 64;          // TRACER_CUPTI_BUFFER_COUNT
  bool cuda = true;                          // TRACER_CUDA
  // TRACER_PM_METRICS: metric names and presets (pm_metrics.h), presets
  // expanded; empty = PM sampling off.
  std::vector<std::string> pm_metrics;
  uint64_t pm_interval_ns = kDefaultPmIntervalNs;       // TRACER_PM_INTERVAL_NS
  uint64_t pm_hw_buffer_size = kDefaultPmHwBufferSize;  // TRACER_PM_HW_BUFFER_SIZE

  // The effective configuration, key = variable name, for the stream header.
  std::vector<std::pair<std::string, std::string>> effective;

  bool has_activity(Activity a) const { return (activities & a) != 0; }
  // Whether NVTX ranges of the named domain ("default" for the default one)
  // are recorded.
  bool DomainEnabled(std::string_view domain) const;
};

using GetEnvFn = std::function<const char*(const char*)>;

struct ConfigResult {
  Config config;
  std::string error;  // empty = ok; else one line naming the variable and value
  bool ok() const { return error.empty(); }
};

ConfigResult ParseConfig(const GetEnvFn& getenv_fn);
// physical_memory: the machine's memory in bytes (0 = unknown); the total
// buffer bound may not exceed half of it.
ConfigResult ParseConfig(const GetEnvFn& getenv_fn, uint64_t physical_memory);

// Expands %p (pid), %h (host), %r (RankFromEnv, 0 when unknown),
// %q{VAR} (environment variable, empty when unset) and %% in an output path
// template. Returns false and sets *error on an unknown placeholder.
bool ExpandOutputTemplate(std::string_view tmpl, uint32_t pid, std::string_view host,
                          const GetEnvFn& getenv_fn, std::string* out, std::string* error);

// Rank from RANK, then SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, then
// LOCAL_RANK (the first set to a number); -1 when none is.
int32_t RankFromEnv(const GetEnvFn& getenv_fn);

// Where this process stands in a multi-process job, from the variables
// torchrun, srun, mpirun (Open MPI) and MPICH launchers set; for the header.
struct RankInfo {
  int32_t rank = -1;        // RankFromEnv
  int32_t world_size = 0;   // WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE; 0 = unknown
  int32_t local_rank = -1;  // LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK; -1 = unknown
  // The GPU it is expected to use: entry local_rank of CUDA_VISIBLE_DEVICES
  // (or its only entry), or local_rank itself when the list is unset.
  std::string device;
  std::string cuda_visible_devices;  // raw; empty when unset
};
RankInfo RankInfoFromEnv(const GetEnvFn& getenv_fn);

// Reads an on/off setting: 1, true, on, yes and 0, false, off, no (any
// case, blanks around ignored); empty leaves *out as it is (the default).
// False when the text is none of these. The one reader of TRACER_* switches:
// the library's, its LD_PRELOAD constructor's and `tracer run`'s.
bool ParseBool(std::string_view text, bool* out);

// Parses sizes such as "4096", "64K", "4M", "1G" (binary units).
bool ParseSize(std::string_view text, uint64_t* out);

}  // namespace tracer
