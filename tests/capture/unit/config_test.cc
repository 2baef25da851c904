#include "libtracer/capture/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace tracer {
namespace {

// A fake environment: the variables a test sets, nothing else.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  GetEnvFn fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

std::string EffectiveValue(const Config& c, const std::string& key) {
  for (const auto& [k, v] : c.effective) {
    if (k == key) return v;
  }
  return "<missing>";
}

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  FakeEnv env;
  ConfigResult r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  const Config& c = r.config;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.output_template, "tracer-%p.trace");
  EXPECT_EQ(c.buffer_size, 32u << 20);
  EXPECT_EQ(c.flush_interval_ms, 200u);
  EXPECT_TRUE(c.capture_range.empty());
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_EQ(c.fork, ForkMode::kChild);
  EXPECT_EQ(c.activities, kDefaultActivities);
  EXPECT_FALSE(c.has_activity(kActivityGraph));
  EXPECT_EQ(c.cupti_buffer_size, 8u << 20);
  EXPECT_EQ(c.cupti_buffer_count, 64u);
  EXPECT_TRUE(c.cuda);
  EXPECT_TRUE(c.buffer_full_yield);
  EXPECT_TRUE(c.DomainEnabled("default"));
  // Every variable is listed in the header's effective configuration.
  EXPECT_EQ(c.effective.size(), 22u);
  EXPECT_TRUE(c.pm_metrics.empty());  // PM sampling off
  EXPECT_EQ(c.pm_interval_ns, 1000000u);
  EXPECT_EQ(EffectiveValue(c, "TRACER_PM_HW_BUFFER_SIZE"), "134217728");
  EXPECT_EQ(EffectiveValue(c, "TRACER_CLOCK"), "auto");
  EXPECT_FALSE(c.force_overwrite);
  EXPECT_EQ(EffectiveValue(c, "TRACER_FORCE_OVERWRITE"), "0");
  EXPECT_EQ(EffectiveValue(c, "TRACER_BUFFER_SIZE"), "33554432");
  EXPECT_EQ(EffectiveValue(c, "TRACER_ACTIVITIES"),
            "kernel,memcpy,memset,runtime,driver,sync,overhead");
}

// Issue 16: an earlier run's file is replaced only on request.
TEST(ConfigTest, ForceOverwriteIsABoolean) {
  FakeEnv env;
  for (const char* yes : {"1", "true", "ON"}) {
    env.vars = {{"TRACER_FORCE_OVERWRITE", yes}};
    ConfigResult r = ParseConfig(env.fn());
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(r.config.force_overwrite) << yes;
    EXPECT_EQ(EffectiveValue(r.config, "TRACER_FORCE_OVERWRITE"), "1");
  }
  env.vars = {{"TRACER_FORCE_OVERWRITE", "0"}};
  EXPECT_FALSE(ParseConfig(env.fn()).config.force_overwrite);
  env.vars = {{"TRACER_FORCE_OVERWRITE", "maybe"}};
  ConfigResult r = ParseConfig(env.fn());
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("TRACER_FORCE_OVERWRITE='maybe'"), std::string::npos) << r.error;
}

TEST(ConfigTest, ParseBoolReadsTheOnAndOffWordsAndNothingElse) {
  for (const char* yes : {"1", "true", "On", " YES ", "yes\n"}) {
    bool v = false;
    EXPECT_TRUE(ParseBool(yes, &v)) << yes;
    EXPECT_TRUE(v) << yes;
  }
  for (const char* no : {"0", "FALSE", "off", " no"}) {
    bool v = true;
    EXPECT_TRUE(ParseBool(no, &v)) << no;
    EXPECT_FALSE(v) << no;
  }
  for (bool dflt : {false, true}) {  // empty: the default stays
    bool v = dflt;
    EXPECT_TRUE(ParseBool("  ", &v));
    EXPECT_EQ(v, dflt);
  }
  for (const char* bad : {"maybe", "2", "y", "10", "truee", "o n"}) {
    bool v = true;
    EXPECT_FALSE(ParseBool(bad, &v)) << bad;
    EXPECT_TRUE(v) << bad;  // left alone
  }
}

