// End-to-end: real NVTX clients (tests/capture/clients/nvtx_client.cc, the
// lora_step sample, the Python nvtx package) run under libtracer.so through
// both load paths; the trace is read with the generated protobuf classes.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "tests/capture/e2e/e2e_util.h"

namespace tracer::testing {
namespace {

class LoadPathTest : public ::testing::TestWithParam<LoadPath> {};

const proto::Range* Only(const ParsedTrace& t, const std::string& name) {
  auto v = t.RangesNamed(name);
  EXPECT_EQ(v.size(), 1u) << name;
  return v.size() == 1 ? v[0] : nullptr;
}

// nvtx_client basic: see Basic() in the client for what it does.
TEST_P(LoadPathTest, BasicClientRecordsEveryApi) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, "basic"}, {{"TRACER_OUTPUT", dir.File("t.trace")}}, GetParam());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // LD_PRELOAD asks for CUDA tracing too (it sets CUDA_INJECTION64_PATH):
  // without a driver that is the one line saying CUPTI is unavailable.
  const bool no_driver = access("/proc/driver/nvidia/version", F_OK) != 0;
  EXPECT_EQ(r.err, GetParam() == LoadPath::kPreload && no_driver
                       ? "tracer: CUPTI unavailable: no NVIDIA driver on this machine (no "
                         "/proc/driver/nvidia), so no CUDA call reached the tracer; NVTX ranges "
                         "only, with CPU times\n"
                       : "");
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  EXPECT_EQ(t.header.pid() > 0, true);
  EXPECT_EQ(t.header.parent_pid(), 0u);
  EXPECT_EQ(t.header.command_line(1), "basic");

  const proto::Range* outer = Only(t, "outer");
  const proto::Range* wide = Only(t, "wide_\xc3\xa9");  // L"wide_é" as UTF-8
  const proto::Range* ex = Only(t, "ex_colored");
  ASSERT_TRUE(outer && wide && ex);
  EXPECT_EQ(outer->depth(), 0u);
  EXPECT_EQ(wide->parent_id(), outer->id());
  EXPECT_EQ(ex->parent_id(), outer->id());
  EXPECT_EQ(ex->depth(), 1u);
  EXPECT_EQ(ex->color(), 0xFF00FF00u);
  EXPECT_EQ(ex->category(), 7u);
  EXPECT_EQ(ex->payload().i64(), -42);
  EXPECT_EQ(t.Name(t.threads.at(outer->thread()).name()), "main_thread");

  const proto::Range* cross = Only(t, "cross_thread");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->kind(), proto::RANGE_START_END);
  EXPECT_EQ(cross->thread(), outer->thread());
  EXPECT_NE(cross->end_thread(), cross->thread());
  EXPECT_EQ(t.Name(t.threads.at(cross->end_thread()).name()), "ender");

  const proto::Range* reg = Only(t, "registered_name");
  ASSERT_TRUE(reg);
  ASSERT_TRUE(t.domains.count(reg->domain()));
  EXPECT_EQ(t.Name(t.domains.at(reg->domain()).name()), "my_domain");
  EXPECT_EQ(reg->category(), 3u);
  EXPECT_EQ(reg->payload().f64(), 2.5);
  const proto::Range* dstart = Only(t, "domain_start");
  ASSERT_TRUE(dstart);
  EXPECT_EQ(dstart->domain(), reg->domain());
  EXPECT_EQ(dstart->kind(), proto::RANGE_START_END);
  const proto::Range* other = Only(t, "other_range");
  ASSERT_TRUE(other);
  EXPECT_EQ(t.Name(t.domains.at(other->domain()).name()), "other_domain");
  EXPECT_TRUE(Only(t, "wide_start"));

  std::map<std::string, const proto::Mark*> marks;
  for (const auto& m : t.marks) marks[t.Name(m.name())] = &m;
  ASSERT_EQ(marks.size(), 3u);
  ASSERT_TRUE(marks.count("mark_a") && marks.count("domain_mark") && marks.count("wide_mark"));
  EXPECT_GE(marks["mark_a"]->time_ns(), ex->start_ns());
  EXPECT_LE(marks["mark_a"]->time_ns(), ex->end_ns());
  EXPECT_EQ(marks["domain_mark"]->payload().u64(), 99u);
  EXPECT_EQ(marks["domain_mark"]->domain(), reg->domain());

  std::set<std::pair<uint32_t, std::string>> cats;
  for (const auto& c : t.categories) cats.insert({c.category(), t.Name(c.name())});
  EXPECT_TRUE(cats.count({7, "cat_seven"}));
  EXPECT_TRUE(cats.count({3, "dom_cat"}));
  EXPECT_EQ(t.ranges.size(), 8u);
  EXPECT_EQ(FooterValue(t.footer, "stats", "ranges_left_open"), 0u);
}

