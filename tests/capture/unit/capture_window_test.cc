#include "libtracer/capture/capture_window.h"

#include <gtest/gtest.h>

#include <vector>

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

// Where capture began, for the reports' step numbers: the occurrence whose
// instance was the first one started while recording was on.
TEST(CaptureWindowTest, FirstRecordedOccurrenceIsTheRangeWindowsStart) {
  CaptureWindow w(true, 2, 3);
  EXPECT_EQ(w.first_recorded_occurrence(), 0u);
  w.OnInstanceStart();  // 1st: not recorded
  w.OnInstanceEnd();
  EXPECT_EQ(w.first_recorded_occurrence(), 0u);
  w.OnInstanceStart();  // 2nd: the window opens, this instance is recorded
  EXPECT_EQ(w.first_recorded_occurrence(), 2u);
  w.OnInstanceEnd();
  w.OnInstanceStart();
  EXPECT_EQ(w.first_recorded_occurrence(), 2u);  // fixed once known
}

TEST(CaptureWindowTest, FirstRecordedOccurrenceFollowsTheProfilerApiToo) {
  // Range window from the 2nd instance, but cudaProfilerStop until the 3rd
  // instance is under way: the 4th is the first recorded.
  CaptureWindow w(true, 2, 0);
  w.SetProfilerActive(false);
  for (int i = 0; i < 3; ++i) {
    w.OnInstanceStart();
    if (i < 2) w.OnInstanceEnd();
  }
  EXPECT_EQ(w.first_recorded_occurrence(), 0u);
  w.SetProfilerActive(true);  // inside the 3rd, whose start was not recorded
  w.OnInstanceEnd();
  EXPECT_EQ(w.first_recorded_occurrence(), 0u);
  w.OnInstanceStart();  // 4th
  EXPECT_EQ(w.first_recorded_occurrence(), 4u);
  w.SetProfilerActive(false);
  w.SetProfilerActive(true);
  w.OnInstanceStart();
  EXPECT_EQ(w.first_recorded_occurrence(), 4u);
}

// Records active() at each notification.
class RecordingObserver : public CaptureWindow::Observer {
 public:
  explicit RecordingObserver(const CaptureWindow* w) : w_(w) {}
  void OnCaptureWindowChange() noexcept override { seen.push_back(w_->active()); }
  std::vector<bool> seen;

 private:
  const CaptureWindow* w_;
};

TEST(CaptureWindowTest, ObserverIsToldOfEveryChangeOfActiveAndNothingElse) {
  CaptureWindow w(true, 2, 2);
  RecordingObserver o(&w);
  w.SetObserver(&o);
  w.OnInstanceStart();  // 1st: no change
  w.OnInstanceEnd();
  w.SetProfilerActive(false);  // profiler off while the range is closed: no change
  w.OnInstanceStart();         // 2nd: range open, but the profiler is off
  EXPECT_TRUE(o.seen.empty());
  w.SetProfilerActive(true);  // now both hold: opens
  w.SetProfilerActive(true);  // again: no change
  w.OnInstanceEnd();          // 2nd end: closes
  w.OnInstanceStart();
  w.Close();  // already inactive
  EXPECT_EQ(o.seen, (std::vector<bool>{true, false}));
  w.SetObserver(nullptr);
  CaptureWindow open(false, 1, 1);
  RecordingObserver o2(&open);
  open.SetObserver(&o2);
  open.Close();  // session end closes an open window
  EXPECT_EQ(o2.seen, (std::vector<bool>{false}));
}

}  // namespace
}  // namespace tracer