// Every on/off variable goes through ParseBool: the same words everywhere
// (TRACER_CUDA took no "yes"/"no" before).
TEST(ConfigTest, EverySwitchReadsTheSameWords) {
  FakeEnv env;
  env.vars = {{"TRACER_ENABLE", "No"}, {"TRACER_FORCE_OVERWRITE", "yes"}, {"TRACER_CUDA", "no"}};
  ConfigResult r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.config.enabled);
  EXPECT_TRUE(r.config.force_overwrite);
  EXPECT_FALSE(r.config.cuda);
  for (const char* name : {"TRACER_ENABLE", "TRACER_FORCE_OVERWRITE", "TRACER_CUDA"}) {
    env.vars = {{name, "maybe"}};
    r = ParseConfig(env.fn());
    EXPECT_NE(r.error.find(std::string(name) + "='maybe' is not 0 or 1"), std::string::npos)
        << r.error;
  }
}

TEST(ConfigTest, ParsesEveryVariable) {
  FakeEnv env;
  env.vars = {{"TRACER_OUTPUT", "/tmp/x-%p-%h.trace"},
              {"TRACER_BUFFER_SIZE", "4M"},
              {"TRACER_BUFFER_FULL", "drop"},
              {"TRACER_FLUSH_INTERVAL_MS", "50"},
              {"TRACER_DOMAINS_INCLUDE", "a, b ,default"},
              {"TRACER_DOMAINS_EXCLUDE", "b"},
              {"TRACER_CAPTURE_RANGE", "step"},
              {"TRACER_CAPTURE_START", "3"},
              {"TRACER_CAPTURE_STOP", "5"},
              {"TRACER_LOG_LEVEL", "DEBUG"},
              {"TRACER_FORK", "none"},
              {"TRACER_CLOCK", " Monotonic "},
              {"TRACER_ACTIVITIES", "kernel,graph"},
              {"TRACER_CUPTI_BUFFER_SIZE", "16M"},
              {"TRACER_CUPTI_BUFFER_COUNT", "8"},
              {"TRACER_CUDA", "0"},
              {"TRACER_PM_METRICS", "sm__throughput,dram__bytes, basic"},
              {"TRACER_PM_INTERVAL_NS", "50000"},
              {"TRACER_PM_HW_BUFFER_SIZE", "256M"}};
  ConfigResult r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  const Config& c = r.config;
  EXPECT_EQ(c.output_template, "/tmp/x-%p-%h.trace");
  EXPECT_EQ(c.buffer_size, 4u << 20);
  EXPECT_FALSE(c.buffer_full_yield);
  EXPECT_EQ(c.flush_interval_ms, 50u);
  EXPECT_EQ(c.domains_include, (std::vector<std::string>{"a", "b", "default"}));
  EXPECT_TRUE(c.DomainEnabled("a"));
  EXPECT_FALSE(c.DomainEnabled("b"));  // exclude wins
  EXPECT_FALSE(c.DomainEnabled("c"));  // not included
  EXPECT_TRUE(c.DomainEnabled("default"));
  EXPECT_EQ(c.capture_range, "step");
  EXPECT_EQ(c.capture_start, 3u);
  EXPECT_EQ(c.capture_stop, 5u);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.fork, ForkMode::kNone);
  EXPECT_EQ(c.clock, ClockMode::kMonotonic);
  EXPECT_EQ(c.activities, kActivityKernel | kActivityGraph);
  EXPECT_EQ(c.cupti_buffer_size, 16u << 20);
  EXPECT_EQ(c.cupti_buffer_count, 8u);
  EXPECT_FALSE(c.cuda);
  // The preset expands in place (pm_metrics.h).
  EXPECT_EQ(c.pm_metrics, (std::vector<std::string>{
                              "sm__throughput", "dram__bytes",
                              "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                              "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                              "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}));
  EXPECT_EQ(c.pm_interval_ns, 50000u);
  EXPECT_EQ(c.pm_hw_buffer_size, 256u << 20);
  EXPECT_EQ(EffectiveValue(c, "TRACER_DOMAINS_INCLUDE"), "a,b,default");
  EXPECT_EQ(EffectiveValue(c, "TRACER_FORK"), "none");
  EXPECT_EQ(EffectiveValue(c, "TRACER_CLOCK"), "monotonic");
}

TEST(ConfigTest, ClockModes) {
  for (const auto& [text, mode] : {std::pair<const char*, ClockMode>{"auto", ClockMode::kAuto},
                                   {"TSC", ClockMode::kTsc},
                                   {"monotonic", ClockMode::kMonotonic}}) {
    FakeEnv env;
    env.vars = {{"TRACER_CLOCK", text}};
    ConfigResult r = ParseConfig(env.fn());
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.config.clock, mode) << text;
  }
  FakeEnv none;
  EXPECT_EQ(ParseConfig(none.fn()).config.clock, ClockMode::kAuto);
}

TEST(ConfigTest, CaptureStopDefaultsToStartAndZeroMeansNever) {
  FakeEnv env;
  env.vars = {{"TRACER_CAPTURE_RANGE", "step"}, {"TRACER_CAPTURE_START", "4"}};
  ConfigResult r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config.capture_stop, 4u);
  env.vars["TRACER_CAPTURE_STOP"] = "0";
  r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config.capture_stop, 0u);
}

