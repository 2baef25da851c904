// Issue 12: what the library takes from its host without trusting it. The
// string table says which ids it handed out (a registered-string handle is
// checked against it); capture-range instances are tracked exactly; the
// ring budget bounds all threads' rings together; the trace file is created
// without following links and never over another process's file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/capture/capture_instance_ids.h"
#include "libtracer/capture/ring_budget.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/trace_file.h"
#include "libtracer/core/string_table.h"

namespace tracer {
namespace {

TEST(StringTableKnown, OnlyIdsHandedOutAreKnown) {
  StringTable table;
  EXPECT_TRUE(table.Known(0));  // the empty string
  EXPECT_FALSE(table.Known(1));
  const uint32_t a = table.Intern("a").id;
  const uint32_t b = table.Intern("b").id;
  EXPECT_TRUE(table.Known(a));
  EXPECT_TRUE(table.Known(b));
  EXPECT_FALSE(table.Known(b + 1));
  for (uint64_t bogus : {0xffffffffull, 0xfffffff0ull, 0xdeadbeefull, 0x100000001ull, ~0ull}) {
    EXPECT_FALSE(table.Known(bogus)) << bogus;
  }
}

TEST(CaptureInstanceIds, AnIdCountsOnceAndOnlyIfAdded) {
  CaptureInstanceIds ids;
  EXPECT_FALSE(ids.Take(5));
  EXPECT_TRUE(ids.Add(5));
  EXPECT_TRUE(ids.Add((7ull << 40) | 1));
  EXPECT_FALSE(ids.Take(6));
  EXPECT_TRUE(ids.Take(5));
  EXPECT_FALSE(ids.Take(5));  // ended twice
  EXPECT_TRUE(ids.Take((7ull << 40) | 1));
  EXPECT_FALSE(ids.Add(0));
  EXPECT_FALSE(ids.Take(0));
}

TEST(CaptureInstanceIds, FullTableRefusesRatherThanForgets) {
  CaptureInstanceIds ids;
  size_t added = 0;
  for (uint64_t i = 1; i <= 2 * CaptureInstanceIds::kSlots; ++i) added += ids.Add(i);
  EXPECT_GE(added, CaptureInstanceIds::kSlots / 2);
  EXPECT_LE(added, CaptureInstanceIds::kSlots);
  size_t taken = 0;
  for (uint64_t i = 1; i <= 2 * CaptureInstanceIds::kSlots; ++i) taken += ids.Take(i);
  EXPECT_EQ(taken, added);
}

TEST(RingBudget, GrantsPowersOfTwoWithinTheLimit) {
  RingBudget budget(3 << 20);
  EXPECT_EQ(budget.Acquire(1 << 20), 1u << 20);
  EXPECT_EQ(budget.Acquire((1 << 20) + 100), 1u << 20);  // rounded down
  EXPECT_EQ(budget.Acquire(1 << 20), 1u << 20);
  EXPECT_EQ(budget.used(), 3u << 20);
  // Over the limit: the minimal ring.
  EXPECT_EQ(budget.Acquire(1 << 20), RingBudget::kMinRingBytes);
  budget.Release(1 << 20);
  budget.Release(RingBudget::kMinRingBytes);
  EXPECT_EQ(budget.Acquire(64 << 20), 1u << 20);  // what is left
  EXPECT_EQ(RingBudget::RingBytes(0), RingBudget::kMinRingBytes);
  EXPECT_EQ(RingBudget::RingBytes(96 << 10), 64u << 10);
}

TEST(RingBudget, RegistryRingsStayWithinTheLimitAndRecycledStatesKeepTheirRing) {
  ThreadRegistry registry(1 << 20, 2 << 20);
  ThreadState* a = registry.Register(1, 1);
  ThreadState* b = registry.Register(2, 2);
  ThreadState* c = registry.Register(3, 3);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->ring().capacity() * sizeof(Event), 1u << 20);
  EXPECT_EQ(b->ring().capacity() * sizeof(Event), 1u << 20);
  EXPECT_EQ(c->ring().capacity() * sizeof(Event), RingBudget::kMinRingBytes);
  // a's thread exited and the writer drained it: the next thread reuses its
  // state and its megabyte ring, nothing more is taken from the limit.
  registry.Recycle({a});
  ThreadState* d = registry.Register(4, 4);
  ASSERT_EQ(d, a);
  EXPECT_EQ(d->ring().capacity() * sizeof(Event), 1u << 20);
  // A new state past the limit still gets the minimal ring only.
  ThreadState* e = registry.Register(5, 5);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ring().capacity() * sizeof(Event), RingBudget::kMinRingBytes);
}

