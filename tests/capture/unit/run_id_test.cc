// The run id that tells, at an output name already taken, a file another
// process of this run wrote from an earlier run's (libtracer/capture/
// run_id.h), and how TraceFile::Open uses it. Real files in a temporary
// directory, headers written by the writer's own ChunkBuilder.
#include "libtracer/capture/run_id.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "libtracer/capture/trace_file.h"
#include "libtracer/core/chunk_builder.h"

namespace tracer {
namespace {

class RunIdFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/tracer_runid_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    unlink(File().c_str());
    rmdir(dir_.c_str());
  }
  std::string File() const { return dir_ + "/t.trace"; }

  // What Writer::Begin writes first: magic and the header frame.
  static std::string HeaderBytes(const std::string* run_id, const std::string& command = "prog") {
    HeaderInfo h;
    h.pid = 42;
    h.config = {{"TRACER_OUTPUT", "t.trace"}};
    if (run_id) h.config.emplace_back("TRACER_RUN_ID", *run_id);
    h.command_line = {command};
    ChunkBuilder b;
    b.SetHeader(h);
    std::string bytes;
    AppendFileMagic(&bytes);
    b.FinishFrame(&bytes);
    return bytes;
  }
  void Write(const std::string& bytes, int64_t mtime_from_now_s) {
    std::ofstream(File(), std::ios::binary | std::ios::trunc) << bytes;
    timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec += mtime_from_now_s;
    t[1] = t[0];
    ASSERT_EQ(utimensat(AT_FDCWD, File().c_str(), t, 0), 0);
  }
  TraceRunId Read(std::string* id) {
    const int fd = open(File().c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    const TraceRunId r = ReadTraceRunId(fd, id);
    close(fd);
    return r;
  }
  std::string Contents() const {
    std::ifstream in(File(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::string dir_;
};

TEST_F(RunIdFiles, HeaderRunIdIsReadBackExactly) {
  const std::string run = "run\x01with odd bytes:1.2:3.4";
  Write(HeaderBytes(&run), 0);
  std::string id;
  ASSERT_EQ(Read(&id), TraceRunId::kFound);
  EXPECT_EQ(id, run);
  // Records after the header frame change nothing.
  Write(HeaderBytes(&run) + std::string(100, 'x'), 0);
  id.clear();
  ASSERT_EQ(Read(&id), TraceRunId::kFound);
  EXPECT_EQ(id, run);
}

TEST_F(RunIdFiles, HeaderWithoutRunIdIsAbsentAndAnythingElseUnreadable) {
  std::string id;
  Write(HeaderBytes(nullptr), 0);  // an older tracer's trace
  EXPECT_EQ(Read(&id), TraceRunId::kAbsent);
  const std::string run = "r";
  const std::string whole = HeaderBytes(&run);
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8}, size_t{12}, whole.size() - 1}) {
    Write(whole.substr(0, cut), 0);  // being written, or torn
    EXPECT_EQ(Read(&id), TraceRunId::kUnreadable) << cut;
  }
  std::string corrupt = whole;
  corrupt.back() ^= 1;  // fails the frame's CRC
  Write(corrupt, 0);
  EXPECT_EQ(Read(&id), TraceRunId::kUnreadable);
  Write("not a trace at all, but long enough to have a frame header", 0);
  EXPECT_EQ(Read(&id), TraceRunId::kUnreadable);
}

// The decision at a taken name. A file of this run is kept even when forced;
// an earlier run's file is refused, or replaced when forced, however
// recently it was written (the case a file time gets wrong).
TEST_F(RunIdFiles, OpenKeepsThisRunsFilesAndReplacesEarlierRunsOnlyWhenForced) {
  const std::string ours = "this-run", earlier = "earlier-run";
  const int64_t start = Now() - int64_t{3600} * 1000000000;  // modified "since we started"
  std::string error;
  for (bool force : {false, true}) {
    SCOPED_TRACE(force);
    Write(HeaderBytes(&ours), -7200);  // old, but ours (this program before an exec)
    TraceFile f;
    EXPECT_EQ(f.Open(File(), ours, start, &error, force), TraceFile::OpenResult::kInUse);
    EXPECT_EQ(Contents(), HeaderBytes(&ours));
  }
  Write(HeaderBytes(&earlier), +60);  // just ended, clock ticks ahead
  {
    TraceFile f;
    EXPECT_EQ(f.Open(File(), ours, start, &error), TraceFile::OpenResult::kRefused);
    EXPECT_NE(error.find("already exists"), std::string::npos) << error;
    EXPECT_EQ(Contents(), HeaderBytes(&earlier));
  }
  {
    TraceFile f;
    ASSERT_EQ(f.Open(File(), ours, start, &error, /*force_overwrite=*/true),
              TraceFile::OpenResult::kOpened)
        << error;
    EXPECT_TRUE(f.Append("new"));
    f.Close();
    EXPECT_EQ(Contents(), "new");
  }
  // An older tracer's trace (no id) is an earlier run's too.
  Write(HeaderBytes(nullptr), +60);
  {
    TraceFile f;
    EXPECT_EQ(f.Open(File(), ours, start, &error), TraceFile::OpenResult::kRefused);
    ASSERT_EQ(f.Open(File(), ours, start, &error, true), TraceFile::OpenResult::kOpened) << error;
  }
  // No header yet and recent: a sibling's just created file, unless forced
  // (the sibling then finds its lock taken and names its own file).
  Write("", +60);
  {
    TraceFile f;
    EXPECT_EQ(f.Open(File(), ours, start, &error), TraceFile::OpenResult::kInUse);
    ASSERT_EQ(f.Open(File(), ours, start, &error, true), TraceFile::OpenResult::kOpened) << error;
  }
}

TEST(RunId, MadeUpIdNamesThisProcessAndItsParent) {
  const std::string id = NewRunId();
  EXPECT_EQ(NewRunId(), id);  // what an exec'ed image of this process makes again
  uint64_t ticks = 0;
  ASSERT_TRUE(ProcessStartTicks(&ticks));
  EXPECT_NE(id.find(":" + std::to_string(getpid()) + "." + std::to_string(ticks) + ":" +
                    std::to_string(getppid()) + "."),
            std::string::npos)
      << id;
  EXPECT_EQ(ThisRunId(), ThisRunId());
}

TEST(RunId, SameRunByIdOrByDirectParentage) {
  EXPECT_TRUE(SameRun("anything", "anything"));
  EXPECT_FALSE(SameRun("tracer-run-1", "tracer-run-2"));
  const std::string me = "boot:200.7:100.5";
  EXPECT_TRUE(SameRun("boot:200.7:100.5", me));  // this process before an exec
  EXPECT_TRUE(SameRun("boot:300.9:200.7", me));  // a child forked before loading
  EXPECT_TRUE(SameRun("boot:100.5:50.1", me));   // the parent that exec'ed it
  // Another child of the same parent: a run started just before by the
  // same shell.
  EXPECT_FALSE(SameRun("boot:199.6:100.5", me));
  // A pid reused after the process ended: its start time differs.
  EXPECT_FALSE(SameRun("boot:300.9:200.8", me));
  EXPECT_FALSE(SameRun("other:200.7:100.5", me));  // another boot
  EXPECT_FALSE(SameRun("boot:200.7", me));
  EXPECT_FALSE(SameRun("boot:200.7:100.5:x", me));
}

}  // namespace
}  // namespace tracer