// nvtx_client stress 16 2000: 16 threads x 2000 x (outer_<t%4> > inner, se).
TEST_P(LoadPathTest, SixteenThreadStressExactCounts) {
  TempDir dir;
  const int threads = 16, iters = 2000;
  RunResult r = RunProgram(
      {NVTX_CLIENT, "stress", std::to_string(threads), std::to_string(iters)},
      {{"TRACER_OUTPUT", dir.File("s.trace")}, {"TRACER_FLUSH_INTERVAL_MS", "20"}}, GetParam());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("s.trace"));
  ExpectWellFormed(t);
  auto counts = CountByName(t);
  EXPECT_EQ(counts["inner"], static_cast<size_t>(threads * iters));
  EXPECT_EQ(counts["se"], static_cast<size_t>(threads * iters));
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(counts["outer_" + std::to_string(k)], static_cast<size_t>(threads / 4 * iters));
  }
  // Every inner sits in an outer of its own thread; 16 threads defined.
  std::map<uint64_t, const proto::Range*> by_id;
  for (const auto& x : t.ranges) by_id[x.id()] = &x;
  std::set<uint32_t> thread_ids;
  for (const auto& x : t.ranges) {
    thread_ids.insert(x.thread());
    if (t.Name(x.name()) == "inner") {
      ASSERT_TRUE(by_id.count(x.parent_id()));
      EXPECT_EQ(t.Name(by_id[x.parent_id()]->name()).rfind("outer_", 0), 0u);
    }
  }
  EXPECT_EQ(thread_ids.size(), static_cast<size_t>(threads));
  std::string causes;
  for (const auto& c : t.footer.dropped_by_cause()) {
    causes += " " + c.name() + "=" + std::to_string(c.value());
  }
  EXPECT_EQ(t.footer.dropped_by_cause_size(), 0) << "dropped:" << causes << "\n" << r.err;
}

INSTANTIATE_TEST_SUITE_P(BothLoadPaths, LoadPathTest,
                         ::testing::Values(LoadPath::kNvtxInjectionEnv, LoadPath::kPreload),
                         [](const auto& info) {
                           return info.param == LoadPath::kPreload ? "LdPreload"
                                                                   : "NvtxInjectionPath";
                         });

// TRACER_CLOCK: whatever the clock reads (the TSC by default where it is
// invariant, clock_gettime when forced), every timestamp is CLOCK_MONOTONIC
// ns: the client's ranges lie between CLOCK_MONOTONIC read before it started
// and after it ended, and the header says what was read.
TEST(CaptureE2E, EveryClockModeRecordsOnTheClockMonotonicTimeline) {
  auto mono = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  for (const char* mode : {"monotonic", "auto", "tsc"}) {
    TempDir dir;
    const uint64_t before = mono();
    RunResult r = RunProgram({NVTX_CLIENT, "basic"},
                             {{"TRACER_OUTPUT", dir.File("t.trace")}, {"TRACER_CLOCK", mode}},
                             LoadPath::kNvtxInjectionEnv);
    const uint64_t after = mono();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
    ExpectWellFormed(t);
    const std::string described = t.header.clock().description();
    EXPECT_EQ(described.rfind("CLOCK_MONOTONIC, ns", 0), 0u) << described;
    if (std::string(mode) == "monotonic") {
      EXPECT_EQ(described, "CLOCK_MONOTONIC, ns");
    } else if (std::string(mode) == "tsc" && described == "CLOCK_MONOTONIC, ns") {
      // No invariant TSC here: the fallback says so in one line.
      EXPECT_NE(r.err.find("TRACER_CLOCK=tsc"), std::string::npos) << r.err;
    }
    ASSERT_FALSE(t.ranges.empty());
    for (const proto::Range& range : t.ranges) {
      EXPECT_GE(range.start_ns(), before) << mode;
      EXPECT_LE(range.start_ns(), range.end_ns()) << mode;
      EXPECT_LE(range.end_ns(), after) << mode;
    }
  }
}

TEST(CaptureE2E, RingFullDropsAreCountedAndConsistent) {
  TempDir dir;
  const int iters = 20000;
  // 4K ring = 128 events, a 1 s flush interval: most events must drop.
  RunResult r = RunProgram({NVTX_CLIENT, "stress", "1", std::to_string(iters)},
                           {{"TRACER_OUTPUT", dir.File("d.trace")},
                            {"TRACER_BUFFER_SIZE", "4K"},
                            {"TRACER_FLUSH_INTERVAL_MS", "1000"}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("buffer was full"), std::string::npos) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("d.trace"));
  ExpectWellFormed(t);
  uint64_t dropped = FooterValue(t.footer, "dropped_by_cause", "nvtx_ring_full");
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(t.counters["dropped.nvtx_ring_full"], dropped);  // deltas sum to the total
  // Every push either recorded (with its pop: none left open) or dropped; an
  // "se" start/end range is recorded unless its start dropped; a dropped end
  // leaves it unclosed.
  uint64_t unclosed = 0;
  for (const auto& x : t.ranges) {
    if (x.flags() & proto::RANGE_FLAG_UNCLOSED) {
      ++unclosed;
      EXPECT_EQ(t.Name(x.name()), "se");
    }
  }
  EXPECT_EQ(t.ranges.size() + dropped - unclosed, static_cast<uint64_t>(3 * iters));
}

