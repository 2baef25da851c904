// RealCuptiApi against real files: the toolkit's libcupti on this driverless
// machine (the no-driver path, and the layout conformance of the fakes'
// buffers under the real cuptiActivityGetNextRecord), the fake libcupti
// reached through the same loader, and libraries that are not CUPTI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "libtracer/capture/config.h"
#include "libtracer/capture/cupti_adapter.h"
#include "libtracer/cupti_api/real_cupti_api.h"
#include "tests/cupti/activity_records.h"
#include "tests/cupti/fake_cupti/activity_buffer.h"

namespace tracer {
namespace {

TEST(RealCuptiApi, LoadsTheToolkitLibcupti) {
  std::string error;
  auto api = RealCuptiApi::Load(REAL_CUPTI_PATH, &error);
  ASSERT_NE(api, nullptr) << error;
  EXPECT_GE(api->version(), kMinCuptiVersion);
  const char* name = nullptr;
  EXPECT_EQ(api->GetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 505, &name), CUPTI_SUCCESS);
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "__cudaLaunchKernel_v13000");
  EXPECT_STREQ(api->ResultString(CUPTI_ERROR_UNKNOWN), "CUPTI_ERROR_UNKNOWN");
}

TEST(RealCuptiApi, MissingLibraryIsOneClearError) {
  std::string error;
  EXPECT_EQ(RealCuptiApi::Load("/nonexistent/libcupti.so", &error), nullptr);
  EXPECT_NE(error.find("libcupti not found"), std::string::npos) << error;
  EXPECT_NE(error.find("TRACER_CUPTI_LIBRARY"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(RealCuptiApi, ALibraryThatIsNotCuptiIsRejected) {
  std::string error;
  EXPECT_EQ(RealCuptiApi::Load("libz.so.1", &error), nullptr);
  EXPECT_NE(error.find("lacks cuptiGetVersion"), std::string::npos) << error;
}

TEST(RealCuptiApi, TooOldVersionIsRejected) {
  // The fake libcupti, made to fail cuptiGetVersion through its control API
  // (same instance: same path).
  void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto set_error = reinterpret_cast<void (*)(const char*, int)>(dlsym(h, "fakeCuptiSetError"));
  ASSERT_NE(set_error, nullptr);
  std::string error;
  EXPECT_NE(RealCuptiApi::Load(FAKE_CUPTI_PATH, &error), nullptr) << error;
  set_error("cuptiGetVersion", CUPTI_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(RealCuptiApi::Load(FAKE_CUPTI_PATH, &error), nullptr);
  EXPECT_NE(error.find("too old"), std::string::npos) << error;
  set_error("cuptiGetVersion", 0);
}

TEST(RealCuptiNoDriver, AdapterSaysCuptiUnavailableOnce) {
  std::string error;
  auto api = RealCuptiApi::Load(REAL_CUPTI_PATH, &error);
  ASSERT_NE(api, nullptr) << error;
  std::vector<std::string> lines;
  CuptiAdapter::Options o;
  o.activities = kDefaultActivities;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  CuptiAdapter adapter(api.get(), o);
  EXPECT_FALSE(adapter.Start());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("CUPTI unavailable (no CUDA driver?)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("CUPTI_ERROR_UNKNOWN"), std::string::npos) << lines[0];
  adapter.Stop();  // nothing attached: no CUPTI call, no crash
}

// The fakes' buffer layout, walked by the real iterator (works without a
// driver, docs/cupti.md section 3 "M") and by the fakes' iterator: same records, same
// end-of-buffer behaviour.
class Conformance : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    api_ = RealCuptiApi::Load(REAL_CUPTI_PATH, &error);
    ASSERT_NE(api_, nullptr) << error;
  }
  std::vector<CUpti_Activity*> WalkReal(uint8_t* b, size_t valid, CUptiResult* last) {
    std::vector<CUpti_Activity*> out;
    CUpti_Activity* r = nullptr;
    while ((*last = api_->ActivityGetNextRecord(b, valid, &r)) == CUPTI_SUCCESS) out.push_back(r);
    return out;
  }
  std::vector<CUpti_Activity*> WalkFake(uint8_t* b, size_t valid, CUptiResult* last) {
    std::vector<CUpti_Activity*> out;
    CUpti_Activity* r = nullptr;
    while ((*last = fake_cupti::NextRecord(b, valid, &r)) == CUPTI_SUCCESS) out.push_back(r);
    return out;
  }
  std::unique_ptr<RealCuptiApi> api_;
};

TEST_F(Conformance, EveryRecordKindTheFakesWrite) {
  alignas(8) static uint8_t buffer[8192];
  std::memset(buffer, 0, sizeof(buffer));
  fake_cupti::BufferWriter w(buffer, sizeof(buffer));
  static const char kName[] = "k";
  ASSERT_TRUE(w.Append(testing::MakeKernel(kName, 1, 2, 1, 1)));
  ASSERT_TRUE(w.Append(testing::MakeApi(false, 505, 1, 2, 1, 1)));
  ASSERT_TRUE(w.Append(testing::MakeMemcpy(1, 8, 1, 2, 1, 2, 3)));
  ASSERT_TRUE(w.Append(testing::MakeMemset(8, 0, 1, 2, 1, 4)));
  ASSERT_TRUE(w.Append(testing::MakeApi(true, 307, 1, 2, 1, 5)));
  CUpti_ActivitySynchronization2 s{};
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  ASSERT_TRUE(w.Append(s));
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ASSERT_TRUE(w.Append(o));
  CUpti_ActivityGraphTrace2 g{};
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  ASSERT_TRUE(w.Append(g));
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  ASSERT_TRUE(w.Append(e));
  ASSERT_TRUE(w.Append(testing::MakeKernel(kName, 3, 4, 1, 6)));

  CUptiResult real_end, fake_end;
  auto real = WalkReal(buffer, w.used(), &real_end);
  auto fake = WalkFake(buffer, w.used(), &fake_end);
  EXPECT_EQ(real.size(), 10u);
  EXPECT_EQ(real, fake);
  EXPECT_EQ(real_end, CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(fake_end, real_end);
}

TEST_F(Conformance, EndOfBufferBehaviours) {
  alignas(8) static uint8_t buffer[4096];
  std::memset(buffer, 0, sizeof(buffer));
  fake_cupti::BufferWriter w(buffer, sizeof(buffer));
  static const char kName[] = "k";
  w.Append(testing::MakeKernel(kName, 1, 2, 1, 1));
  w.Append(testing::MakeKernel(kName, 3, 4, 1, 2));
  CUptiResult real_end, fake_end;
  // A truncated tail record is skipped: MAX_LIMIT after the first.
  auto real = WalkReal(buffer, w.used() - 8, &real_end);
  auto fake = WalkFake(buffer, w.used() - 8, &fake_end);
  EXPECT_EQ(real.size(), 1u);
  EXPECT_EQ(real, fake);
  EXPECT_EQ(fake_end, real_end);
  // Valid size 0: MAX_LIMIT at once.
  EXPECT_TRUE(WalkReal(buffer, 0, &real_end).empty());
  EXPECT_TRUE(WalkFake(buffer, 0, &fake_end).empty());
  EXPECT_EQ(fake_end, real_end);
  // A record of kind 0 (incomplete): INVALID_KIND from both.
  std::memset(buffer + sizeof(CUpti_ActivityKernel10), 0, sizeof(CUpti_ActivityKernel10));
  real = WalkReal(buffer, w.used(), &real_end);
  fake = WalkFake(buffer, w.used(), &fake_end);
  EXPECT_EQ(real.size(), 1u);
  EXPECT_EQ(real_end, CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(fake_end, real_end);
  // At the end the cursor stays on the last record (not NULL).
  CUpti_Activity* r = nullptr;
  EXPECT_EQ(api_->ActivityGetNextRecord(buffer, sizeof(CUpti_ActivityKernel10), &r), CUPTI_SUCCESS);
  CUpti_Activity* last = r;
  EXPECT_EQ(api_->ActivityGetNextRecord(buffer, sizeof(CUpti_ActivityKernel10), &r),
            CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(r, last);
  CUpti_Activity* f = nullptr;
  fake_cupti::NextRecord(buffer, sizeof(CUpti_ActivityKernel10), &f);
  EXPECT_EQ(fake_cupti::NextRecord(buffer, sizeof(CUpti_ActivityKernel10), &f),
            CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(f, last);
}

}  // namespace
}  // namespace tracer
