#include "libtracer/capture/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>

#include "libtracer/capture/pm_metrics.h"
#include "libtracer/core/status.h"

namespace tracer {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = Trim(s.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += ',';
    out += i;
  }
  return out;
}

bool ParseUint(std::string_view s, uint64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool ParseBool(std::string_view text, bool* out) {
  // Without allocating: the LD_PRELOAD constructor reads switches too.
  const std::string_view s = Trim(text);
  const auto is = [s](std::string_view word) {
    return s.size() == word.size() &&
           std::equal(s.begin(), s.end(), word.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (s.empty()) return true;
  if (is("1") || is("true") || is("on") || is("yes")) {
    *out = true;
  } else if (is("0") || is("false") || is("off") || is("no")) {
    *out = false;
  } else {
    return false;
  }
  return true;
}

namespace {

struct ActivityName {
  const char* name;
  Activity bit;
};
constexpr ActivityName kActivityNames[] = {
    {"kernel", kActivityKernel},     {"memcpy", kActivityMemcpy}, {"memset", kActivityMemset},
    {"runtime", kActivityRuntime},   {"driver", kActivityDriver}, {"sync", kActivitySync},
    {"overhead", kActivityOverhead}, {"graph", kActivityGraph},
};

const char* LogLevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "warn";
}

std::string Bad(const char* var, std::string_view value, std::string_view why) {
  std::string msg = var;
  msg += "='";
  msg += value;
  msg += "' ";
  msg += why;
  msg += "; tracing disabled";
  return msg;
}

}  // namespace

bool ParseSize(std::string_view text, uint64_t* out) {
  std::string_view s = Trim(text);
  if (s.empty()) return false;
  uint64_t mult = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  if (last == 'B' && s.size() >= 2) {  // accept "4MB", "4KiB" is not accepted
    s.remove_suffix(1);
    last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  }
  if (last == 'K') mult = 1ull << 10;
  if (last == 'M') mult = 1ull << 20;
  if (last == 'G') mult = 1ull << 30;
  if (mult != 1) s.remove_suffix(1);
  uint64_t v = 0;
  if (!ParseUint(s, &v)) return false;
  if (v > (~0ull) / mult) return false;
  *out = v * mult;
  return true;
}

bool Config::DomainEnabled(std::string_view domain) const {
  auto has = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), domain) != list.end();
  };
  if (!domains_include.empty() && !has(domains_include)) return false;
  return !has(domains_exclude);
}

namespace {

// The first of vars set to a number in 0..INT32_MAX, else -1. A variable set
// to something else (empty, "abc") is skipped, as if unset.
int32_t FirstNumber(const GetEnvFn& getenv_fn, std::initializer_list<const char*> vars) {
  for (const char* var : vars) {
    const char* v = getenv_fn(var);
    uint64_t r = 0;
    if (v && ParseUint(v, &r) && r <= 0x7fffffff) return static_cast<int32_t>(r);
  }
  return -1;
}

// The device a process with this local rank uses among CUDA_VISIBLE_DEVICES
// (as the driver names it outside the list), or by index when the list is
// unset; empty when it cannot be told.
std::string ExpectedDevice(const char* visible, int32_t local_rank) {
  if (!visible) return local_rank >= 0 ? std::to_string(local_rank) : std::string();
  std::vector<std::string> list = SplitList(visible);
  if (list.size() == 1) return list[0];
  if (local_rank >= 0 && static_cast<size_t>(local_rank) < list.size()) return list[local_rank];
  return std::string();
}

}  // namespace