TEST(CaptureE2E, TruncatedAndCorruptFilesKeepEveryFrameBeforeTheDamage) {
  TempDir dir;
  // slow 5: five ranges 5 ms apart with a 1 ms flush interval, so the file
  // holds several frames (the client waits for a frame after each range).
  RunResult r =
      RunProgram({NVTX_CLIENT, "slow", "5"},
                 {{"TRACER_OUTPUT", dir.File("f.trace")}, {"TRACER_FLUSH_INTERVAL_MS", "1"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string bytes = ReadFileBytes(dir.File("f.trace"));
  ParsedTrace full = ReadTraceBytes(bytes);
  ExpectWellFormed(full);
  ASSERT_GE(full.frames, 3u);
  // Frame boundaries.
  std::vector<size_t> ends;
  size_t pos = 8;
  while (pos + 8 <= bytes.size()) {
    uint32_t len;
    memcpy(&len, bytes.data() + pos, 4);
    pos += 8 + len;
    ends.push_back(pos);
  }
  ASSERT_EQ(ends.size(), full.frames);
  // Cut inside the last frame: all earlier frames parse, no footer.
  size_t cut = ends[ends.size() - 2] + 5;
  ParsedTrace torn = ReadTraceBytes(bytes.substr(0, cut));
  EXPECT_EQ(torn.frames, full.frames - 1);
  EXPECT_FALSE(torn.has_footer);
  EXPECT_EQ(torn.stop_reason, "torn frame header");
  ParsedTrace torn2 = ReadTraceBytes(bytes.substr(0, ends[ends.size() - 2] + 20));
  EXPECT_EQ(torn2.stop_reason, "torn payload");
  // Flip one byte inside the second frame's payload: the CRC stops the reader
  // after the first frame.
  std::string flipped = bytes;
  flipped[ends[0] + 8 + 3] ^= 0x40;
  ParsedTrace bad = ReadTraceBytes(flipped);
  EXPECT_EQ(bad.frames, 1u);
  EXPECT_EQ(bad.stop_reason, "crc mismatch");
  EXPECT_TRUE(bad.has_header);
}

TEST(CaptureE2E, BadConfigurationLeavesTheHostAlone) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, "exitcode", "7"},
                 {{"TRACER_OUTPUT", dir.File("never.trace")}, {"TRACER_BUFFER_SIZE", "12Q"}},
                 LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.err, "tracer: TRACER_BUFFER_SIZE='12Q' is not a size (e.g. 4M); tracing disabled\n");
  EXPECT_TRUE(dir.List().empty());
}