TEST(ConfigTest, EnableZeroDisablesWithoutError) {
  for (const char* v : {"0", "false", "off", "no"}) {
    FakeEnv env;
    env.vars = {{"TRACER_ENABLE", v}};
    ConfigResult r = ParseConfig(env.fn());
    EXPECT_TRUE(r.ok()) << v;
    EXPECT_FALSE(r.config.enabled) << v;
  }
}

struct BadCase {
  const char* var;
  const char* value;
  std::vector<std::pair<const char*, const char*>> extra;
};

TEST(ConfigTest, EveryBadValueNamesTheVariableAndValue) {
  const BadCase cases[] = {
      {"TRACER_ENABLE", "maybe", {}},
      {"TRACER_OUTPUT", "x-%z.trace", {}},
      {"TRACER_OUTPUT", "x-%q.trace", {}},
      {"TRACER_OUTPUT", "x-%", {}},
      {"TRACER_OUTPUT", "", {}},
      {"TRACER_BUFFER_SIZE", "12Q", {}},
      {"TRACER_BUFFER_SIZE", "", {}},
      {"TRACER_BUFFER_SIZE", "100", {}},  // below 4K
      {"TRACER_BUFFER_SIZE", "99999999999999999999", {}},
      {"TRACER_BUFFER_SIZE", "4G", {}},  // above 1G per thread
      {"TRACER_BUFFER_SIZE", "256M", {{"TRACER_BUFFER_LIMIT", "128M"}}},
      {"TRACER_BUFFER_LIMIT", "lots", {}},
      {"TRACER_BUFFER_LIMIT", "1K", {}},
      {"TRACER_BUFFER_LIMIT", "100G", {}},
      {"TRACER_BUFFER_FULL", "block", {}},
      {"TRACER_FLUSH_INTERVAL_MS", "0", {}},
      {"TRACER_FLUSH_INTERVAL_MS", "fast", {}},
      {"TRACER_CAPTURE_START", "0", {{"TRACER_CAPTURE_RANGE", "step"}}},
      {"TRACER_CAPTURE_START", "-1", {{"TRACER_CAPTURE_RANGE", "step"}}},
      {"TRACER_CAPTURE_START", "2", {}},  // no range to count
      {"TRACER_CAPTURE_STOP", "x", {{"TRACER_CAPTURE_RANGE", "step"}}},
      {"TRACER_CAPTURE_STOP",
       "2",
       {{"TRACER_CAPTURE_RANGE", "step"}, {"TRACER_CAPTURE_START", "5"}}},
      {"TRACER_LOG_LEVEL", "loud", {}},
      {"TRACER_FORK", "parent", {}},
      {"TRACER_CLOCK", "rdtsc", {}},
      {"TRACER_CLOCK", "", {}},
      {"TRACER_ROOT_PID", "12ab", {}},
      {"TRACER_ACTIVITIES", "kernel,gpu", {}},
      {"TRACER_CUPTI_BUFFER_SIZE", "1K", {}},
      {"TRACER_CUPTI_BUFFER_SIZE", "lots", {}},
      {"TRACER_CUPTI_BUFFER_COUNT", "1", {}},
      {"TRACER_CUPTI_BUFFER_COUNT", "many", {}},
      {"TRACER_CUDA", "2", {}},
      {"TRACER_PM_INTERVAL_NS", "10", {}},
      {"TRACER_PM_INTERVAL_NS", "often", {}},
      {"TRACER_PM_INTERVAL_NS", "2000000000", {}},
      {"TRACER_PM_METRICS", "basic,sm active", {}},
      {"TRACER_PM_METRICS", "fast", {}},
      {"TRACER_PM_HW_BUFFER_SIZE", "4K", {}},
      {"TRACER_PM_HW_BUFFER_SIZE", "8G", {}},
      {"TRACER_PM_HW_BUFFER_SIZE", "big", {}},
  };
  for (const BadCase& c : cases) {
    FakeEnv env;
    env.vars[c.var] = c.value;
    for (const auto& [k, v] : c.extra) env.vars[k] = v;
    ConfigResult r = ParseConfig(env.fn());
    ASSERT_FALSE(r.ok()) << c.var << "=" << c.value;
    std::string expected = std::string(c.var) + "='";
    EXPECT_NE(r.error.find(expected), std::string::npos) << r.error;
    if (std::string(c.var) != "TRACER_CAPTURE_STOP" || c.extra.size() < 2) {
      EXPECT_NE(r.error.find(std::string("'") + c.value + "'"), std::string::npos) << r.error;
    }
    EXPECT_NE(r.error.find("tracing disabled"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << "one line: " << r.error;
  }
}

// Issue 12, defect 8: the total over all threads is bounded, by default and
// by the machine.
TEST(ConfigTest, BufferLimitBoundsAllThreadsTogether) {
  constexpr uint64_t kG = 1ull << 30, kM = 1ull << 20;
  FakeEnv env;
  ConfigResult r = ParseConfig(env.fn(), 16 * kG);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.buffer_limit, 512 * kM);
  EXPECT_EQ(EffectiveValue(r.config, "TRACER_BUFFER_LIMIT"), std::to_string(512 * kM));
  // A small machine: half its memory by default.
  r = ParseConfig(env.fn(), 512 * kM);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.buffer_limit, 256 * kM);
  // Unknown memory: the default.
  r = ParseConfig(env.fn(), 0);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.buffer_limit, 512 * kM);
  // Set by hand: up to half the machine.
  env.vars = {{"TRACER_BUFFER_LIMIT", "4G"}, {"TRACER_BUFFER_SIZE", "1G"}};
  r = ParseConfig(env.fn(), 8 * kG);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.buffer_limit, 4 * kG);
  EXPECT_EQ(r.config.buffer_size, kG);
  env.vars = {{"TRACER_BUFFER_LIMIT", "5G"}};
  r = ParseConfig(env.fn(), 8 * kG);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error,
            "TRACER_BUFFER_LIMIT='5G' is more than half of this machine's memory (8G); tracing "
            "disabled");
  // A limit below the default per-thread size shrinks that default.
  env.vars = {{"TRACER_BUFFER_LIMIT", "256K"}};
  r = ParseConfig(env.fn(), 8 * kG);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.buffer_size, 256u << 10);
}

