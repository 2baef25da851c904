// Issue 16, `tracer run` as a user types it: the program starts at the first
// word that is not a tracer option (as with nsys profile), existing outputs
// are never overwritten silently (before the program starts, and by the
// library when the file shows up under a name only the program knows), and
// the closing lines say what happened in words a user can act on. This
// machine has no NVIDIA driver: the runs here are the "no driver" case.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/capture/e2e/e2e_util.h"

namespace tracer::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A file an earlier run left: older than any process started now.
void WriteOld(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  timespec hour_ago[2];
  clock_gettime(CLOCK_REALTIME, &hour_ago[0]);
  hour_ago[0].tv_sec -= 3600;
  hour_ago[1] = hour_ago[0];
  utimensat(AT_FDCWD, path.c_str(), hour_ago, 0);
}

// sh -c that prints the variable tracer run set and the arguments the program
// received, one line on stderr.
const char* kShowArgs = "echo \"output=$TRACER_OUTPUT args=$*\" >&2";

TEST(TracerRunCli, TheProgramStartsAtTheFirstWordThatIsNotATracerOption) {
  TempDir dir;
  const std::string out = dir.File("run.trace");
  // No "--": the program's own -o, --output and --log-level are its own.
  RunResult r =
      RunProgram({TRACER_CLI, "run", "-o", out, "--log-level", "warn", "sh", "-c", kShowArgs, "sh",
                  "--steps", "1", "-o", "theirs", "--output=x", "--log-level", "debug"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.err.find("output=" + out + " args=--steps 1 -o theirs --output=x --log-level debug\n"),
      std::string::npos)
      << r.err;
  // "--" still works, and an option's value may look like a program name.
  r = RunProgram({TRACER_CLI, "run", "--flush-interval=50", "-o", out, "--", "sh", "-c", kShowArgs,
                  "sh", "--", "-o", "y"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("output=" + out + " args=-- -o y\n"), std::string::npos) << r.err;
  // A traced program with the form of the issue: tracer run prog --steps 1.
  r = RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "5", "--steps", "1"}, {},
                 LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(Count(r.err, "tracer: trace written to " + out), 1u) << r.err;
  EXPECT_EQ(CountByName(ReadTraceFile(out))["before_exit"], 1u);
  // An option tracer does not know, before the program: refused, nothing run.
  r = RunProgram({TRACER_CLI, "run", "--no-such-option", "sh", "-c", "touch " + dir.File("ran")},
                 {}, LoadPath::kNone);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--no-such-option"), std::string::npos) << r.err;
  EXPECT_EQ(access(dir.File("ran").c_str(), F_OK), -1);
}

TEST(TracerRunCli, AnExistingOutputIsRefusedBeforeTheProgramStarts) {
  TempDir dir;
  const std::string out = dir.File("run.trace");
  const std::string marker = dir.File("ran");
  WriteOld(out, "an earlier trace");
  RunResult r = RunProgram({TRACER_CLI, "run", "-o", out, "sh", "-c", "touch " + marker}, {},
                           LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tracer run: " + out +
                       " already exists: not overwritten (remove it, choose another -o, or add "
                       "--force-overwrite)\n");
  EXPECT_EQ(access(marker.c_str(), F_OK), -1) << "the program must not have run";
  EXPECT_EQ(Slurp(out), "an earlier trace");
  // %h and %q{VAR} known here are expanded as the program will.
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  WriteOld(dir.File(std::string("r7-") + host + ".trace"), "old");
  r = RunProgram(
      {TRACER_CLI, "run", "-o", dir.File("r%q{MY_RANK}-%h.trace"), "sh", "-c", "touch " + marker},
      {{"MY_RANK", "7"}}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(access(marker.c_str(), F_OK), -1);

  r = RunProgram({TRACER_CLI, "run", "--force-overwrite", "-o", out, NVTX_CLIENT, "exitcode", "0"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ParsedTrace t = ReadTraceFile(out);
  ExpectWellFormed(t);
  EXPECT_EQ(CountByName(t)["before_exit"], 1u);
}

// The name holds a variable only the program sets: tracer run cannot check
// it first; the library refuses, the program runs on, the last line says why.
TEST(TracerRunCli, TheLibraryRefusesAFileItFindsUnlessForced) {
  TempDir dir;
  const std::string taken = dir.File("t1.trace");
  WriteOld(taken, "an earlier trace");
  const std::string program = std::string("TAG=1 exec ") + NVTX_CLIENT + " exitcode 3";
  RunResult r =
      RunProgram({TRACER_CLI, "run", "-o", dir.File("t%q{TAG}.trace"), "sh", "-c", program}, {},
                 LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(Slurp(taken), "an earlier trace");
  EXPECT_EQ(Count(r.err, "'" + taken + "' already exists"), 2u) << r.err;  // the library, the end
  EXPECT_NE(r.err.find("tracer: no trace was written: '" + taken + "' already exists"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(dir.List().size(), 1u);

  r = RunProgram({TRACER_CLI, "run", "--force-overwrite", "-o", dir.File("t%q{TAG}.trace"), "sh",
                  "-c", program},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(CountByName(ReadTraceFile(taken))["before_exit"], 1u);
}

TEST(TracerRunCli, NoTraceLinesGiveTheReasonInTheLine) {
  TempDir dir;
  const std::string out = dir.File("run.trace");
  // A program without NVTX or CUDA: the library never loads.
  RunResult r = RunProgram({TRACER_CLI, "run", "-o", out, "true"}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err,
            "tracer: no trace was written: the program made no NVTX call and no CUDA call "
            "reached the tracer, so libtracer.so never started (is it annotated with NVTX, and "
            "does it use the GPU?)\n");
  // A rejected setting: the reason in the last line too.
  r = RunProgram(
      {TRACER_CLI, "run", "--buffer-size", "12Q", "-o", out, NVTX_CLIENT, "exitcode", "4"}, {},
      LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("tracer: no trace was written: TRACER_BUFFER_SIZE='12Q' is not a size "
                       "(e.g. 4M); tracing disabled\n"),
            std::string::npos)
      << r.err;
  // Logging off: nothing above, the reason in the line.
  const std::string taken = dir.File("t1.trace");
  WriteOld(taken, "old");
  r = RunProgram({TRACER_CLI, "run", "--log-level", "off", "-o", dir.File("t%q{TAG}.trace"), "sh",
                  "-c", std::string("TAG=1 exec ") + NVTX_CLIENT + " exitcode 0"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(Count(r.err, "\n"), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("tracer: no trace was written: '" + taken + "' already exists", 0), 0u)
      << r.err;
  // Tracing turned off by hand.
  r = RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "0"},
                 {{"TRACER_ENABLE", "0"}}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("no trace was written: TRACER_ENABLE=0 turns tracing off"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(access(out.c_str(), F_OK), -1);
}

// An earlier run's trace, modified after the new process started (its clock
// ticks are coarse: the run before ended a few ms earlier; the mtime is set
// ahead to make "just ended" certain). With --force-overwrite the library
// replaces it -- its header carries another run's id (run_id.h) -- so the
// run writes the name asked for, not NAME-<pid>.
TEST(TracerRunCli, ForceOverwriteRightAfterAnEarlierRunKeepsTheName) {
  TempDir dir;
  const std::string out = dir.File("run.trace");
  RunResult r =
      RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "0"}, {}, LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const uint32_t earlier_pid = ReadTraceFile(out).header.pid();
  timespec ahead[2];
  clock_gettime(CLOCK_REALTIME, &ahead[0]);
  ahead[0].tv_sec += 60;
  ahead[1] = ahead[0];
  ASSERT_EQ(utimensat(AT_FDCWD, out.c_str(), ahead, 0), 0);
  r = RunProgram({TRACER_CLI, "run", "--force-overwrite", "-o", out, NVTX_CLIENT, "exitcode", "0"},
                 {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("trace written to " + out + "\n"), std::string::npos) << r.err;
  EXPECT_EQ(dir.List().size(), 1u) << r.err;
  ParsedTrace t = ReadTraceFile(out);
  ExpectWellFormed(t);
  EXPECT_NE(t.header.pid(), earlier_pid);
  EXPECT_EQ(CountByName(t)["before_exit"], 1u);
}

// TRACER_FORCE_OVERWRITE set by hand reads as the library reads it (one
// parser, ParseBool): "On" lets tracer run start the program, which replaces
// the earlier file; "off" keeps the file and starts nothing.
TEST(TracerRunCli, ForceOverwriteByHandReadsTheSameWordsAsTheLibrary) {
  TempDir dir;
  const std::string out = dir.File("run.trace");
  std::ofstream(out, std::ios::binary) << "an earlier run's file";
  RunResult r = RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "0"},
                           {{"TRACER_FORCE_OVERWRITE", "off"}}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  r = RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "0"},
                 {{"TRACER_FORCE_OVERWRITE", " On"}}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("trace written to " + out + "\n"), std::string::npos) << r.err;
  EXPECT_EQ(dir.List().size(), 1u);
  ExpectWellFormed(ReadTraceFile(out));
}

// A program that cannot be started: its own line, and the closing line says
// it never ran (not that it made no NVTX call).
TEST(TracerRunCli, AProgramThatCannotStartIsTheReasonInTheLastLine) {
  TempDir dir;
  const std::string missing = dir.File("no-such-program");
  RunResult r =
      RunProgram({TRACER_CLI, "run", "-o", dir.File("run.trace"), missing}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("tracer run: cannot run '" + missing + "': No such file or directory\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tracer: no trace was written: the program '" + missing +
                       "' could not be started (No such file or directory)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("NVTX call"), std::string::npos) << r.err;
}

TEST(TracerRunCli, TraceWrittenOnceAndCuptiUnavailableAtTheDefaultLevel) {
  if (access("/proc/driver/nvidia/version", F_OK) == 0) {
    GTEST_SKIP() << "an NVIDIA driver is installed: not the no-driver case";
  }
  TempDir dir;
  const std::string out = dir.File("run.trace");
  RunResult r =
      RunProgram({TRACER_CLI, "run", "-o", out, NVTX_CLIENT, "exitcode", "0"}, {}, LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(Count(r.err, "CUPTI unavailable: no NVIDIA driver"), 1u) << r.err;
  EXPECT_EQ(Count(r.err, "trace written to"), 1u) << r.err;
  // At info level the library has more to say, but "trace written" once.
  const std::string info = dir.File("info.trace");
  r = RunProgram(
      {TRACER_CLI, "run", "--log-level", "info", "-o", info, NVTX_CLIENT, "exitcode", "0"}, {},
      LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(Count(r.err, "trace written to"), 1u) << r.err;
  EXPECT_NE(r.err.find("tracing to " + info), std::string::npos) << r.err;
  // NVTX only by request: nothing to say about CUPTI.
  const std::string nvtx = dir.File("nvtx.trace");
  r = RunProgram({TRACER_CLI, "run", "--no-cuda", "-o", nvtx, NVTX_CLIENT, "exitcode", "0"}, {},
                 LoadPath::kNone);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "tracer: trace written to " + nvtx + "\n");
}

}  // namespace
}  // namespace tracer::testing
