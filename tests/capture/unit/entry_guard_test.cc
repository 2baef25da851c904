// The entry-point guard: passes results through, turns any exception into the
// fallback, and reports each entry point's first failure only (one stderr
// line).
#include "libtracer/capture/entry_guard.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

namespace tracer {
namespace {

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(EntryGuardTest, PassesTheResultThrough) {
  EXPECT_EQ(Guarded("guard_test_ok", [] { return 42; }), 42);
  EXPECT_EQ(Guarded(
                "guard_test_ok", kNotTraced, [] { return 7; }, []() noexcept { return -1; }),
            7);
}

TEST(EntryGuardTest, AnyExceptionBecomesTheFallback) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Guarded(
                "guard_test_alloc", kNotTraced, []() -> int { throw std::bad_alloc(); },
                []() noexcept { return -1; }),
            -1);
  EXPECT_EQ(Guarded("guard_test_int", []() -> int { throw 3; }), 0);
  bool ran = false;
  Guarded("guard_test_void", [&] {
    ran = true;
    throw std::runtime_error("boom");
  });
  EXPECT_TRUE(ran);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(
      err.find("tracer: guard_test_alloc failed (std::bad_alloc); " + std::string(kNotTraced)),
      std::string::npos)
      << err;
  EXPECT_NE(err.find("tracer: guard_test_int failed (unknown exception)"), std::string::npos);
  EXPECT_NE(err.find("tracer: guard_test_void failed (boom)"), std::string::npos);
}

TEST(EntryGuardTest, ReportsEachEntryPointOnce) {
  // The same name at another address: entry points are told apart by name.
  static const char kSameNameElsewhere[] = "guard_test_once_a";
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    Guarded("guard_test_once_a", [] { throw std::bad_alloc(); });
    Guarded(kSameNameElsewhere, [] { throw std::bad_alloc(); });
    Guarded("guard_test_once_b", [] { throw std::bad_alloc(); });
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountLines(err, "guard_test_once_a failed"), 1) << err;
  EXPECT_EQ(CountLines(err, "guard_test_once_b failed"), 1) << err;
}

}  // namespace
}  // namespace tracer