TEST(ConfigTest, ParseSizeSuffixes) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseSize("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(ParseSize("64k", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(ParseSize("4M", &v));
  EXPECT_EQ(v, 4u << 20);
  EXPECT_TRUE(ParseSize("2GB", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_FALSE(ParseSize("M", &v));
  EXPECT_FALSE(ParseSize("4X", &v));
  EXPECT_FALSE(ParseSize("-4M", &v));
}

TEST(ConfigTest, OutputTemplateExpansion) {
  FakeEnv env;
  env.vars = {{"RANK", "3"}, {"JOB", "j42"}};
  std::string out, err;
  ASSERT_TRUE(
      ExpandOutputTemplate("r%r-%h-%p-%q{JOB}-%%.trace", 1234, "node7", env.fn(), &out, &err))
      << err;
  EXPECT_EQ(out, "r3-node7-1234-j42-%.trace");
  // LOCAL_RANK when RANK is absent; 0 when neither is set; unset %q is empty.
  FakeEnv local;
  local.vars = {{"LOCAL_RANK", "5"}};
  ASSERT_TRUE(ExpandOutputTemplate("%r", 1, "h", local.fn(), &out, &err));
  EXPECT_EQ(out, "5");
  FakeEnv none;
  ASSERT_TRUE(ExpandOutputTemplate("%r-%q{NOPE}x", 1, "h", none.fn(), &out, &err));
  EXPECT_EQ(out, "0-x");
  EXPECT_EQ(RankFromEnv(none.fn()), -1);
  EXPECT_EQ(RankFromEnv(env.fn()), 3);
  EXPECT_FALSE(ExpandOutputTemplate("%y", 1, "h", none.fn(), &out, &err));
  EXPECT_NE(err.find("%y"), std::string::npos);
  EXPECT_FALSE(ExpandOutputTemplate("%q{}", 1, "h", none.fn(), &out, &err));
}

// Each launcher's rank variable alone gives the rank: torchrun (RANK), srun
// (SLURM_PROCID), Open MPI (OMPI_COMM_WORLD_RANK), MPICH/Hydra (PMI_RANK),
// and LOCAL_RANK as the last resort.
TEST(ConfigTest, RankFromEachLauncherVariable) {
  for (const char* var :
       {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK"}) {
    FakeEnv env;
    env.vars = {{var, "6"}};
    EXPECT_EQ(RankFromEnv(env.fn()), 6) << var;
    EXPECT_EQ(RankInfoFromEnv(env.fn()).rank, 6) << var;
  }
}

TEST(ConfigTest, RankPrecedence) {
  // torchrun under srun: RANK (the program's rank) wins over SLURM_PROCID.
  FakeEnv env;
  env.vars = {{"RANK", "3"},
              {"SLURM_PROCID", "1"},
              {"OMPI_COMM_WORLD_RANK", "2"},
              {"PMI_RANK", "4"},
              {"LOCAL_RANK", "0"}};
  EXPECT_EQ(RankFromEnv(env.fn()), 3);
  env.vars.erase("RANK");
  EXPECT_EQ(RankFromEnv(env.fn()), 1);
  env.vars.erase("SLURM_PROCID");
  EXPECT_EQ(RankFromEnv(env.fn()), 2);
  env.vars.erase("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(RankFromEnv(env.fn()), 4);
  env.vars.erase("PMI_RANK");
  EXPECT_EQ(RankFromEnv(env.fn()), 0);  // LOCAL_RANK, last
  // A value that is not a rank is skipped, as if unset.
  env.vars = {{"RANK", "x"}, {"SLURM_PROCID", "-1"}, {"PMI_RANK", "9"}};
  EXPECT_EQ(RankFromEnv(env.fn()), 9);
  env.vars = {{"RANK", "4294967296"}};
  EXPECT_EQ(RankFromEnv(env.fn()), -1);
}

TEST(ConfigTest, WorldSizeAndLocalRankPrecedence) {
  FakeEnv none;
  RankInfo r = RankInfoFromEnv(none.fn());
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(r.world_size, 0);
  EXPECT_EQ(r.local_rank, -1);
  EXPECT_EQ(r.device, "");
  EXPECT_EQ(r.cuda_visible_devices, "");

  FakeEnv env;
  env.vars = {{"WORLD_SIZE", "8"},
              {"SLURM_NTASKS", "16"},
              {"OMPI_COMM_WORLD_SIZE", "32"},
              {"PMI_SIZE", "64"},
              {"LOCAL_RANK", "1"},
              {"SLURM_LOCALID", "2"},
              {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}};
  const std::pair<const char*, const char*> size_then_local[] = {
      {"WORLD_SIZE", "LOCAL_RANK"},
      {"SLURM_NTASKS", "SLURM_LOCALID"},
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}};
  const int sizes[] = {8, 16, 32};
  const int locals[] = {1, 2, 3};
  for (int i = 0; i < 3; ++i) {
    r = RankInfoFromEnv(env.fn());
    EXPECT_EQ(r.world_size, sizes[i]) << size_then_local[i].first;
    EXPECT_EQ(r.local_rank, locals[i]) << size_then_local[i].second;
    env.vars.erase(size_then_local[i].first);
    env.vars.erase(size_then_local[i].second);
  }
  r = RankInfoFromEnv(env.fn());
  EXPECT_EQ(r.world_size, 64);  // PMI_SIZE
  EXPECT_EQ(r.local_rank, -1);
}

TEST(ConfigTest, ExpectedDeviceFromVisibleDevicesAndLocalRank) {
  FakeEnv env;
  env.vars = {{"LOCAL_RANK", "1"}};
  EXPECT_EQ(RankInfoFromEnv(env.fn()).device, "1");  // cuda:LOCAL_RANK, all GPUs visible
  env.vars["CUDA_VISIBLE_DEVICES"] = "4,5,6";
  RankInfo r = RankInfoFromEnv(env.fn());
  EXPECT_EQ(r.device, "5");  // entry 1 of the visible list
  EXPECT_EQ(r.cuda_visible_devices, "4,5,6");
  env.vars["CUDA_VISIBLE_DEVICES"] = "GPU-8a1b";  // one GPU per rank (srun --gpus-per-task)
  EXPECT_EQ(RankInfoFromEnv(env.fn()).device, "GPU-8a1b");
  env.vars["LOCAL_RANK"] = "7";  // past the list: unknown
  env.vars["CUDA_VISIBLE_DEVICES"] = "0,1";
  EXPECT_EQ(RankInfoFromEnv(env.fn()).device, "");
  env.vars.erase("LOCAL_RANK");  // several visible, no local rank: unknown
  EXPECT_EQ(RankInfoFromEnv(env.fn()).device, "");
}

TEST(ConfigTest, DefaultOutputIsNamedByRankWhenARankIsKnown) {
  FakeEnv env;
  env.vars = {{"SLURM_PROCID", "5"}};
  ConfigResult r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.output_template, "tracer-rank%r-%p.trace");
  EXPECT_EQ(EffectiveValue(r.config, "TRACER_OUTPUT"), "tracer-rank%r-%p.trace");
  std::string out, err;
  ASSERT_TRUE(ExpandOutputTemplate(r.config.output_template, 42, "h", env.fn(), &out, &err));
  EXPECT_EQ(out, "tracer-rank5-42.trace");
  // The user's name is kept as given.
  env.vars["TRACER_OUTPUT"] = "mine-%p.trace";
  r = ParseConfig(env.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.output_template, "mine-%p.trace");
  // No rank: the single-process default.
  FakeEnv none;
  none.vars = {{"WORLD_SIZE", "2"}};
  r = ParseConfig(none.fn());
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.config.output_template, "tracer-%p.trace");
}

}  // namespace
}  // namespace tracer