// torchrun sets RANK/WORLD_SIZE/LOCAL_RANK, srun SLURM_PROCID/SLURM_NTASKS/
// SLURM_LOCALID, Open MPI's mpirun OMPI_COMM_WORLD_*, MPICH/Hydra PMI_*.
// RANK first: torchrun launched by srun or mpirun sees both, and RANK is
// the rank its program uses.
int32_t RankFromEnv(const GetEnvFn& getenv_fn) {
  return FirstNumber(getenv_fn,
                     {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK"});
}

RankInfo RankInfoFromEnv(const GetEnvFn& getenv_fn) {
  RankInfo r;
  r.rank = RankFromEnv(getenv_fn);
  r.world_size = std::max(
      FirstNumber(getenv_fn, {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}),
      0);
  r.local_rank =
      FirstNumber(getenv_fn, {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"});
  const char* visible = getenv_fn("CUDA_VISIBLE_DEVICES");
  if (visible) r.cuda_visible_devices = visible;
  r.device = ExpectedDevice(visible, r.local_rank);
  return r;
}

bool ExpandOutputTemplate(std::string_view tmpl, uint32_t pid, std::string_view host,
                          const GetEnvFn& getenv_fn, std::string* out, std::string* error) {
  out->clear();
  for (size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c != '%') {
      out->push_back(c);
      continue;
    }
    if (i + 1 >= tmpl.size()) {
      *error = "ends with a lone '%' (use %% for a percent sign)";
      return false;
    }
    char p = tmpl[++i];
    switch (p) {
      case 'p':
        *out += std::to_string(pid);
        break;
      case 'h':
        out->append(host);
        break;
      case 'r': {
        int32_t rank = RankFromEnv(getenv_fn);
        *out += std::to_string(rank < 0 ? 0 : rank);
        break;
      }
      case '%':
        out->push_back('%');
        break;
      case 'q': {
        size_t close = tmpl.find('}', i);
        if (i + 1 >= tmpl.size() || tmpl[i + 1] != '{' || close == std::string_view::npos) {
          *error = "has %q without {VAR}";
          return false;
        }
        std::string var(tmpl.substr(i + 2, close - i - 2));
        if (var.empty()) {
          *error = "has an empty %q{}";
          return false;
        }
        if (const char* v = getenv_fn(var.c_str())) *out += v;
        i = close;
        break;
      }
      default:
        *error = std::string("has an unknown placeholder %") + p + " (use %p %h %r %q{VAR} %%)";
        return false;
    }
  }
  if (out->empty()) {
    *error = "is empty";
    return false;
  }
  return true;
}

namespace {

// Each Parse* below reads a few TRACER_* variables into *c; an error is the
// one line ParseConfig reports (variable, value, why, "tracing disabled").

Status ParseEnable(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_ENABLE"); v && !ParseBool(v, &c->enabled)) {
    return Status::Error(Bad("TRACER_ENABLE", v, "is not 0 or 1"));
  }
  return Status();
}

Status ParseOutputAndBuffers(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_OUTPUT")) {
    std::string expanded, why;
    // Validate the template now so a typo is reported once, at start.
    if (!ExpandOutputTemplate(v, 1, "host", get, &expanded, &why)) {
      return Status::Error(Bad("TRACER_OUTPUT", v, why));
    }
    c->output_template = v;
  } else if (RankFromEnv(get) >= 0) {
    // One of several ranks: the ranks of a job often share a directory and
    // the name tells the files apart; the pid keeps a restarted rank's file.
    c->output_template = kDefaultRankOutput;
  }
  if (const char* v = get("TRACER_FORCE_OVERWRITE"); v && !ParseBool(v, &c->force_overwrite)) {
    return Status::Error(Bad("TRACER_FORCE_OVERWRITE", v, "is not 0 or 1"));
  }
  if (const char* v = get("TRACER_BUFFER_SIZE")) {
    if (!ParseSize(v, &c->buffer_size)) {
      return Status::Error(Bad("TRACER_BUFFER_SIZE", v, "is not a size (e.g. 4M)"));
    }
    if (c->buffer_size < 4096 || c->buffer_size > kMaxBufferSize) {
      return Status::Error(Bad("TRACER_BUFFER_SIZE", v, "is out of range (4K to 1G per thread)"));
    }
  }
  if (const char* v = get("TRACER_BUFFER_FULL")) {
    const std::string mode(v);
    if (mode == "yield") {
      c->buffer_full_yield = true;
    } else if (mode == "drop") {
      c->buffer_full_yield = false;
    } else {
      return Status::Error(Bad("TRACER_BUFFER_FULL", v, "is not yield or drop"));
    }
  }
  if (const char* v = get("TRACER_FLUSH_INTERVAL_MS")) {
    uint64_t ms = 0;
    if (!ParseUint(v, &ms) || ms < 1 || ms > 600000) {
      return Status::Error(
          Bad("TRACER_FLUSH_INTERVAL_MS", v, "is not a number of ms in 1..600000"));
    }
    c->flush_interval_ms = static_cast<uint32_t>(ms);
  }
  return Status();
}

std::string SizeText(uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// TRACER_BUFFER_LIMIT, the bound on all threads' rings together, checked
// against the machine (half its memory at most) and TRACER_BUFFER_SIZE.
Status ParseBufferLimit(const GetEnvFn& get, uint64_t physical_memory, Config* c) {
  const uint64_t half = physical_memory / 2;
  const char* v = get("TRACER_BUFFER_LIMIT");
  if (!v) {
    c->buffer_limit = kDefaultBufferLimit;
    if (half != 0 && half < c->buffer_limit) c->buffer_limit = std::max(half, kMinBufferLimit);
  } else {
    if (!ParseSize(v, &c->buffer_limit)) {
      return Status::Error(Bad("TRACER_BUFFER_LIMIT", v, "is not a size (e.g. 512M)"));
    }
    if (c->buffer_limit < kMinBufferLimit || c->buffer_limit > kMaxBufferLimit) {
      return Status::Error(Bad("TRACER_BUFFER_LIMIT", v,
                               "is out of range (64K to 64G, all threads' buffers together)"));
    }
    if (half != 0 && c->buffer_limit > half) {
      return Status::Error(
          Bad("TRACER_BUFFER_LIMIT", v,
              "is more than half of this machine's memory (" + SizeText(physical_memory) + ")"));
    }
  }
  if (c->buffer_size > c->buffer_limit) {
    const char* size = get("TRACER_BUFFER_SIZE");
    if (!size) {  // the default size: it shrinks to fit a small limit
      c->buffer_size = c->buffer_limit;
      return Status();
    }
    return Status::Error(Bad("TRACER_BUFFER_SIZE", size,
                             "is more than TRACER_BUFFER_LIMIT=" + SizeText(c->buffer_limit) +
                                 ", the bound on all threads' buffers together (raise "
                                 "TRACER_BUFFER_LIMIT or lower TRACER_BUFFER_SIZE)"));
  }
  return Status();
}

uint64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// NVTX domain filters and the capture window (range name, start, stop).
Status ParseDomainsAndWindow(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_DOMAINS_INCLUDE")) c->domains_include = SplitList(v);
  if (const char* v = get("TRACER_DOMAINS_EXCLUDE")) c->domains_exclude = SplitList(v);
  if (const char* v = get("TRACER_CAPTURE_RANGE")) c->capture_range = std::string(Trim(v));
  bool stop_set = false;
  if (const char* v = get("TRACER_CAPTURE_START")) {
    if (!ParseUint(v, &c->capture_start) || c->capture_start == 0) {
      return Status::Error(
          Bad("TRACER_CAPTURE_START", v, "is not a positive instance number (1 = first)"));
    }
  }
  if (const char* v = get("TRACER_CAPTURE_STOP")) {
    if (!ParseUint(v, &c->capture_stop)) {
      return Status::Error(
          Bad("TRACER_CAPTURE_STOP", v, "is not an instance number (0 = never stop)"));
    }
    stop_set = true;
  }
  if (!stop_set) c->capture_stop = c->capture_start;
  if (c->capture_stop != 0 && c->capture_stop < c->capture_start) {
    return Status::Error(Bad("TRACER_CAPTURE_STOP", std::to_string(c->capture_stop),
                             "is before TRACER_CAPTURE_START=" + std::to_string(c->capture_start)));
  }
  if ((get("TRACER_CAPTURE_START") || stop_set) && c->capture_range.empty()) {
    const char* var = stop_set ? "TRACER_CAPTURE_STOP" : "TRACER_CAPTURE_START";
    return Status::Error(
        Bad(var, get(var), "needs TRACER_CAPTURE_RANGE (the NVTX range to count)"));
  }
  return Status();
}

// Log level, fork handling and the root process id.
Status ParseProcessSettings(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_LOG_LEVEL")) {
    std::string s = Lower(Trim(v));
    if (s == "debug")
      c->log_level = LogLevel::kDebug;
    else if (s == "info")
      c->log_level = LogLevel::kInfo;
    else if (s == "warn" || s == "warning")
      c->log_level = LogLevel::kWarn;
    else if (s == "error")
      c->log_level = LogLevel::kError;
    else if (s == "off")
      c->log_level = LogLevel::kOff;
    else
      return Status::Error(Bad("TRACER_LOG_LEVEL", v, "is not one of error|warn|info|debug|off"));
  }
  if (const char* v = get("TRACER_FORK")) {
    std::string s = Lower(Trim(v));
    if (s == "child")
      c->fork = ForkMode::kChild;
    else if (s == "none")
      c->fork = ForkMode::kNone;
    else
      return Status::Error(Bad("TRACER_FORK", v, "is not child or none"));
  }
  if (const char* v = get("TRACER_CLOCK")) {
    std::string s = Lower(Trim(v));
    if (s == "auto")
      c->clock = ClockMode::kAuto;
    else if (s == "tsc")
      c->clock = ClockMode::kTsc;
    else if (s == "monotonic")
      c->clock = ClockMode::kMonotonic;
    else
      return Status::Error(Bad("TRACER_CLOCK", v, "is not one of auto|tsc|monotonic"));
  }
  if (const char* v = get("TRACER_ROOT_PID")) {
    if (!ParseUint(Trim(v), &c->root_pid)) {
      return Status::Error(Bad("TRACER_ROOT_PID", v, "is not a process id"));
    }
  }
  return Status();
}

// Activity kinds, CUPTI buffers and the CUDA switch.
Status ParseCuptiSettings(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_ACTIVITIES")) {
    c->activities = 0;
    for (const std::string& item : SplitList(v)) {
      std::string name = Lower(item);
      bool found = false;
      for (const auto& a : kActivityNames) {
        if (name == a.name) {
          c->activities |= a.bit;
          found = true;
        }
      }
      if (!found) {
        return Status::Error(
            Bad("TRACER_ACTIVITIES", v,
                "has unknown activity '" + item +
                    "' (kernel,memcpy,memset,runtime,driver,sync,overhead,graph)"));
      }
    }
  }
  if (const char* v = get("TRACER_CUPTI_BUFFER_SIZE")) {
    if (!ParseSize(v, &c->cupti_buffer_size) || c->cupti_buffer_size < 64 * 1024 ||
        c->cupti_buffer_size > (1ull << 30)) {
      return Status::Error(
          Bad("TRACER_CUPTI_BUFFER_SIZE", v, "is not a size in 64K..1G (e.g. 8M)"));
    }
  }
  if (const char* v = get("TRACER_CUPTI_BUFFER_COUNT")) {
    uint64_t n = 0;
    if (!ParseUint(v, &n) || n < 2 || n > 4096) {
      return Status::Error(Bad("TRACER_CUPTI_BUFFER_COUNT", v, "is not a count in 2..4096"));
    }
    c->cupti_buffer_count = static_cast<uint32_t>(n);
  }
  if (const char* v = get("TRACER_CUDA"); v && !ParseBool(v, &c->cuda)) {
    return Status::Error(Bad("TRACER_CUDA", v, "is not 0 or 1"));
  }
  return Status();
}

Status ParsePmSampling(const GetEnvFn& get, Config* c) {
  if (const char* v = get("TRACER_PM_METRICS")) {
    std::string why;
    if (!ExpandPmMetrics(SplitList(v), &c->pm_metrics, &why)) {
      return Status::Error(Bad("TRACER_PM_METRICS", v, why));
    }
  }
  if (const char* v = get("TRACER_PM_INTERVAL_NS")) {
    if (!ParseUint(v, &c->pm_interval_ns) || c->pm_interval_ns < kMinPmIntervalNs ||
        c->pm_interval_ns > kMaxPmIntervalNs) {
      return Status::Error(
          Bad("TRACER_PM_INTERVAL_NS", v, "is not a number of ns in [1000, 1000000000]"));
    }
  }
  if (const char* v = get("TRACER_PM_HW_BUFFER_SIZE")) {
    if (!ParseSize(v, &c->pm_hw_buffer_size) || c->pm_hw_buffer_size < kMinPmHwBufferSize ||
        c->pm_hw_buffer_size > kMaxPmHwBufferSize) {
      return Status::Error(Bad("TRACER_PM_HW_BUFFER_SIZE", v, "is not a size in [1M, 4G]"));
    }
  }
  return Status();
}

// Every setting as the tracer will use it, for the stream header.
std::vector<std::pair<std::string, std::string>> EffectiveSettings(const Config& c) {
  std::string activities;
  for (const auto& a : kActivityNames) {
    if (c.activities & a.bit) {
      if (!activities.empty()) activities += ',';
      activities += a.name;
    }
  }
  return {
      {"TRACER_ENABLE", c.enabled ? "1" : "0"},
      {"TRACER_FORCE_OVERWRITE", c.force_overwrite ? "1" : "0"},
      {"TRACER_OUTPUT", c.output_template},
      {"TRACER_BUFFER_SIZE", std::to_string(c.buffer_size)},
      {"TRACER_BUFFER_LIMIT", std::to_string(c.buffer_limit)},
      {"TRACER_BUFFER_FULL", c.buffer_full_yield ? "yield" : "drop"},
      {"TRACER_FLUSH_INTERVAL_MS", std::to_string(c.flush_interval_ms)},
      {"TRACER_DOMAINS_INCLUDE", JoinList(c.domains_include)},
      {"TRACER_DOMAINS_EXCLUDE", JoinList(c.domains_exclude)},
      {"TRACER_CAPTURE_RANGE", c.capture_range},
      {"TRACER_CAPTURE_START", std::to_string(c.capture_start)},
      {"TRACER_CAPTURE_STOP", std::to_string(c.capture_stop)},
      {"TRACER_LOG_LEVEL", LogLevelName(c.log_level)},
      {"TRACER_FORK", c.fork == ForkMode::kChild ? "child" : "none"},
      {"TRACER_CLOCK", c.clock == ClockMode::kTsc         ? "tsc"
                       : c.clock == ClockMode::kMonotonic ? "monotonic"
                                                          : "auto"},
      {"TRACER_ACTIVITIES", activities},
      {"TRACER_CUPTI_BUFFER_SIZE", std::to_string(c.cupti_buffer_size)},
      {"TRACER_CUPTI_BUFFER_COUNT", std::to_string(c.cupti_buffer_count)},
      {"TRACER_CUDA", c.cuda ? "1" : "0"},
      {"TRACER_PM_METRICS", JoinList(c.pm_metrics)},
      {"TRACER_PM_INTERVAL_NS", std::to_string(c.pm_interval_ns)},
      {"TRACER_PM_HW_BUFFER_SIZE", std::to_string(c.pm_hw_buffer_size)},
  };
}

}  // namespace

ConfigResult ParseConfig(const GetEnvFn& getenv_fn) {
  return ParseConfig(getenv_fn, PhysicalMemory());
}

ConfigResult ParseConfig(const GetEnvFn& getenv_fn, uint64_t physical_memory) {
  ConfigResult result;
  Config& c = result.config;
  for (auto parse : {ParseEnable, ParseOutputAndBuffers, ParseDomainsAndWindow,
                     ParseProcessSettings, ParseCuptiSettings, ParsePmSampling}) {
    if (Status s = parse(getenv_fn, &c); !s.ok()) {
      result.error = s.message();
      return result;
    }
  }
  if (Status s = ParseBufferLimit(getenv_fn, physical_memory, &c); !s.ok()) {
    result.error = s.message();
    return result;
  }
  c.effective = EffectiveSettings(c);
  return result;
}

}  // namespace tracer