TEST(CaptureE2E, UnwritableOutputLeavesTheHostAlone) {
  RunResult r = RunProgram({NVTX_CLIENT, "exitcode", "9"},
                           {{"TRACER_OUTPUT", "/nonexistent_dir_for_tracer/x.trace"}},
                           LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(r.exit_code, 9);
  EXPECT_NE(r.err.find("cannot create '/nonexistent_dir_for_tracer/x.trace'"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(CaptureE2E, TracerEnableZeroWritesNothing) {
  TempDir dir;
  for (LoadPath load : {LoadPath::kNvtxInjectionEnv, LoadPath::kPreload}) {
    RunResult r =
        RunProgram({NVTX_CLIENT, "basic"},
                   {{"TRACER_OUTPUT", dir.File("off.trace")}, {"TRACER_ENABLE", "0"}}, load);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.err, "");
  }
  EXPECT_TRUE(dir.List().empty());
}

TEST(CaptureE2E, ForkedChildWritesItsOwnFile) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "fork"}, {{"TRACER_OUTPUT", dir.File("p-%p.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  ParsedTrace a = ReadTraceFile(dir.File(files[0]));
  ParsedTrace b = ReadTraceFile(dir.File(files[1]));
  const ParsedTrace& parent = a.header.parent_pid() == 0 ? a : b;
  const ParsedTrace& child = a.header.parent_pid() == 0 ? b : a;
  ExpectWellFormed(parent);
  ExpectWellFormed(child);
  EXPECT_EQ(child.header.parent_pid(), parent.header.pid());
  EXPECT_NE(child.header.pid(), parent.header.pid());
  auto pc = CountByName(parent);
  auto cc = CountByName(child);
  EXPECT_EQ(pc["parent_before"], 1u);
  EXPECT_EQ(pc["parent_after"], 1u);
  EXPECT_EQ(pc.count("child_range"), 0u);
  EXPECT_EQ(cc["child_range"], 1u);
  EXPECT_EQ(cc.count("parent_before"), 0u);  // not inherited
  EXPECT_EQ(child.ranges.size(), 1u);
}

TEST(CaptureE2E, ForkedChildWithoutPidInTemplateGetsASuffix) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "fork"}, {{"TRACER_OUTPUT", dir.File("run.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  std::set<std::string> names(files.begin(), files.end());
  ASSERT_TRUE(names.count("run.trace"));
  ParsedTrace parent = ReadTraceFile(dir.File("run.trace"));
  EXPECT_EQ(parent.header.parent_pid(), 0u);
  EXPECT_EQ(CountByName(parent)["parent_after"], 1u);
}

// A forked child leaving with _exit() (as multiprocessing workers do) runs no
// atexit handler: its top-level ranges are written soon after they end, by
// the writer thread (the client lingers until its file grew). The long
// flush interval leaves the drain its pop requested as the only way the
// range reaches the file, and keeps the parent's writer asleep as it forks
// (see InForkedChild in the client).
TEST(CaptureE2E, ForkedChildLeavingWithUnderscoreExitKeepsItsRanges) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, "fork_exit"},
                 {{"TRACER_OUTPUT", dir.File("q-%p.trace")}, {"TRACER_FLUSH_INTERVAL_MS", "60000"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  ParsedTrace a = ReadTraceFile(dir.File(files[0]));
  ParsedTrace b = ReadTraceFile(dir.File(files[1]));
  const ParsedTrace& child = a.header.parent_pid() != 0 ? a : b;
  ExpectWellFormed(child, /*expect_footer=*/false);
  EXPECT_FALSE(child.has_footer);  // _exit: no clean close
  EXPECT_EQ(CountByName(child)["child_quick"], 1u) << r.err;
}

// In a forked child a top-level pop only wakes the writer thread: the
// client forbids write() on its main thread (seccomp kills the process on
// one) before its second range, so a pop that drained the writer on the
// application thread would kill it. The long flush interval leaves the
// requested drain as the only way the range reaches the file.
TEST(CaptureE2E, ForkedChildPopNeverWritesOnTheApplicationThread) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, "fork_nonblocking"},
                 {{"TRACER_OUTPUT", dir.File("w-%p.trace")}, {"TRACER_FLUSH_INTERVAL_MS", "60000"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_NE(r.exit_code, 4) << "seccomp unavailable here";
  ASSERT_EQ(r.exit_code, 0) << "child exit 3/5: range not written; 100+31: wrote on the app "
                               "thread\n"
                            << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  ParsedTrace a = ReadTraceFile(dir.File(files[0]));
  ParsedTrace b = ReadTraceFile(dir.File(files[1]));
  const ParsedTrace& child = a.header.parent_pid() != 0 ? a : b;
  ExpectWellFormed(child, /*expect_footer=*/false);
  auto counts = CountByName(child);
  EXPECT_EQ(counts["child_first"], 1u);
  EXPECT_EQ(counts["child_no_write"], 1u);
}

// Several NVTX instances (one per library that bundles NVTX) initializing
// at the same time share one session and one default domain: every
// instance's range is recorded in domain 0, once.
TEST(CaptureE2E, ConcurrentNvtxInstancesInitializeIntoOneSession) {
  TempDir dir;
  constexpr int kInstances = 8;
  RunResult r =
      RunProgram({NVTX_CLIENT, "multi_init", NVTX_INSTANCE_LIB, std::to_string(kInstances)},
                 {{"TRACER_OUTPUT", dir.File("m.trace")}}, LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(dir.List().size(), 1u);
  ParsedTrace t = ReadTraceFile(dir.File("m.trace"));
  ExpectWellFormed(t);
  auto counts = CountByName(t);
  for (int i = 0; i < kInstances; ++i) {
    EXPECT_EQ(counts["instance_" + std::to_string(i)], 1u) << i;
  }
  EXPECT_EQ(counts["main_after"], 1u);
  for (const auto& x : t.ranges) EXPECT_EQ(x.domain(), 0u) << t.Name(x.name());
}

// Runs an NVTX client mode that forks, with TRACER_FORK=none, and returns the
// range counts of the one trace that must be left (the parent's).
std::map<std::string, size_t> RunForkNone(const char* mode, const std::string& output_name,
                                          LoadPath load) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, mode},
                 {{"TRACER_OUTPUT", dir.File(output_name)}, {"TRACER_FORK", "none"}}, load);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto files = dir.List();
  EXPECT_EQ(files.size(), 1u);
  if (files.size() != 1) return {};
  ParsedTrace t = ReadTraceFile(dir.File(files[0]));
  ExpectWellFormed(t);
  return CountByName(t);
}

TEST(CaptureE2E, ForkNoneChildTracesNothing) {
  auto counts = RunForkNone("fork", "n-%p.trace", LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(counts["parent_after"], 1u);
  EXPECT_EQ(counts.count("child_range"), 0u);
}

// A child forked before the library was loaded inherits no session; the
// LD_PRELOAD constructor's TRACER_ROOT_PID still tells it apart from the
// traced program, so it neither clobbers the parent's file nor ignores
// TRACER_FORK.
TEST(CaptureE2E, ChildForkedBeforeFirstNvtxCallIsStillAChild) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "fork_early"}, {{"TRACER_OUTPUT", dir.File("run.trace")}},
                           LoadPath::kPreload);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  ParsedTrace parent = ReadTraceFile(dir.File("run.trace"));
  ExpectWellFormed(parent);
  EXPECT_EQ(parent.header.parent_pid(), 0u);
  EXPECT_EQ(CountByName(parent)["parent_work"], 1u);
  EXPECT_EQ(CountByName(parent).count("child_work"), 0u);
  const std::string child_file = files[0] == "run.trace" ? files[1] : files[0];
  ParsedTrace child = ReadTraceFile(dir.File(child_file));
  ExpectWellFormed(child);
  EXPECT_EQ(child.header.parent_pid(), parent.header.pid());
  EXPECT_EQ(child_file, "run-" + std::to_string(child.header.pid()) + ".trace");
  EXPECT_EQ(CountByName(child)["child_work"], 1u);
}

TEST(CaptureE2E, ChildForkedBeforeFirstNvtxCallHonoursForkNone) {
  auto counts = RunForkNone("fork_early", "run.trace", LoadPath::kPreload);
  EXPECT_EQ(counts["parent_work"], 1u);
  EXPECT_EQ(counts.count("child_work"), 0u);
}

TEST(CaptureE2E, ExitWithOpenRangesMarksThemUnclosed) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "exit_open"}, {{"TRACER_OUTPUT", dir.File("e.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(r.exit_code, 3);
  ParsedTrace t = ReadTraceFile(dir.File("e.trace"));
  ExpectWellFormed(t);
  ASSERT_TRUE(t.has_footer);
  EXPECT_EQ(FooterValue(t.footer, "stats", "ranges_left_open"), 3u);
  for (const char* name : {"open_a", "open_b", "open_start"}) {
    const proto::Range* x = Only(t, name);
    ASSERT_TRUE(x);
    EXPECT_EQ(x->flags() & proto::RANGE_FLAG_UNCLOSED, proto::RANGE_FLAG_UNCLOSED) << name;
    EXPECT_LE(x->end_ns(), t.footer.session_end_trace_ns());
  }
  EXPECT_EQ(Only(t, "open_b")->parent_id(), Only(t, "open_a")->id());
  EXPECT_EQ(Only(t, "closed_one")->flags(), 0u);
}

TEST(CaptureE2E, CaptureWindowRecordsTheNthToMthInstances) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "window", "6"},
                           {{"TRACER_OUTPUT", dir.File("w.trace")},
                            {"TRACER_CAPTURE_RANGE", "step"},
                            {"TRACER_CAPTURE_START", "2"},
                            {"TRACER_CAPTURE_STOP", "4"}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("w.trace"));
  ExpectWellFormed(t);
  auto c = CountByName(t);
  EXPECT_EQ(c["step"], 3u);  // instances 2, 3, 4
  EXPECT_EQ(c["work"], 3u);
}

