// No C boundary of libtracer.so lets a failure reach its host: every
// allocation the tracer makes inside a chosen entry point fails (the test
// build libtracer_faults.so, see alloc_faults.cc), and the host must keep
// running with its exit code unchanged, the tracer must say so in exactly one
// line per failing entry point, and the trace must stay readable (by the
// protobuf test reader and by `tracer report`).
//
// Hosts: tests/capture/clients/nvtx_client.cc entry_points (every NVTX entry
// point and the control API, exit code 7) and the fake driver replaying
// cuda_entry_points.scn through the fake libcupti (every CUPTI callback, exit
// code 5).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/capture/e2e/e2e_util.h"
#include "tests/cupti/trace_reader.h"

namespace tracer::testing {
namespace {

constexpr int kClientExit = 7;
constexpr int kDriverExit = 5;

// "tracer: <entry> failed (<what>); <consequence>" lines (entry_guard.cc).
std::vector<std::string> FailureLines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("tracer: ", 0) == 0 && line.find(" failed (") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

int TracerLines(const std::string& err) {
  int n = 0;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) n += line.rfind("tracer: ", 0) == 0;
  return n;
}

// A failing entry point says exactly one line, and nothing else is said:
// the line names what failed (part).
void ExpectOneFailureLine(const std::string& err, const std::string& part) {
  const std::vector<std::string> lines = FailureLines(err);
  ASSERT_EQ(lines.size(), 1u) << err;
  EXPECT_EQ(TracerLines(err), 1) << err;
  EXPECT_NE(lines[0].find(part), std::string::npos) << lines[0];
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// `tracer report` reads the file and exits 0.
bool ReportReads(const std::string& path) {
  RunResult r =
      RunProgram({"/bin/sh", "-c", std::string(TRACER_CLI) + " report '" + path + "' >/dev/null"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0;
}

// Texts longer than the string table's arena block (64 KiB): interning each
// one allocates inside the call. A short text new to the process is interned
// without allocating (lock-free index, arena blocks of 64 KiB), so with short
// texts the entry points that only intern allocate nothing.
constexpr size_t kLongNamePad = 70000;

RunResult RunClient(const TempDir& dir, std::map<std::string, std::string> env,
                    LoadPath load = LoadPath::kNvtxInjectionEnv, size_t pad = 0) {
  env["TRACER_OUTPUT"] = dir.File("t.trace");
  return RunProgram({NVTX_CLIENT, "entry_points", std::to_string(kClientExit), std::to_string(pad)},
                    env, load);
}

RunResult RunDriver(const TempDir& dir, std::map<std::string, std::string> env) {
  env["TRACER_OUTPUT"] = dir.File("t.trace");
  env["CUDA_INJECTION64_PATH"] = TRACER_LIB;
  env["TRACER_CUPTI_LIBRARY"] = FAKE_CUPTI;
  return RunProgram({FAKE_DRIVER, CUDA_SCENARIO}, env, LoadPath::kNvtxInjectionEnv);
}

std::map<std::string, std::string> Failing(const std::string& entries) {
  return {{"TRACER_TEST_FAIL_ALLOC", entries}};
}

// Names of ranges, marks, categories and domains.
std::set<std::string> RecordedNames(const ParsedTrace& t) {
  std::set<std::string> names;
  for (const auto& r : t.ranges) names.insert(t.Name(r.name()));
  for (const auto& m : t.marks) names.insert(t.Name(m.name()));
  for (const auto& c : t.categories) names.insert(t.Name(c.name()));
  for (const auto& [id, d] : t.domains) names.insert(t.Name(d.name()));
  return names;
}

// What nvtx_client entry_points records, by the entry point that records it.
const std::map<std::string, std::vector<std::string>>& NamesByEntry() {
  static const auto* names = new std::map<std::string, std::vector<std::string>>{
      {"nvtxMarkA", {"first", "mark_a", "active_again"}},
      {"nvtxMarkW", {"mark_w"}},
      {"nvtxMarkEx", {"mark_ex"}},
      {"nvtxRangePushA", {"push_a", "last"}},
      {"nvtxRangePushW", {"push_w"}},
      {"nvtxRangePushEx", {"push_ex"}},
      {"nvtxRangeStartA", {"start_a"}},
      {"nvtxRangeStartW", {"start_w"}},
      {"nvtxRangeStartEx", {"start_ex"}},
      {"nvtxNameCategoryA", {"cat_a"}},
      {"nvtxNameCategoryW", {"cat_w"}},
      {"nvtxDomainCreateA", {"domain_a"}},
      {"nvtxDomainCreateW", {"domain_w"}},
      {"nvtxDomainNameCategoryA", {"dcat_a"}},
      {"nvtxDomainNameCategoryW", {"dcat_w"}},
      {"nvtxDomainRegisterStringA", {"registered_a"}},
      {"nvtxDomainRegisterStringW", {"registered_w"}},
      {"nvtxDomainMarkEx", {"dmark"}},
      {"nvtxDomainRangePushEx", {"dpush"}},
      {"nvtxDomainRangeStartEx", {"dstart"}},
  };
  return *names;
}

// Push / start entry points open an unnamed range when they fail, so the
// matching pop / end still pairs.
bool OpensUnnamedRange(const std::string& entry) {
  return entry.find("Push") != std::string::npos || entry.find("Start") != std::string::npos;
}

// The host ran to its end, with its own exit code.
void ExpectHostUnaffected(const RunResult& r, int code) { EXPECT_EQ(r.exit_code, code) << r.err; }

// A trace that exists is readable: clean framing, no definition problems.
void ExpectReadable(const std::string& path, const ParsedTrace& t, bool expect_footer) {
  EXPECT_TRUE(t.magic_ok);
  EXPECT_EQ(t.stop_reason, "");
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  EXPECT_TRUE(t.has_header);
  EXPECT_EQ(t.has_footer, expect_footer);
  ReportReads(path);
}

// ---- Sanity: the test build fails nothing unless asked, and neither build
// exports more than the entry points (a visible operator new would replace
// the host's).

TEST(EntryGuard, TestBuildTracesNormallyWhenNothingFails) {
  TempDir dir;
  RunResult r = RunClient(dir, {});
  ExpectHostUnaffected(r, kClientExit);
  EXPECT_EQ(r.err, "entry_points done\n");
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  std::set<std::string> names = RecordedNames(t);
  for (const auto& [entry, made] : NamesByEntry()) {
    for (const auto& n : made) EXPECT_TRUE(names.count(n)) << n << " (" << entry << ")";
  }
  EXPECT_FALSE(names.count("while_stopped"));  // tracerStop closed the window
  EXPECT_EQ(t.RangesNamed("").size(), 0u);
}

std::set<std::string> DefinedDynamicSymbols(const TempDir& dir, const char* lib) {
  std::string out = dir.File("nm.txt");
  EXPECT_EQ(system((std::string("nm -D --defined-only ") + lib + " > " + out).c_str()), 0);
  std::istringstream in(ReadFileBytes(out));
  std::set<std::string> exported;
  std::string line;
  while (std::getline(in, line)) exported.insert(line.substr(line.rfind(' ') + 1));
  return exported;
}

// The fault build has the product's surface: its entry points and no test
// hook (those are in libtracer_test.so only).
TEST(EntryGuard, OnlyTheTestBuildCarriesTheFaultSwitch) {
  EXPECT_EQ(ReadFileBytes(PRODUCT_LIB).find("TRACER_TEST_FAIL_ALLOC"), std::string::npos);
  EXPECT_NE(ReadFileBytes(TRACER_LIB).find("TRACER_TEST_FAIL_ALLOC"), std::string::npos);
  TempDir dir;
  const std::set<std::string> exported = DefinedDynamicSymbols(dir, TRACER_LIB);
  EXPECT_EQ(exported,
            (std::set<std::string>{"InitializeInjectionNvtx2", "InitializeInjection", "tracerFlush",
                                   "tracerStart", "tracerStop", "tracerIsActive"}));
  EXPECT_EQ(exported, DefinedDynamicSymbols(dir, PRODUCT_LIB));
}

// ---- One NVTX entry point at a time.

class NvtxEntryFails : public ::testing::TestWithParam<std::string> {};

// Long texts, so every entry point that interns one allocates there.
TEST_P(NvtxEntryFails, HostRunsOnOneLineTraceReadable) {
  const std::string entry = GetParam();
  const std::string pad(kLongNamePad, '+');
  TempDir dir;
  RunResult r = RunClient(dir, Failing(entry), LoadPath::kNvtxInjectionEnv, kLongNamePad);
  ExpectHostUnaffected(r, kClientExit);
  EXPECT_NE(r.err.find("entry_points done"), std::string::npos);
  ExpectOneFailureLine(r.err, entry + " failed (std::bad_alloc)");

  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  ExpectReadable(dir.File("t.trace"), t, true);
  // The failed calls' records are missing, every other one is there: tracing
  // went on after the failure.
  std::set<std::string> names = RecordedNames(t);
  for (const auto& [other, made] : NamesByEntry()) {
    for (const auto& n : made) {
      EXPECT_EQ(names.count(n + pad), other == entry ? 0u : 1u) << n << " (" << other << ")";
    }
  }
  EXPECT_EQ(t.RangesNamed("").size(), OpensUnnamedRange(entry) ? 1u : 0u);
}

std::vector<std::string> AllocatingNvtxEntries() {
  std::vector<std::string> entries = {"nvtxNameOsThreadA", "nvtxNameOsThreadW"};
  for (const auto& [entry, made] : NamesByEntry()) entries.push_back(entry);
  return entries;
}

INSTANTIATE_TEST_SUITE_P(Nvtx, NvtxEntryFails, ::testing::ValuesIn(AllocatingNvtxEntries()));

// Entry points that allocate nothing in this program (short texts): armed,
// nothing fails, nothing is logged, nothing is lost. Besides the pops, ends
// and the control API, that is every entry point that only interns a text
// new to the process and records (the NVTX hot path), on a thread that has
// its state already.
class EntryWithoutAllocation : public ::testing::TestWithParam<std::string> {};

TEST_P(EntryWithoutAllocation, NothingFailsNothingLost) {
  TempDir dir;
  RunResult r = RunClient(dir, Failing(GetParam()));
  ExpectHostUnaffected(r, kClientExit);
  EXPECT_EQ(r.err, "entry_points done\n");
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  std::set<std::string> names = RecordedNames(t);
  for (const auto& [entry, made] : NamesByEntry()) {
    for (const auto& n : made) EXPECT_TRUE(names.count(n)) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Nvtx, EntryWithoutAllocation,
    ::testing::Values("nvtxRangePop", "nvtxRangeEnd", "nvtxDomainRangePop", "nvtxDomainRangeEnd",
                      "tracerStart", "tracerStop", "tracerIsActive", "tracerFlush",
                      "library destructor", "nvtxMarkW", "nvtxMarkEx", "nvtxRangePushW",
                      "nvtxRangePushEx", "nvtxRangeStartA", "nvtxRangeStartW", "nvtxRangeStartEx",
                      "nvtxDomainMarkEx", "nvtxDomainRangePushEx", "nvtxDomainRangeStartEx",
                      "nvtxDomainRegisterStringA", "nvtxDomainRegisterStringW"));

// ---- Start, shutdown and the writer thread.

TEST(EntryGuard, NvtxInitFailingLeavesTracingOff) {
  TempDir dir;
  RunResult r = RunClient(dir, Failing("InitializeInjectionNvtx2"));
  ExpectHostUnaffected(r, kClientExit);
  ExpectOneFailureLine(r.err, "InitializeInjectionNvtx2 failed (std::bad_alloc); tracing is off");
  EXPECT_FALSE(FileExists(dir.File("t.trace")));
}

TEST(EntryGuard, EveryEntryFailingUnderPreloadLeavesTracingOff) {
  TempDir dir;
  RunResult r = RunClient(dir, Failing("*"), LoadPath::kPreload);
  ExpectHostUnaffected(r, kClientExit);
  EXPECT_NE(r.err.find("entry_points done"), std::string::npos);
  ExpectOneFailureLine(r.err, "InitializeInjectionNvtx2 failed");
  EXPECT_FALSE(FileExists(dir.File("t.trace")));
}

// At info level, shutdown builds a message (allocates) after the final drain:
// that failure is reported and the trace is complete anyway.
TEST(EntryGuard, AtexitFailingAfterTheFinalDrainKeepsTheTrace) {
  TempDir dir;
  auto env = Failing("atexit handler");
  env["TRACER_LOG_LEVEL"] = "info";
  RunResult r = RunClient(dir, env);
  ExpectHostUnaffected(r, kClientExit);
  std::vector<std::string> lines = FailureLines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("atexit handler failed (std::bad_alloc)"), std::string::npos);
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  EXPECT_EQ(RecordedNames(t).count("last"), 1u);
}

// The writer thread fails its first pass: the file keeps its header, gets no
// more frames and no footer, and Stop does not wait for a dead writer.
TEST(EntryGuard, WriterThreadFailingEndsTheTraceCleanly) {
  TempDir dir;
  RunResult r = RunClient(dir, Failing("writer thread"));
  ExpectHostUnaffected(r, kClientExit);
  ExpectOneFailureLine(r.err,
                       "writer thread failed (std::bad_alloc); the trace ends at the last "
                       "frame written");
  EXPECT_EQ(r.err.find("did not finish"), std::string::npos) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectReadable(dir.File("t.trace"), t, false);
  EXPECT_TRUE(t.ranges.empty());
}

// ---- Every allocation of a run failing in turn (one at a time), and every
// allocation from the k-th on: the host never notices, each failing entry
// point is reported at most once, and any trace written is readable.

uint64_t CountArmedAllocations(const RunResult& r) {
  const std::string key = "alloc_faults: ";
  size_t at = r.err.find(key);
  return at == std::string::npos ? 0 : std::strtoull(r.err.c_str() + at + key.size(), nullptr, 10);
}

// In one process: each entry point reported at most once, and at most one
// line when a single allocation failed. A forked child inherits the
// allocation count and the reported set, so it may report once more.
void ExpectSurvives(const RunResult& r, int code, const TempDir& dir, bool one_shot, bool forks) {
  ExpectHostUnaffected(r, code);
  std::vector<std::string> lines = FailureLines(r.err);
  if (!forks) {
    std::set<std::string> entries;
    for (const auto& l : lines) {
      EXPECT_TRUE(entries.insert(l.substr(0, l.find(" failed ("))).second) << "twice: " << l;
    }
  }
  if (one_shot) {
    EXPECT_LE(lines.size(), forks ? 2u : 1u) << r.err;
  }
  for (const std::string& name : dir.List()) {
    SCOPED_TRACE(name);
    ParsedTrace t = ReadTraceFile(dir.File(name));
    EXPECT_TRUE(t.magic_ok);
    EXPECT_EQ(t.stop_reason, "");
    for (const auto& p : t.problems) ADD_FAILURE() << p;
    if (t.has_footer) ExpectWellFormed(t);
  }
}

using RunFn = std::function<RunResult(const TempDir&, const std::map<std::string, std::string>&)>;

void Sweep(RunFn run, int code, bool forks = false) {
  TempDir dir;
  auto env = Failing("*");
  env["TRACER_TEST_FAIL_ALLOC_SKIP"] = "1000000000";
  env["TRACER_TEST_FAIL_ALLOC_STATS"] = "1";
  const uint64_t total = CountArmedAllocations(run(dir, env));
  ASSERT_GT(total, 50u) << "the run should allocate inside its entry points";
  // Every allocation (a few hundred); an even spread of 1000 were there more.
  const uint64_t stride = total <= 1000 ? 1 : (total + 999) / 1000;
  int reported = 0;
  for (uint64_t k = 0; k < total; k += stride) {
    SCOPED_TRACE("allocation " + std::to_string(k) + " of " + std::to_string(total));
    TempDir d;
    auto one = Failing("*");
    one["TRACER_TEST_FAIL_ALLOC_SKIP"] = std::to_string(k);
    one["TRACER_TEST_FAIL_ALLOC_COUNT"] = "1";
    RunResult r = run(d, one);
    ExpectSurvives(r, code, d, true, forks);
    reported += static_cast<int>(FailureLines(r.err).size());
    if (k % (stride * 20) == 0) {
      TempDir d2;
      auto rest = Failing("*");
      rest["TRACER_TEST_FAIL_ALLOC_SKIP"] = std::to_string(k);
      ExpectSurvives(run(d2, rest), code, d2, false, forks);
    }
  }
  EXPECT_GT(reported, 0);
}

TEST(EntryGuard, NvtxHostSurvivesEachAllocationFailing) {
  Sweep([](const TempDir& d,
           const std::map<std::string, std::string>& env) { return RunClient(d, env); },
        kClientExit);
}

// A forked child starts its own session on its first NVTX call (fork
// handlers, the child's start, its eager drain after each top-level range);
// "fork" ends the child with exit(), "fork_exit" with _exit().
TEST(EntryGuard, ForkingHostSurvivesEachAllocationFailing) {
  for (const char* mode : {"fork", "fork_exit"}) {
    SCOPED_TRACE(mode);
    static const char* current;
    current = mode;
    Sweep(
        [](const TempDir& d, const std::map<std::string, std::string>& env) {
          auto e = env;
          e["TRACER_OUTPUT"] = d.File("t.trace");
          // A fork_exit child waits for its writer thread to write its range;
          // where a failure stopped that writer it would wait its full 10 s.
          e["NVTX_CLIENT_LINGER_MS"] = "300";
          return RunProgram({NVTX_CLIENT, current}, e, LoadPath::kNvtxInjectionEnv);
        },
        0, true);
  }
}

// ---- CUDA: the injection entry point and the CUPTI callbacks.

TEST(EntryGuard, CudaTestBuildTracesNormallyWhenNothingFails) {
  TempDir dir;
  RunResult r = RunDriver(dir, {});
  ExpectHostUnaffected(r, kDriverExit);
  EXPECT_EQ(FailureLines(r.err).size(), 0u) << r.err;
  TraceContents t = ReadTrace(dir.File("t.trace"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  std::set<std::string> kernels;
  for (const auto& k : t.kernels) kernels.insert(k.name);
  for (const char* k :
       {"gemm", "relu", "graph_kernel_0", "after_start", "no_nvtx_thread", "after_reset_kernel"}) {
    EXPECT_TRUE(kernels.count(k)) << k;
  }
  EXPECT_FALSE(kernels.count("while_stopped"));
  EXPECT_EQ(t.counters["cupti_callback_errors"], 0u);
}

TEST(EntryGuard, CuptiCallbackFailingIsCountedAndTracingGoesOn) {
  TempDir dir;
  RunResult r = RunDriver(dir, Failing("CUPTI callback"));
  ExpectHostUnaffected(r, kDriverExit);
  ExpectOneFailureLine(r.err, "CUPTI callback failed (std::bad_alloc)");
  TraceContents t = ReadTrace(dir.File("t.trace"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  EXPECT_GT(t.counters["cupti_callback_errors"], 0u);
  EXPECT_FALSE(t.kernels.empty());  // activity records do not go through the callback
  ReportReads(dir.File("t.trace"));
}

TEST(EntryGuard, CudaInitFailingLeavesNvtxTracing) {
  TempDir dir;
  RunResult r = RunDriver(dir, Failing("InitializeInjection"));
  ExpectHostUnaffected(r, kDriverExit);
  ExpectOneFailureLine(r.err,
                       "InitializeInjection failed (std::bad_alloc); GPU activity is not "
                       "traced; NVTX tracing goes on");
  TraceContents t = ReadTrace(dir.File("t.trace"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_FALSE(t.ranges.empty());
  ReportReads(dir.File("t.trace"));
}

// The pool's allocation fails (nullptr, not an exception): requests are
// declined, CUPTI drops and counts the records, nothing to report.
TEST(EntryGuard, BufferRequestFailingDropsGpuRecords) {
  TempDir dir;
  RunResult r = RunDriver(dir, Failing("CUPTI buffer request"));
  ExpectHostUnaffected(r, kDriverExit);
  EXPECT_EQ(FailureLines(r.err).size(), 0u) << r.err;
  TraceContents t = ReadTrace(dir.File("t.trace"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_GT(t.counters["cupti_buffer_pool_exhausted"], 0u);
  ReportReads(dir.File("t.trace"));
}

class CudaEntryWithoutAllocation : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaEntryWithoutAllocation, NothingFailsNothingLost) {
  TempDir dir;
  RunResult r = RunDriver(dir, Failing(GetParam()));
  ExpectHostUnaffected(r, kDriverExit);
  EXPECT_EQ(FailureLines(r.err).size(), 0u) << r.err;
  TraceContents t = ReadTrace(dir.File("t.trace"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  EXPECT_FALSE(t.kernels.empty());
}

INSTANTIATE_TEST_SUITE_P(Cupti, CudaEntryWithoutAllocation,
                         ::testing::Values("CUPTI buffer completion", "CUPTI timestamp callback"));

TEST(EntryGuard, CudaWriterThreadFailingEndsTheTraceCleanly) {
  TempDir dir;
  RunResult r = RunDriver(dir, Failing("writer thread"));
  ExpectHostUnaffected(r, kDriverExit);
  ExpectOneFailureLine(r.err, "writer thread failed");
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectReadable(dir.File("t.trace"), t, false);
}

TEST(EntryGuard, CudaHostSurvivesEachAllocationFailing) {
  Sweep([](const TempDir& d,
           const std::map<std::string, std::string>& env) { return RunDriver(d, env); },
        kDriverExit);
}

}  // namespace
}  // namespace tracer::testing