class TraceFileOpen : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/tracer_tracefile_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(mkdtemp(buf.data()), nullptr);
    dir_ = buf.data();
  }
  void TearDown() override {
    for (const char* f : {"t.trace", "victim", "link.trace", "fifo.trace", "hard.trace"}) {
      unlink(File(f).c_str());
    }
    rmdir(dir_.c_str());
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static constexpr int64_t kHour = int64_t{3600} * 1000000000;
  std::string dir_;
};

TEST_F(TraceFileOpen, NewFileIsCreatedAndLockedWhileOpen) {
  TraceFile first;
  std::string error;
  ASSERT_EQ(first.Open(File("t.trace"), "this-run", Now(), &error), TraceFile::OpenResult::kOpened)
      << error;
  EXPECT_TRUE(first.Append("abc"));
  // Another open of it (another process, or this one again) finds it held,
  // even when it looks stale by its time.
  TraceFile second;
  EXPECT_EQ(second.Open(File("t.trace"), "this-run", Now() + kHour, &error),
            TraceFile::OpenResult::kInUse);
  first.Close();
  // Released, with no trace header (one a process of this run has just
  // created, not yet locked?) and written since this process started: not
  // to be reused.
  EXPECT_EQ(second.Open(File("t.trace"), "this-run", Now() - kHour, &error),
            TraceFile::OpenResult::kInUse);
  EXPECT_EQ(Read(File("t.trace")), "abc");
  // Older than the run: an earlier run's trace, never overwritten silently
  // (issue 16) ...
  EXPECT_EQ(second.Open(File("t.trace"), "this-run", Now() + kHour, &error),
            TraceFile::OpenResult::kRefused);
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
  EXPECT_NE(error.find("TRACER_FORCE_OVERWRITE=1"), std::string::npos) << error;
  EXPECT_EQ(Read(File("t.trace")), "abc");
  // ... but truncated and reused when forced.
  ASSERT_EQ(
      second.Open(File("t.trace"), "this-run", Now() + kHour, &error, /*force_overwrite=*/true),
      TraceFile::OpenResult::kOpened)
      << error;
  EXPECT_TRUE(second.Append("xy"));
  second.Close();
  EXPECT_EQ(Read(File("t.trace")), "xy");
}

TEST_F(TraceFileOpen, LinksFifosAndHardLinksAreRefused) {
  std::ofstream(File("victim")) << "precious";
  ASSERT_EQ(symlink(File("victim").c_str(), File("link.trace").c_str()), 0);
  ASSERT_EQ(mkfifo(File("fifo.trace").c_str(), 0600), 0);
  ASSERT_EQ(link(File("victim").c_str(), File("hard.trace").c_str()), 0);
  const std::pair<const char*, const char*> cases[] = {
      {"link.trace", "it is a symbolic link"},
      {"fifo.trace", "not a regular file"},
      {"hard.trace", "has other hard links"},
  };
  for (const auto& [name, why] : cases) {
    TraceFile f;
    std::string error;
    // A stale-looking run start: only the checks may refuse.
    EXPECT_EQ(f.Open(File(name), "this-run", Now() + kHour, &error),
              TraceFile::OpenResult::kRefused)
        << name;
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_NE(error.find("TRACER_OUTPUT"), std::string::npos) << error;
  }
  EXPECT_EQ(Read(File("victim")), "precious");
  TraceFile f;
  std::string error;
  EXPECT_EQ(f.Open(dir_ + "/no/such/dir/t.trace", "this-run", Now(), &error),
            TraceFile::OpenResult::kRefused);
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
}

TEST(ProcessStart, IsInThePastAndRecent) {
  const int64_t start = ProcessStartWallNs();
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_LE(start, now);
  EXPECT_GT(start, now - int64_t{24} * 3600 * 1000000000);  // a test runs for less than a day
}

}  // namespace
}  // namespace tracer
