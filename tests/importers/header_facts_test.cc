// Issue 11 section 2: an imported trace's header says what its format carries
// of the process's place in a job (rank, world size, host, device), read
// whole and read as a stream alike, on the real traces of ../shared/data.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "libtracer/analysis/importers/kineto_json_importer.h"
#include "libtracer/analysis/importers/kineto_json_stream.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/nsys_sqlite_stream.h"
#include "tests/importers/test_data.h"

namespace tracer::analysis::importers {
namespace {

using testing::SharedDataPath;

// Kineto: distributedInfo {rank 0, world_size 1}; every kernel, memcpy and
// memset has args.device 0 (deviceProperties lists the node's 8 GPUs).
void ExpectResnetHeader(const HeaderInfo& h) {
  EXPECT_EQ(h.source, "kineto-json");
  EXPECT_EQ(h.rank, 0);
  EXPECT_EQ(h.world_size, 1);
  EXPECT_EQ(h.local_rank, -1);  // Kineto does not record it
  EXPECT_EQ(h.device, "0");
  EXPECT_EQ(h.host, "twshared39868.02.pnb3.facebook.com");
}

TEST(ImportedHeaderTest, KinetoDistributedInfoAndDevice) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string path = SharedDataPath("kineto/resnet_ddp_rank0.pt.trace.json.gz");
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportKinetoJson(path, &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 1u);
  ExpectResnetHeader(trace.processes[0].header);

  StringTable strings;
  int processes = 0;
  KinetoStreamCallbacks cb;
  cb.on_batch = [](const ProcessTrace&) {};
  cb.on_process = [&](const ProcessTrace& p) {
    ++processes;
    ExpectResnetHeader(p.header);
  };
  bool unsupported = false;
  ASSERT_TRUE(StreamKinetoJson(path, &strings, cb, &error, &unsupported)) << error;
  EXPECT_EQ(processes, 1);
}

// nsys, 2 x H100 under torchrun: python3 pids 144 and 145 ran their kernels
// on devices 0 and 1 (CUPTI_ACTIVITY_KIND_KERNEL.deviceId), host "modal"
// (TARGET_INFO_SYSTEM_ENV Hostname). The export holds no rank or world
// size of the children (only the launcher's environment), so those stay
// unknown rather than guessed.
void ExpectH100Headers(const std::map<uint32_t, HeaderInfo>& by_pid) {
  ASSERT_EQ(by_pid.count(144), 1u);
  ASSERT_EQ(by_pid.count(145), 1u);
  EXPECT_EQ(by_pid.at(144).device, "0");
  EXPECT_EQ(by_pid.at(145).device, "1");
  for (const auto& [pid, h] : by_pid) {
    EXPECT_EQ(h.host, "modal") << pid;
    EXPECT_EQ(h.rank, -1) << pid;
    EXPECT_EQ(h.world_size, 0) << pid;
  }
}

TEST(ImportedHeaderTest, NsysHostAndDevicePerProcess) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string path = SharedDataPath("nsys/h100_2gpu_mfu.sqlite");
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(path, &trace, &error)) << error;
  std::map<uint32_t, HeaderInfo> whole;
  for (const ProcessTrace& p : trace.processes) whole[p.header.pid] = p.header;
  ExpectH100Headers(whole);

  StringTable strings;
  std::map<uint32_t, HeaderInfo> streamed;
  NsysStreamCallbacks cb;
  cb.on_batch = [](const ProcessTrace&) {};
  cb.on_process = [&](const ProcessTrace& p) { streamed[p.header.pid] = p.header; };
  bool unsupported = false;
  ASSERT_TRUE(StreamNsysSqlite(path, &strings, cb, &error, &unsupported)) << error;
  ExpectH100Headers(streamed);
}

// An export without TARGET_INFO_SYSTEM_ENV (cudf-groupby: nsys 2020 schema,
// two GPUs in TARGET_INFO_GPU, kernels on device 0 only): the device of
// the process's work, no host.
TEST(ImportedHeaderTest, NsysOlderExportDeviceOnly) {
  SKIP_WITHOUT_SHARED_DATA();
  Trace trace;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(SharedDataPath("nsys/cudf-groupby.sqlite"), &trace, &error))
      << error;
  bool any_gpu = false;
  for (const ProcessTrace& p : trace.processes) {
    EXPECT_EQ(p.header.host, "");
    if (p.kernels.empty() && p.memcpys.empty() && p.memsets.empty()) continue;
    any_gpu = true;
    EXPECT_EQ(p.header.device, "0") << p.header.pid;
  }
  EXPECT_TRUE(any_gpu);
}

}  // namespace
}  // namespace tracer::analysis::importers
