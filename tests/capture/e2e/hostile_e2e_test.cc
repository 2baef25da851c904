// End-to-end, issue 12: a program that misuses the tracer's inputs (made-up
// NVTX handles and range ids, control calls before the first NVTX call,
// absurd buffer sizes, many threads, early forks and execs with the
// variables set by hand, planted links at the output path) keeps running,
// with its exit code, and every process's trace stays its own and readable.
// The client is tests/capture/clients/hostile_client.cc (real NVTX).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "tests/capture/e2e/e2e_util.h"

namespace tracer::testing {
namespace {

// The "maxrss_kb N" the client printed; -1 when absent.
long MaxRssKb(const std::string& err) {
  size_t at = err.find("maxrss_kb ");
  return at == std::string::npos ? -1 : atol(err.c_str() + at + 10);
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Defect 1: a registered-string handle the tracer never returned crashed the
// host (0xffffffff made Writer::EnsureString's resize wrap) or grew it by
// hundreds of MB (0xdeadbeef). Now the event is recorded with the empty name
// and counted.
TEST(HostileE2E, MadeUpRegisteredStringHandlesAreNamedEmptyAndCounted) {
  for (const char* handle : {"0xffffffff", "0xfffffff0", "0xdeadbeef", "0x100000005"}) {
    SCOPED_TRACE(handle);
    TempDir dir;
    RunResult r = RunProgram({HOSTILE_CLIENT, "bad_handle", handle},
                             {{"TRACER_OUTPUT", dir.File("h.trace")}}, LoadPath::kNvtxInjectionEnv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const long rss = MaxRssKb(r.err);
    EXPECT_GT(rss, 0) << r.err;
    EXPECT_LT(rss, 64 * 1024) << "the host grew to " << rss << " KB";
    EXPECT_NE(r.err.find("registered-string handle the tracer never returned"), std::string::npos)
        << r.err;
    ParsedTrace t = ReadTraceFile(dir.File("h.trace"));
    ExpectWellFormed(t);
    auto counts = CountByName(t);
    EXPECT_EQ(counts[""], 1u);
    EXPECT_EQ(counts["after"], 1u);
    ASSERT_EQ(t.marks.size(), 1u);
    EXPECT_EQ(t.Name(t.marks[0].name()), "");
    EXPECT_EQ(FooterValue(t.footer, "stats", "nvtx_invalid_string_handle"), 2u);  // push, mark
  }
}

// A domain handle the tracer never handed out (made up, another tool's
// freed pointer, a tagged value with an id never given, a destroyed domain's)
// used to be dereferenced as an NvtxDomain*. Now it is looked up, never read
// through: each call that needs the domain is dropped and counted, the rest
// of the run is recorded.
TEST(HostileE2E, MadeUpDomainHandlesAreDroppedAndCounted) {
  for (const char* kind :
       {"0xdeadbeef", "0xffffffffffffffff", "freed", "0x7d0e00000000fffe", "destroyed"}) {
    SCOPED_TRACE(kind);
    TempDir dir;
    RunResult r = RunProgram({HOSTILE_CLIENT, "bad_domain", kind},
                             {{"TRACER_OUTPUT", dir.File("d.trace")}}, LoadPath::kNvtxInjectionEnv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("domain handle the tracer never returned"), std::string::npos) << r.err;
    ParsedTrace t = ReadTraceFile(dir.File("d.trace"));
    ExpectWellFormed(t);
    auto counts = CountByName(t);
    EXPECT_EQ(counts["reg"], 1u);
    EXPECT_EQ(counts["after"], 1u);
    EXPECT_EQ(counts["bad_push"] + counts["bad_start"], 0u);
    EXPECT_TRUE(t.marks.empty());
    const bool destroyed = std::string(kind) == "destroyed";
    EXPECT_EQ(counts["before"], destroyed ? 1u : 0u);
    EXPECT_EQ(counts["revived"], destroyed ? 1u : 0u);
    // push, mark, pop, start, name category
    EXPECT_EQ(FooterValue(t.footer, "dropped_by_cause", "nvtx_invalid_domain_handle"), 5u);
  }
}

// Defect 2: one nvtxRangeEnd(~0ull) (bit 62, the capture-instance flag) used
// to close the capture window for good, silently. Made-up ids are ignored
// and counted; ranges after them are all recorded.
TEST(HostileE2E, MadeUpRangeEndIdsAreIgnoredAndCounted) {
  TempDir dir;
  RunResult r = RunProgram({HOSTILE_CLIENT, "bogus_end"}, {{"TRACER_OUTPUT", dir.File("e.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nvtxRangeEnd was called with an id no nvtxRangeStart returned"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Lines(r.err), 1u) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("e.trace"));
  ExpectWellFormed(t);
  auto counts = CountByName(t);
  EXPECT_EQ(counts["first"], 1u);
  EXPECT_EQ(counts["after"], 100u);
  EXPECT_EQ(counts["se"], 3u);
  EXPECT_EQ(FooterValue(t.footer, "dropped_by_cause", "nvtx_invalid_range_id"), 4u);
  // "first" ended twice: its second end reaches the decoder, which finds no
  // open start for it.
  EXPECT_EQ(FooterValue(t.footer, "stats", "nvtx_end_without_start"), 1u);
}

TEST(HostileE2E, MadeUpRangeEndIdsNeverMoveTheCaptureWindow) {
  TempDir dir;
  RunResult r = RunProgram({HOSTILE_CLIENT, "bogus_end_window", "5"},
                           {{"TRACER_OUTPUT", dir.File("w.trace")},
                            {"TRACER_CAPTURE_RANGE", "step"},
                            {"TRACER_CAPTURE_START", "1"},
                            {"TRACER_CAPTURE_STOP", "3"}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(dir.File("w.trace"));
  ExpectWellFormed(t);
  auto counts = CountByName(t);
  EXPECT_EQ(counts["step"], 3u);  // instances 1 to 3, the bogus ends between 1 and 2
  EXPECT_EQ(counts["work"], 3u);
  EXPECT_EQ(FooterValue(t.footer, "dropped_by_cause", "nvtx_invalid_range_id"), 4u);
}

// Defect 3: tracerStop() before the first NVTX call (no session yet) was
// ignored and the warm-up recorded.
TEST(HostileE2E, TracerStopBeforeTheFirstNvtxCallTakesEffect) {
  for (LoadPath load : {LoadPath::kNvtxInjectionEnv, LoadPath::kPreload}) {
    TempDir dir;
    RunResult r =
        RunProgram({HOSTILE_CLIENT, "stop_first"}, {{"TRACER_OUTPUT", dir.File("s.trace")}}, load);
    ASSERT_NE(r.exit_code, 3) << "control API not found";
    ASSERT_EQ(r.exit_code, 0) << "tracerIsActive() disagreed\n" << r.err;
    ParsedTrace t = ReadTraceFile(dir.File("s.trace"));
    ExpectWellFormed(t);
    auto counts = CountByName(t);
    EXPECT_EQ(counts.count("warmup"), 0u);
    EXPECT_EQ(counts["measured"], 5u);
  }
}

// Defect 8: TRACER_BUFFER_SIZE=4G was accepted. Absurd sizes are one line
// each, the program runs untraced with its exit code.
TEST(HostileE2E, AbsurdBufferSizesAreRefusedInOneLine) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string line;
  };
  const Case cases[] = {
      {{{"TRACER_BUFFER_SIZE", "4G"}},
       "tracer: TRACER_BUFFER_SIZE='4G' is out of range (4K to 1G per thread); tracing disabled\n"},
      {{{"TRACER_BUFFER_LIMIT", "1000G"}},
       "tracer: TRACER_BUFFER_LIMIT='1000G' is out of range (64K to 64G, all threads' buffers "
       "together); tracing disabled\n"},
      {{{"TRACER_BUFFER_SIZE", "256M"}, {"TRACER_BUFFER_LIMIT", "128M"}},
       "tracer: TRACER_BUFFER_SIZE='256M' is more than TRACER_BUFFER_LIMIT=128M, the bound on all "
       "threads' buffers together (raise TRACER_BUFFER_LIMIT or lower TRACER_BUFFER_SIZE); "
       "tracing disabled\n"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    auto env = c.env;
    env["TRACER_OUTPUT"] = dir.File("never.trace");
    RunResult r = RunProgram({HOSTILE_CLIENT, "exitcode", "7"}, env, LoadPath::kNvtxInjectionEnv);
    EXPECT_EQ(r.exit_code, 7);
    EXPECT_EQ(r.err, c.line);
    EXPECT_TRUE(dir.List().empty());
  }
  // tracer run --buffer-limit sets TRACER_BUFFER_LIMIT.
  TempDir dir;
  RunResult r = RunProgram({TRACER_CLI, "run", "--buffer-limit", "1000G", "-o", dir.File("x.trace"),
                            "--", HOSTILE_CLIENT, "exitcode", "7"},
                           {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.err.find("tracer: TRACER_BUFFER_LIMIT='1000G' is out of range"), std::string::npos)
      << r.err;
  EXPECT_TRUE(dir.List().empty());
}

// Defect 8: every thread's ring was memset when the thread registered, so
// 8 threads with 64M buffers held 512 MB however little they recorded.
TEST(HostileE2E, RingPagesBecomeResidentOnlyWhenWritten) {
  TempDir dir;
  RunResult r = RunProgram({HOSTILE_CLIENT, "threads", "8", "1000"},
                           {{"TRACER_OUTPUT", dir.File("r.trace")},
                            {"TRACER_BUFFER_SIZE", "64M"},
                            {"TRACER_BUFFER_LIMIT", "512M"}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const long rss = MaxRssKb(r.err);
  EXPECT_GT(rss, 0) << r.err;
  EXPECT_LT(rss, 64 * 1024) << "8 threads x 1000 ranges held " << rss << " KB";
  ParsedTrace t = ReadTraceFile(dir.File("r.trace"));
  ExpectWellFormed(t);
  EXPECT_EQ(CountByName(t)["busy"], 8000u);
}

// Defect 8: memory was bounded per thread only. With TRACER_BUFFER_LIMIT=32M
// and 16M per thread, two threads get full rings and the other six minimal
// ones (their overflow is dropped and counted): the writer drains only at
// exit here, so without the bound the eight rings would hold 100 MB.
TEST(HostileE2E, AllThreadsBuffersStayWithinTheLimit) {
  TempDir dir;
  const int threads = 8, iters = 200000;
  RunResult r =
      RunProgram({HOSTILE_CLIENT, "threads", std::to_string(threads), std::to_string(iters)},
                 {{"TRACER_OUTPUT", dir.File("l.trace")},
                  {"TRACER_BUFFER_SIZE", "16M"},
                  {"TRACER_BUFFER_LIMIT", "32M"},
                  {"TRACER_FLUSH_INTERVAL_MS", "600000"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const long rss = MaxRssKb(r.err);
  EXPECT_GT(rss, 0) << r.err;
  EXPECT_LT(rss, 64 * 1024) << rss << " KB";
  ParsedTrace t = ReadTraceFile(dir.File("l.trace"));
  ExpectWellFormed(t);
  const uint64_t dropped = FooterValue(t.footer, "dropped_by_cause", "nvtx_ring_full");
  const uint64_t busy = CountByName(t)["busy"];
  EXPECT_GT(dropped, 0u);
  EXPECT_GE(busy, 2u * iters);  // the two full rings hold all of theirs
  EXPECT_EQ(busy + dropped, static_cast<uint64_t>(threads) * iters);
  EXPECT_NE(r.err.find("TRACER_BUFFER_LIMIT"), std::string::npos) << r.err;
}

// Defect 5: with the variables set by hand (no `tracer run`, no LD_PRELOAD
// constructor to mark the root process), an early-forked child and an
// exec'ed one reused the parent's file name and corrupted it. Each process
// writes its own, readable file: the name carries the pid when another
// process of the run has the plain one.
std::map<std::string, ParsedTrace> ReadAll(const TempDir& dir) {
  std::map<std::string, ParsedTrace> out;
  for (const std::string& f : dir.List()) out.emplace(f, ReadTraceFile(dir.File(f)));
  return out;
}

void ExpectOwnFiles(const TempDir& dir, const std::string& base,
                    const std::map<std::string, size_t>& only_range_of_each_pid_file) {
  auto files = ReadAll(dir);
  ASSERT_EQ(files.size(), only_range_of_each_pid_file.size());
  std::set<uint32_t> pids;
  std::multiset<std::string> found;
  for (const auto& [name, t] : files) {
    SCOPED_TRACE(name);
    ExpectWellFormed(t);
    pids.insert(t.header.pid());
    const std::string with_pid = base + "-" + std::to_string(t.header.pid()) + ".trace";
    EXPECT_TRUE(name == base + ".trace" || name == with_pid) << name;
    ASSERT_EQ(t.ranges.size(), 1u);
    found.insert(t.Name(t.ranges[0].name()));
  }
  EXPECT_EQ(pids.size(), files.size());
  std::multiset<std::string> expected;
  for (const auto& [name, n] : only_range_of_each_pid_file) expected.insert(name);
  EXPECT_EQ(found, expected);
}

TEST(HostileE2E, ByHandChildForkedBeforeTheFirstNvtxCallWritesItsOwnFile) {
  for (const char* mode : {"fork_early", "fork_early_overlap"}) {
    SCOPED_TRACE(mode);
    TempDir dir;
    RunResult r = RunProgram({HOSTILE_CLIENT, mode}, {{"TRACER_OUTPUT", dir.File("run.trace")}},
                             LoadPath::kNvtxInjectionEnv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    ExpectOwnFiles(dir, "run", {{"child_work", 1}, {"parent_work", 1}});
  }
}

TEST(HostileE2E, ByHandExecedChildWritesItsOwnFile) {
  TempDir dir;
  RunResult r = RunProgram({HOSTILE_CLIENT, "exec"}, {{"TRACER_OUTPUT", dir.File("run.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = ReadAll(dir);
  ASSERT_EQ(files.size(), 2u);
  ASSERT_TRUE(files.count("run.trace"));
  const ParsedTrace& parent = files.at("run.trace");
  ExpectWellFormed(parent);
  auto pc = CountByName(parent);
  EXPECT_EQ(pc["before_exec"], 1u);
  EXPECT_EQ(pc["after_exec"], 1u);
  EXPECT_EQ(pc.count("exec_child_work"), 0u);
  for (const auto& [name, t] : files) {
    if (name == "run.trace") continue;
    ExpectWellFormed(t);
    EXPECT_EQ(name, "run-" + std::to_string(t.header.pid()) + ".trace");
    EXPECT_NE(t.header.pid(), parent.header.pid());
    EXPECT_EQ(CountByName(t)["exec_child_work"], 1u);
    EXPECT_EQ(t.ranges.size(), 1u);
  }
}

// A program that execs itself keeps its pid: even a %p name is taken.
TEST(HostileE2E, ProgramExecingItselfDoesNotOverwriteItsFirstFile) {
  TempDir dir;
  RunResult r =
      RunProgram({HOSTILE_CLIENT, "exec_direct"}, {{"TRACER_OUTPUT", dir.File("x-%p.trace")}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = ReadAll(dir);
  ASSERT_EQ(files.size(), 2u);
  uint32_t pid = files.begin()->second.header.pid();
  const std::string first = "x-" + std::to_string(pid) + ".trace";
  const std::string second = "x-" + std::to_string(pid) + "-" + std::to_string(pid) + ".trace";
  ASSERT_TRUE(files.count(first) && files.count(second));
  // The first image ended in exec: header, no footer, nothing torn.
  ExpectWellFormed(files.at(first), /*expect_footer=*/false);
  ExpectWellFormed(files.at(second));
  EXPECT_EQ(files.at(second).header.pid(), pid);
  EXPECT_EQ(CountByName(files.at(second))["exec_child_work"], 1u);
}

// Defect 6: the output followed symbolic links (O_CREAT | O_TRUNC): a link
// planted at a predictable name made a run overwrite the link's target.
TEST(HostileE2E, OutputPathThatIsASymbolicLinkIsRefused) {
  TempDir dir;
  WriteFile(dir.File("victim"), "precious");
  ASSERT_EQ(symlink(dir.File("victim").c_str(), dir.File("run.trace").c_str()), 0);
  RunResult r = RunProgram({HOSTILE_CLIENT, "exitcode", "3"},
                           {{"TRACER_OUTPUT", dir.File("run.trace")}}, LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(ReadFileBytes(dir.File("victim")), "precious");
  EXPECT_EQ(Lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("refusing to write the trace to '" + dir.File("run.trace") +
                       "': it is a symbolic link"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("TRACER_OUTPUT"), std::string::npos) << r.err;
  EXPECT_EQ(dir.List().size(), 2u);  // nothing created beside them
}

// The default name (tracer-<pid>.trace in the current directory), linked by
// "another user" before the program's first NVTX call.
TEST(HostileE2E, PlantedLinkAtTheDefaultNameIsRefused) {
  TempDir dir;
  WriteFile(dir.File("victim"), "precious");
  RunResult r = RunProgram({"/bin/sh", "-c",
                            "cd '" + dir.path() + "' && exec '" HOSTILE_CLIENT "' plant_link '" +
                                dir.File("victim") + "'"},
                           {}, LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileBytes(dir.File("victim")), "precious");
  EXPECT_EQ(Lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("it is a symbolic link"), std::string::npos) << r.err;
}

TEST(HostileE2E, OutputPathThatIsNotAPlainFileOfOursIsRefused) {
  TempDir dir;
  // A hard link to someone's file, and a FIFO (which must not block the host).
  WriteFile(dir.File("victim"), "precious");
  ASSERT_EQ(link(dir.File("victim").c_str(), dir.File("hard.trace").c_str()), 0);
  ASSERT_EQ(mkfifo(dir.File("fifo.trace").c_str(), 0600), 0);
  const std::pair<const char*, const char*> cases[] = {{"hard.trace", "has other hard links"},
                                                       {"fifo.trace", "not a regular file"}};
  for (const auto& [name, why] : cases) {
    RunResult r = RunProgram({HOSTILE_CLIENT, "exitcode", "4"}, {{"TRACER_OUTPUT", dir.File(name)}},
                             LoadPath::kNvtxInjectionEnv);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
  EXPECT_EQ(ReadFileBytes(dir.File("victim")), "precious");
  if (geteuid() == 0) {  // a file of another user (root can make one)
    WriteFile(dir.File("theirs.trace"), "theirs");
    ASSERT_EQ(chown(dir.File("theirs.trace").c_str(), 65534, 65534), 0);
    RunResult r =
        RunProgram({HOSTILE_CLIENT, "exitcode", "4"}, {{"TRACER_OUTPUT", dir.File("theirs.trace")}},
                   LoadPath::kNvtxInjectionEnv);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("belongs to another user (uid 65534)"), std::string::npos) << r.err;
    EXPECT_EQ(ReadFileBytes(dir.File("theirs.trace")), "theirs");
  }
}

// A trace of ours left by an earlier run is kept (issue 16: never
// overwritten silently; one line says so, the host is unaffected) and
// replaced with TRACER_FORCE_OVERWRITE=1.
TEST(HostileE2E, OwnStaleTraceFromAnEarlierRunIsReplacedOnlyWhenForced) {
  TempDir dir;
  WriteFile(dir.File("old.trace"), "an earlier run's trace");
  timespec hour_ago[2];
  clock_gettime(CLOCK_REALTIME, &hour_ago[0]);
  hour_ago[0].tv_sec -= 3600;
  hour_ago[1] = hour_ago[0];
  ASSERT_EQ(utimensat(AT_FDCWD, dir.File("old.trace").c_str(), hour_ago, 0), 0);
  RunResult r = RunProgram({HOSTILE_CLIENT, "exitcode", "3"},
                           {{"TRACER_OUTPUT", dir.File("old.trace")}}, LoadPath::kNvtxInjectionEnv);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("'" + dir.File("old.trace") + "' already exists"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tracing disabled"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(ReadFileBytes(dir.File("old.trace")), "an earlier run's trace");
  ASSERT_EQ(dir.List().size(), 1u);

  r = RunProgram({HOSTILE_CLIENT, "exitcode", "0"},
                 {{"TRACER_OUTPUT", dir.File("old.trace")}, {"TRACER_FORCE_OVERWRITE", "1"}},
                 LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(dir.List().size(), 1u);
  ParsedTrace t = ReadTraceFile(dir.File("old.trace"));
  ExpectWellFormed(t);
  EXPECT_EQ(CountByName(t)["before_exit"], 1u);
}

std::string RunIdOf(const ParsedTrace& t) {
  for (const auto& kv : t.header.config()) {
    if (kv.key() == "TRACER_RUN_ID") return kv.value();
  }
  return std::string();
}

void SetMtimeAhead(const std::string& path) {
  timespec ahead[2];
  clock_gettime(CLOCK_REALTIME, &ahead[0]);
  ahead[0].tv_sec += 60;
  ahead[1] = ahead[0];
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), ahead, 0), 0);
}

// A bare program (no `tracer run`) run twice back to back: the second finds
// the first's trace modified after it started (coarse clock ticks; set ahead
// here to make it certain), yet the run ids differ, so it is an earlier
// run's: kept and said so, or replaced under TRACER_FORCE_OVERWRITE -- the
// name is kept, never NAME-<pid>. (TRACER_CUDA=off: NVTX only, so no line
// says CUPTI is unavailable on a machine without a driver.)
TEST(HostileE2E, BareRunRightAfterAnEarlierOneTellsItsFileFromASiblings) {
  for (LoadPath load : {LoadPath::kNvtxInjectionEnv, LoadPath::kPreload}) {
    SCOPED_TRACE(load == LoadPath::kPreload ? "LD_PRELOAD" : "NVTX_INJECTION64_PATH");
    TempDir dir;
    const std::string out = dir.File("run.trace");
    RunResult r = RunProgram({NVTX_CLIENT, "exitcode", "0"},
                             {{"TRACER_OUTPUT", out}, {"TRACER_CUDA", "off"}}, load);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const ParsedTrace first = ReadTraceFile(out);
    ASSERT_FALSE(RunIdOf(first).empty());
    SetMtimeAhead(out);
    const std::string before = ReadFileBytes(out);

    r = RunProgram({NVTX_CLIENT, "exitcode", "0"}, {{"TRACER_OUTPUT", out}, {"TRACER_CUDA", "off"}},
                   load);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.err.find("'" + out + "' already exists"), std::string::npos) << r.err;
    EXPECT_EQ(ReadFileBytes(out), before);
    EXPECT_EQ(dir.List().size(), 1u);

    r = RunProgram(
        {NVTX_CLIENT, "exitcode", "0"},
        {{"TRACER_OUTPUT", out}, {"TRACER_FORCE_OVERWRITE", "1"}, {"TRACER_CUDA", "off"}}, load);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    ASSERT_EQ(dir.List().size(), 1u);
    ParsedTrace t = ReadTraceFile(out);
    ExpectWellFormed(t);
    EXPECT_NE(t.header.pid(), first.header.pid());
    EXPECT_NE(RunIdOf(t), RunIdOf(first));
    EXPECT_EQ(CountByName(t)["before_exit"], 1u);
  }
}

// Under TRACER_FORCE_OVERWRITE a file another process of the same run wrote
// and closed is still never replaced: a child forked before the library was
// loaded (it finished first), this program before it exec'ed itself.
TEST(HostileE2E, ForceOverwriteNeverReplacesAFileOfTheSameRun) {
  for (LoadPath load : {LoadPath::kNvtxInjectionEnv, LoadPath::kPreload}) {
    SCOPED_TRACE(load == LoadPath::kPreload ? "LD_PRELOAD" : "NVTX_INJECTION64_PATH");
    {
      TempDir dir;
      RunResult r = RunProgram({HOSTILE_CLIENT, "fork_early"},
                               {{"TRACER_OUTPUT", dir.File("run.trace")},
                                {"TRACER_FORCE_OVERWRITE", "1"},
                                {"TRACER_CUDA", "off"}},
                               load);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
      ExpectOwnFiles(dir, "run", {{"child_work", 1}, {"parent_work", 1}});
      auto files = ReadAll(dir);
      if (load == LoadPath::kPreload) {  // one id, handed down by the constructor
        ASSERT_EQ(files.size(), 2u);
        EXPECT_EQ(RunIdOf(files.begin()->second), RunIdOf(std::next(files.begin())->second));
      }
    }
    {
      TempDir dir;
      RunResult r = RunProgram({HOSTILE_CLIENT, "exec_direct"},
                               {{"TRACER_OUTPUT", dir.File("x-%p.trace")},
                                {"TRACER_FORCE_OVERWRITE", "1"},
                                {"TRACER_CUDA", "off"}},
                               load);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      auto files = ReadAll(dir);
      ASSERT_EQ(files.size(), 2u);
      const uint32_t pid = files.begin()->second.header.pid();
      EXPECT_TRUE(files.count("x-" + std::to_string(pid) + ".trace"));
      EXPECT_TRUE(files.count("x-" + std::to_string(pid) + "-" + std::to_string(pid) + ".trace"));
    }
  }
}

// Defect 6: `tracer run` said "trace written to" for every file in the
// directory matching the template (400 lines in a shared /tmp). It names
// exactly the files its processes wrote, once each.
TEST(HostileE2E, TracerRunNamesEachTraceOfItsProcessesOnce) {
  TempDir dir;
  // Files of other runs that match the template, newer than this run.
  timespec later[2];
  clock_gettime(CLOCK_REALTIME, &later[0]);
  later[0].tv_sec += 3600;
  later[1] = later[0];
  for (int i = 0; i < 20; ++i) {
    const std::string other = dir.File("p-" + std::to_string(900000 + i) + ".trace");
    WriteFile(other, "another run's trace");
    ASSERT_EQ(utimensat(AT_FDCWD, other.c_str(), later, 0), 0);
  }
  // --no-cuda: NVTX only, so no line says CUPTI is unavailable on a machine
  // without a driver; only the trace lines are counted.
  RunResult r = RunProgram({TRACER_CLI, "run", "--no-cuda", "-o", dir.File("p-%p.trace"), "--",
                            HOSTILE_CLIENT, "fork_early"},
                           {}, LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> named;
  size_t at = 0;
  const std::string prefix = "tracer: trace written to ";
  while ((at = r.err.find(prefix, at)) != std::string::npos) {
    at += prefix.size();
    named.insert(r.err.substr(at, r.err.find('\n', at) - at));
  }
  EXPECT_EQ(named.size(), 2u) << r.err;
  EXPECT_EQ(Lines(r.err), 2u) << r.err;
  std::set<std::string> work;
  for (const std::string& path : named) {
    ParsedTrace t = ReadTraceFile(path);
    ExpectWellFormed(t);
    EXPECT_EQ(path, dir.File("p-" + std::to_string(t.header.pid()) + ".trace"));
    for (const auto& [name, n] : CountByName(t)) work.insert(name);
  }
  EXPECT_EQ(work, (std::set<std::string>{"child_work", "parent_work"}));
}

}  // namespace
}  // namespace tracer::testing
