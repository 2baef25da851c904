#include "libtracer/capture/capture_window.h"

#include <gtest/gtest.h>

namespace tracer {
namespace {

TEST(CaptureWindowTest, AlwaysOpenWithoutARange) {
  CaptureWindow w(false, 1, 1);
  EXPECT_TRUE(w.active());
  w.SetProfilerActive(false);  // cudaProfilerStop
  EXPECT_FALSE(w.active());
  w.SetProfilerActive(true);
  EXPECT_TRUE(w.active());
  w.Close();
  EXPECT_FALSE(w.active());
  w.SetProfilerActive(true);
  EXPECT_FALSE(w.active());  // a closed session stays closed
}

TEST(CaptureWindowTest, OpensAtTheNthStartAndClosesAfterTheMthEnd) {
  CaptureWindow w(true, 2, 3);
  EXPECT_FALSE(w.active());
  w.OnInstanceStart();  // 1st
  EXPECT_FALSE(w.active());
  w.OnInstanceEnd();
  w.OnInstanceStart();  // 2nd: opens before it is recorded
  EXPECT_TRUE(w.active());
  w.OnInstanceEnd();  // 2nd end
  EXPECT_TRUE(w.active());
  w.OnInstanceStart();
  w.OnInstanceEnd();  // 3rd end: closes
  EXPECT_FALSE(w.active());
  w.OnInstanceStart();  // 4th: stays closed
  EXPECT_FALSE(w.active());
}

TEST(CaptureWindowTest, StopZeroNeverCloses) {
  CaptureWindow w(true, 1, 0);
  w.OnInstanceStart();
  for (int i = 0; i < 10; ++i) {
    w.OnInstanceEnd();
    w.OnInstanceStart();
  }
  EXPECT_TRUE(w.active());
  w.SetProfilerActive(false);  // both conditions must hold
  EXPECT_FALSE(w.active());
}

}  // namespace
}  // namespace tracer