// Issue 11: step numbers are the program's own. Capture from the 2nd
// "step" to the 4th records steps 1, 2 and 3 (0-based, as the program
// counts them); the tracer writes where capture began (counter
// capture_range_first_occurrence) and every report numbers from it.
TEST(CaptureE2E, CaptureStartKeepsTheProgramsStepNumbers) {
  TempDir dir;
  const std::string out = dir.File("cs.trace");
  RunResult r = RunProgram({TRACER_CLI, "run", "--capture-range", "step", "--capture-start", "2",
                            "--capture-stop", "4", "-o", out, "--", NVTX_CLIENT, "window", "6"},
                           {}, LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(out);
  ExpectWellFormed(t);
  EXPECT_EQ(CountByName(t)["step"], 3u);
  EXPECT_EQ(t.counters["capture_range_first_occurrence"], 2u);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string csv = dir.File("phases.csv");
  r = RunProgram({TRACER_CLI, "report", out, "--table", "phases", "--format", "csv", "-o", csv}, {},
                 LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = slurp(csv);
  EXPECT_EQ(text.find("\n0,"), std::string::npos) << text;
  for (const char* row : {"\n1,", "\n2,", "\n3,", "\nall,"}) {
    EXPECT_NE(text.find(row), std::string::npos) << row << " in\n" << text;
  }
  // --steps counts the same way: step 0 was never captured.
  r = RunProgram({TRACER_CLI, "report", out, "--steps", "0"}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("holds steps 1 to 3"), std::string::npos) << r.err;
  const std::string two = dir.File("two.csv");
  r = RunProgram({TRACER_CLI, "report", out, "--steps", "2-", "--table", "phases", "--format",
                  "csv", "-o", two},
                 {}, LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  text = slurp(two);
  EXPECT_EQ(text.find("\n1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\n2,"), std::string::npos) << text;
  EXPECT_NE(text.find("\n3,"), std::string::npos) << text;
  const std::string timeline = dir.File("timeline.txt");
  r = RunProgram(
      {TRACER_CLI, "report", out, "--steps", "2-", "--table", "timeline", "-o", timeline}, {},
      LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(timeline).find("Timeline of step #2"), std::string::npos) << slurp(timeline);
}

TEST(CaptureE2E, DomainExcludeDropsOnlyThatDomain) {
  TempDir dir;
  RunResult r =
      RunProgram({NVTX_CLIENT, "basic"},
                 {{"TRACER_OUTPUT", dir.File("x.trace")}, {"TRACER_DOMAINS_EXCLUDE", "my_domain"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("x.trace"));
  ExpectWellFormed(t);
  auto c = CountByName(t);
  EXPECT_EQ(c.count("registered_name"), 0u);
  EXPECT_EQ(c.count("domain_start"), 0u);
  EXPECT_EQ(c["other_range"], 1u);
  EXPECT_EQ(c["outer"], 1u);
  // Only the default domain.
  TempDir dir2;
  r = RunProgram({NVTX_CLIENT, "basic"},
                 {{"TRACER_OUTPUT", dir2.File("y.trace")}, {"TRACER_DOMAINS_INCLUDE", "default"}},
                 LoadPath::kNvtxInjectionEnv);
  ParsedTrace t2 = ReadTraceFile(dir2.File("y.trace"));
  ExpectWellFormed(t2);
  for (const auto& x : t2.ranges) EXPECT_EQ(x.domain(), 0u) << t2.Name(x.name());
  EXPECT_EQ(CountByName(t2)["outer"], 1u);
}

TEST(CaptureE2E, PythonNvtxPackageIsTraced) {
  RunResult probe = RunProgram({PYTHON_EXE, "-c", "import nvtx"}, {}, LoadPath::kNone);
  if (probe.exit_code != 0) GTEST_SKIP() << "python nvtx package not installed: " << probe.err;
  TempDir dir;
  const char* script =
      "import nvtx, threading\n"
      "with nvtx.annotate('py_outer', color='red'):\n"
      "    for i in range(3):\n"
      "        nvtx.push_range('py_inner', domain='pydomain', payload=i)\n"
      "        nvtx.pop_range(domain='pydomain')\n"
      "    r = nvtx.start_range('py_start')\n"
      "    nvtx.mark('py_mark')\n"
      "    nvtx.end_range(r)\n"
      "@nvtx.annotate('py_func')\n"
      "def f():\n"
      "    pass\n"
      "t = threading.Thread(target=f)\n"
      "t.start(); t.join()\n";
  for (LoadPath load : {LoadPath::kNvtxInjectionEnv, LoadPath::kPreload}) {
    std::string out = dir.File(load == LoadPath::kPreload ? "pre.trace" : "inj.trace");
    RunResult r = RunProgram({PYTHON_EXE, "-c", script}, {{"TRACER_OUTPUT", out}}, load);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ParsedTrace t = ReadTraceFile(out);
    ExpectWellFormed(t);
    auto c = CountByName(t);
    EXPECT_EQ(c["py_outer"], 1u);
    EXPECT_EQ(c["py_inner"], 3u);
    EXPECT_EQ(c["py_start"], 1u);
    EXPECT_EQ(c["py_func"], 1u);
    EXPECT_EQ(t.marks.size(), 1u);
    const proto::Range* outer = Only(t, "py_outer");
    const proto::Range* func = Only(t, "py_func");
    ASSERT_TRUE(outer && func);
    EXPECT_NE(func->thread(), outer->thread());
    std::set<uint64_t> payloads;
    for (const auto* x : t.RangesNamed("py_inner")) {
      ASSERT_TRUE(t.domains.count(x->domain()));
      EXPECT_EQ(t.Name(t.domains.at(x->domain()).name()), "pydomain");
      payloads.insert(x->payload().value_case() == proto::Payload::kI64
                          ? static_cast<uint64_t>(x->payload().i64())
                          : x->payload().u64());
      // Different domain from py_outer's ("NVTX"), so no push/pop parent link.
      EXPECT_GE(x->start_ns(), outer->start_ns());
      EXPECT_LE(x->end_ns(), outer->end_ns());
    }
    EXPECT_EQ(payloads, (std::set<uint64_t>{0, 1, 2}));
  }
}

TEST(CaptureE2E, TracerRunPassesExitCodesAndSaysWhereTheTraceWent) {
  TempDir dir;
  std::string out = dir.File("run.trace");
  RunResult r = RunProgram({TRACER_CLI, "run", "-o", out, "--", NVTX_CLIENT, "exitcode", "5"}, {},
                           LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("tracer: trace written to " + out), std::string::npos) << r.err;
  ParsedTrace t = ReadTraceFile(out);
  ExpectWellFormed(t);
  EXPECT_EQ(CountByName(t)["before_exit"], 1u);
  // Options become TRACER_* variables recorded in the header.
  bool found = false;
  for (const auto& kv : t.header.config()) {
    if (kv.key() == "TRACER_OUTPUT") found = kv.value() == out;
  }
  EXPECT_TRUE(found);

  r = RunProgram(
      {TRACER_CLI, "run", "-o", dir.File("sig.trace"), "--", NVTX_CLIENT, "signal", "15"}, {},
      LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 128 + 15);
  r = RunProgram({TRACER_CLI, "run", "--", "/nonexistent/program"}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run '/nonexistent/program'"), std::string::npos) << r.err;
  r = RunProgram({TRACER_CLI, "run", "--buffer-size", "12Q", "-o", dir.File("bad.trace"), "--",
                  NVTX_CLIENT, "exitcode", "4"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("TRACER_BUFFER_SIZE='12Q'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no trace was written"), std::string::npos) << r.err;
  r = RunProgram({TRACER_CLI, "run", "--help"}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  r = RunProgram({TRACER_CLI, "run", "-o", dir.File("pre.trace"), "--preload", "--", NVTX_CLIENT,
                  "exitcode", "0"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(CountByName(ReadTraceFile(dir.File("pre.trace")))["before_exit"], 1u);
}

TEST(CaptureE2E, TracerRunReportsAMissingLibraryClearly) {
  RunResult r = RunProgram({TRACER_CLI, "run", "--", NVTX_CLIENT, "exitcode", "0"},
                           {{"TRACER_LIBRARY", "/nonexistent/libtracer.so"}}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("libtracer.so not found"), std::string::npos) << r.err;
}

// The lora_step sample: the range structure documented at its top.
TEST(CaptureE2E, LoraStepSampleHasTheDocumentedStructure) {
  TempDir dir;
  RunResult r = RunProgram({LORA_STEP, "--layers", "3", "--adapters", "2", "--steps", "2"},
                           {{"TRACER_OUTPUT", dir.File("l.trace")}}, LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("l.trace"));
  ExpectWellFormed(t);
  auto c = CountByName(t);
  const size_t steps = 2, layers = 3;
  EXPECT_EQ(c["step"], steps);
  EXPECT_EQ(c["forward"], steps);
  EXPECT_EQ(c["backward"], steps);
  EXPECT_EQ(c["optimizer"], steps);
  EXPECT_EQ(c["load_batch"], steps);
  for (size_t l = 0; l < layers; ++l) {
    std::string L = std::to_string(l);
    EXPECT_EQ(c["f_q_" + L], steps);
    EXPECT_EQ(c["f_lora_a_alpaca_" + L], 4 * steps);  // q, k, v, o
    EXPECT_EQ(c["f_lora_b_gsm8k_" + L], 4 * steps);
    EXPECT_EQ(c["b_lora_a_alpaca_" + L], 4 * steps);  // wo, wv, wk, wq
    EXPECT_EQ(c["b_checkpoint_" + L], steps);
    EXPECT_EQ(c["f_w2_add_" + L], steps);
  }
  EXPECT_EQ(c.count("f_q_3"), 0u);
  std::map<uint64_t, const proto::Range*> by_id;
  for (const auto& x : t.ranges) by_id[x.id()] = &x;
  auto thread_name = [&](const proto::Range* x) {
    return t.Name(t.threads.at(x->thread()).name());
  };
  for (const auto& x : t.ranges) {
    std::string name = t.Name(x.name());
    if (name == "f_lora_a_alpaca_1") {
      std::string parent = t.Name(by_id.at(x.parent_id())->name());
      EXPECT_TRUE(parent == "f_q_1" || parent == "f_k_1" || parent == "f_v_1" || parent == "f_o_1")
          << parent;
      EXPECT_EQ(x.depth(), 3u);  // step(0) > forward(1) > f_q_1(2) > leaf(3)
    }
    if (name == "f_q_0") EXPECT_EQ(t.Name(by_id.at(x.parent_id())->name()), "forward");
    if (name.rfind("b_", 0) == 0) {
      EXPECT_EQ(thread_name(&x), "autograd_worker") << name;
      EXPECT_EQ(x.depth(), 0u) << name;
    }
    if (name == "load_batch") EXPECT_EQ(thread_name(&x), "data_loader");
    if (name == "step") EXPECT_EQ(thread_name(&x), "main");
  }
  // The backward worker's ranges lie inside the main thread's backward range.
  auto bwd = t.RangesNamed("backward");
  ASSERT_EQ(bwd.size(), steps);
  size_t inside = 0;
  for (const auto& x : t.ranges) {
    if (t.Name(x.name()) != "b_loss") continue;
    for (const auto* b : bwd) {
      if (x.start_ns() >= b->start_ns() && x.end_ns() <= b->end_ns()) ++inside;
    }
  }
  EXPECT_EQ(inside, steps);
}

// The defined dynamic symbols of a library (nm -D --defined-only).
std::set<std::string> DefinedDynamicSymbols(const TempDir& dir, const char* lib) {
  std::string out = dir.File("nm_defined.txt");
  std::string cmd = std::string("nm -D --defined-only ") + lib + " > " + out;
  EXPECT_EQ(system(cmd.c_str()), 0);
  std::ifstream in(out);
  std::set<std::string> exported;
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) exported.insert(line.substr(sp + 1));
  }
  return exported;
}

TEST(InjectionLibrary, ExportsExactlyTheEntryPoints) {
  TempDir dir;
  std::set<std::string> exported = DefinedDynamicSymbols(dir, TRACER_LIB);
  std::string out = dir.File("nm.txt");
  ASSERT_EQ(system((std::string("nm -D --defined-only ") + TRACER_LIB + " > " + out).c_str()), 0);
  // InitializeInjection (the CUDA entry) is there once cuda_injection.cc is.
  std::set<std::string> allowed = {"InitializeInjectionNvtx2",
                                   "InitializeInjection",
                                   "tracerFlush",
                                   "tracerStart",
                                   "tracerStop",
                                   "tracerIsActive"};
  for (const auto& s : exported) EXPECT_TRUE(allowed.count(s)) << "unexpected export " << s;
  for (const char* s :
       {"InitializeInjectionNvtx2", "tracerFlush", "tracerStart", "tracerStop", "tracerIsActive"}) {
    EXPECT_TRUE(exported.count(s)) << s << " not exported";
  }
  // No protobuf anywhere (not even undefined), no spdlog/fmt exported.
  std::string all = dir.File("nm_all.txt");
  ASSERT_EQ(system((std::string("nm -D ") + TRACER_LIB + " > " + all).c_str()), 0);
  std::string text = ReadFileBytes(all);
  EXPECT_EQ(text.find("google"), std::string::npos);
  EXPECT_EQ(text.find("protobuf"), std::string::npos);
  std::string defined = ReadFileBytes(out);
  EXPECT_EQ(defined.find("spdlog"), std::string::npos);
  EXPECT_EQ(defined.find("fmt"), std::string::npos);
}

// Test hooks live in the test variant only: the product's dynamic symbol
// table (defined or not) names none, the variant exports exactly the
// product's symbols plus the hooks.
TEST(InjectionLibrary, TestHooksOnlyInTheTestVariant) {
  TempDir dir;
  std::string all = dir.File("nm_all.txt");
  ASSERT_EQ(system((std::string("nm -D ") + TRACER_LIB + " > " + all).c_str()), 0);
  const std::string text = ReadFileBytes(all);
  EXPECT_EQ(text.find("tracerTest"), std::string::npos) << text;
  EXPECT_EQ(text.find("SetTestClock"), std::string::npos) << text;
  const std::set<std::string> product = DefinedDynamicSymbols(dir, TRACER_LIB);
  std::set<std::string> test_variant = DefinedDynamicSymbols(dir, TRACER_TEST_LIB);
  EXPECT_EQ(test_variant.erase("tracerTestSetClockNs"), 1u);
  EXPECT_EQ(test_variant.erase("tracerTestAddShutdownHook"), 1u);
  EXPECT_EQ(test_variant, product);
}

// nvtx_client names: the name caches key ASCII names by address and check
// the text; a buffer reused with other text (shorter, longer, longer than a
// page, non-ASCII bytes), wide names and 8 threads' reused buffers all give
// each range the name its text had when it was pushed, in push order; with
// ticks from the TSC (the push's inline path) and from clock_gettime (its
// own path, TRACER_CLOCK=monotonic) alike.
class ReusedBuffersTest : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(EveryClock, ReusedBuffersTest, ::testing::Values("auto", "monotonic"));
TEST_P(ReusedBuffersTest, ReusedBuffersNameEveryRangeByItsText) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "names"},
                           {{"TRACER_OUTPUT", dir.File("t.trace")}, {"TRACER_CLOCK", GetParam()}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("t.trace"));
  ExpectWellFormed(t);
  const std::vector<std::string> texts = {"fwd",
                                          "fwd.",
                                          "",
                                          "layer_1.attention",
                                          "layer_2.attention",
                                          "layer_1",
                                          "model.layers.17.self_attn.q_proj.lora_A.default",
                                          std::string(300, 'n'),
                                          std::string(300, 'n') + "m",
                                          std::string(5000, 'h'),
                                          "na\xc3\xafve_\xce\xbb",
                                          "na\xc3\xafve_\xce\xbc",
                                          "layer_1.attention"};
  std::map<std::string, size_t> want;
  std::vector<std::string> main_order;
  for (const std::string& text : texts) {
    want[text] += 4;  // 3 nvtxRangePushA + 1 nvtxRangePushEx
    for (int i = 0; i < 4; ++i) main_order.push_back(text);
  }
  for (int i = 0; i < 3; ++i) {
    const std::string wide = "wide_\xce\xbb_" + std::to_string(i);  // L"wide_λ_i"
    want[wide] = 1;
    main_order.push_back(wide);
  }
  for (int th = 0; th < 8; ++th) {
    for (int i = 0; i < 200; ++i) ++want["t" + std::to_string(th) + "_i" + std::to_string(i % 17)];
  }
  want["shared_literal"] = 8 * 200;
  EXPECT_EQ(CountByName(t), want);

  // The main thread's ranges, by start time, in the order it pushed them.
  ASSERT_FALSE(t.ranges.empty());
  const proto::Range* first = t.RangesNamed("fwd").empty() ? nullptr : t.RangesNamed("fwd")[0];
  ASSERT_TRUE(first);
  std::vector<const proto::Range*> mine;
  for (const auto& range : t.ranges) {
    if (range.thread() == first->thread()) mine.push_back(&range);
  }
  std::sort(mine.begin(), mine.end(), [](const proto::Range* a, const proto::Range* b) {
    return a->start_ns() != b->start_ns() ? a->start_ns() < b->start_ns() : a->id() < b->id();
  });
  std::vector<std::string> got;
  for (const proto::Range* range : mine) got.push_back(t.Name(range->name()));
  EXPECT_EQ(got, main_order);
}

}  // namespace
}  // namespace tracer::testing
