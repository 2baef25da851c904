// The activity decoder on hand-built CUPTI 13.0 records, walked through the
// real processing path (CuptiDecoder over a CuptiApi whose iterator behaves
// like the real cuptiActivityGetNextRecord).
#include "libtracer/capture/cupti_decoder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/cupti/activity_records.h"
#include "tests/cupti/in_process_cupti.h"
#include "tests/cupti/recording_sink.h"

namespace tracer {
namespace {

using testing::InProcessCupti;
using testing::MakeApi;
using testing::MakeKernel;
using testing::MakeMemcpy;
using testing::MakeMemset;
using testing::RecordingSink;

struct Buffer {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(1 << 16);
  fake_cupti::BufferWriter writer{bytes.data(), bytes.size()};
  template <typename R>
  Buffer& Add(const R& r) {
    EXPECT_TRUE(writer.Append(r));
    return *this;
  }
};

class CuptiDecoderTest : public ::testing::Test {
 protected:
  size_t Decode(Buffer& b, CuptiCaptureWindow* window = nullptr) {
    if (decoder_ == nullptr) decoder_ = std::make_unique<CuptiDecoder>(&api_, window);
    return decoder_->DecodeBuffer(b.bytes.data(), b.writer.used(), sink_);
  }
  InProcessCupti api_;
  RecordingSink sink_;
  std::unique_ptr<CuptiDecoder> decoder_;
};

TEST_F(CuptiDecoderTest, KernelFieldsReachTheSink) {
  static const char kGemm[] = "gemm_kernel";
  CUpti_ActivityKernel10 k = MakeKernel(kGemm, 1000, 1500, 7, 42, 1, 3);
  k.gridX = 64;
  k.blockX = 128;
  k.blockY = 2;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.registersPerThread = 40;
  k.graphId = 5;
  k.graphNodeId = 77;
  Buffer b;
  b.Add(k);
  EXPECT_EQ(Decode(b), 1u);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  const KernelRecord& r = sink_.kernels[0];
  EXPECT_EQ(r.start_ns, 1000u);
  EXPECT_EQ(r.end_ns, 1500u);
  EXPECT_EQ(sink_.Text(r.name), "gemm_kernel");
  EXPECT_EQ(r.correlation_id, 42u);
  EXPECT_EQ(r.graph_id, 5u);
  EXPECT_EQ(r.graph_node_id, 77u);
  EXPECT_EQ(sink_.streams.at({1, 3, 7}), r.stream);
  ASSERT_EQ(sink_.configs.size(), 1u);
  const LaunchConfigRecord& c = sink_.configs[0];
  EXPECT_EQ(r.launch_config, c.id);
  EXPECT_EQ(c.grid[0], 64u);
  EXPECT_EQ(c.block[0], 128u);
  EXPECT_EQ(c.block[1], 2u);
  EXPECT_EQ(c.static_shared_memory, 1024u);
  EXPECT_EQ(c.dynamic_shared_memory, 2048u);
  EXPECT_EQ(c.registers_per_thread, 40u);
}

TEST_F(CuptiDecoderTest, NamesStreamsAndConfigsAreDefinedOnce) {
  static const char kA[] = "a_kernel";
  static const char kB[] = "b_kernel";
  Buffer b;
  for (int i = 0; i < 10; ++i) {
    b.Add(MakeKernel(i % 2 ? kA : kB, 100 * i + 1, 100 * i + 50, i % 3, i + 1));
  }
  EXPECT_EQ(Decode(b), 10u);
  EXPECT_EQ(sink_.intern_calls, 2);
  EXPECT_EQ(sink_.streams.size(), 3u);
  EXPECT_EQ(sink_.configs.size(), 1u);
  EXPECT_EQ(sink_.Text(sink_.kernels[1].name), "a_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[2].name), "b_kernel");
}

// A module unload may free its kernel names and a later module reuse their
// address: a kernel that starts after the unload must be named by what the
// address holds then, not by the cached name of the one before.
TEST_F(CuptiDecoderTest, ANameAddressReusedAfterAModuleUnloadGetsItsOwnName) {
  char name[32] = "first_module_kernel";
  Buffer before;
  before.Add(MakeKernel(name, 100, 200, 7, 1)).Add(MakeKernel(name, 300, 400, 7, 2));
  EXPECT_EQ(Decode(before), 2u);
  decoder_->ModuleUnloaded(500, {});
  std::snprintf(name, sizeof(name), "%s", "second_module_kernel");  // same address
  Buffer after;
  after.Add(MakeKernel(name, 600, 700, 7, 3)).Add(MakeKernel(name, 800, 900, 7, 4));
  EXPECT_EQ(Decode(after), 2u);
  ASSERT_EQ(sink_.kernels.size(), 4u);
  EXPECT_EQ(sink_.Text(sink_.kernels[1].name), "first_module_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[2].name), "second_module_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[3].name), "second_module_kernel");
  EXPECT_EQ(sink_.intern_calls, 2);  // once per (address, module epoch)
}

// The unloading module's records still waiting to be decoded when it is
// unloaded (a stalled writer): their names are copied at the unload, so
// decoding them after the module's memory was reused by another module's
// name (same address) still gives the first module's name, and the copies
// go once those buffers were decoded.
TEST_F(CuptiDecoderTest, NamesOfUndecodedBuffersAreCopiedAtTheUnload) {
  char name[32] = "first_module_kernel";
  static const char kOther[] = "other_module_kernel";
  Buffer before;
  before.Add(MakeKernel(name, 100, 200, 7, 1)).Add(MakeKernel(kOther, 150, 250, 8, 2));
  Buffer before2;
  before2.Add(MakeKernel(name, 300, 400, 7, 3));
  decoder_ = std::make_unique<CuptiDecoder>(&api_, nullptr);
  decoder_->ModuleUnloaded(500, {{before.bytes.data(), before.writer.used()},
                                 {before2.bytes.data(), before2.writer.used()}});
  EXPECT_EQ(decoder_->saved_names(), 2u);
  std::snprintf(name, sizeof(name), "%s", "second_module_kernel");  // freed, reused
  Buffer after;
  after.Add(MakeKernel(name, 600, 700, 7, 4));
  EXPECT_EQ(Decode(before), 2u);
  EXPECT_EQ(decoder_->saved_names(), 2u);  // kept until before2 is decoded too
  EXPECT_EQ(Decode(after), 1u);
  EXPECT_EQ(Decode(before2), 1u);
  EXPECT_EQ(decoder_->saved_names(), 0u);
  ASSERT_EQ(sink_.kernels.size(), 4u);
  EXPECT_EQ(sink_.Text(sink_.kernels[0].name), "first_module_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[1].name), "other_module_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[2].name), "second_module_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[3].name), "first_module_kernel");
  EXPECT_EQ(sink_.counters.count("cupti_kernel_names_lost_at_unload"), 0u);
}

// A record of an unloaded module that reaches the decoder only after the
// unload (its buffer was still inside CUPTI) and whose name was neither seen
// nor copied: its address may hold another module's name or nothing, so it
// is never read; the kernel is named as such and counted. One seen before
// the unload keeps its cached name.
TEST_F(CuptiDecoderTest, ANameFirstSeenAfterItsModuleWasUnloadedIsNeverRead) {
  char seen[32] = "seen_kernel";
  char unseen[32] = "unseen_kernel";
  Buffer first;
  first.Add(MakeKernel(seen, 100, 200, 7, 1));
  EXPECT_EQ(Decode(first), 1u);
  decoder_->ModuleUnloaded(500, {});
  std::snprintf(seen, sizeof(seen), "%s", "reused_a");
  std::snprintf(unseen, sizeof(unseen), "%s", "reused_b");
  Buffer late;  // records from before the unload, delivered after it
  late.Add(MakeKernel(seen, 300, 400, 7, 2)).Add(MakeKernel(unseen, 310, 410, 7, 3));
  late.Add(MakeKernel(unseen, 320, 420, 7, 4));
  EXPECT_EQ(Decode(late), 3u);
  ASSERT_EQ(sink_.kernels.size(), 4u);
  EXPECT_EQ(sink_.Text(sink_.kernels[1].name), "seen_kernel");
  EXPECT_EQ(sink_.Text(sink_.kernels[2].name), CuptiDecoder::kUnloadedKernelName);
  EXPECT_EQ(sink_.Text(sink_.kernels[3].name), CuptiDecoder::kUnloadedKernelName);
  EXPECT_EQ(sink_.counters["cupti_kernel_names_lost_at_unload"], 1u);  // once per name
}

// Graph ids of memcpy and memset nodes reach the sink like a kernel's.
TEST_F(CuptiDecoderTest, MemcpyAndMemsetGraphIdsAreKept) {
  CUpti_ActivityMemcpy6 c = MakeMemcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 64, 100, 200, 7, 5, 0);
  c.graphId = 12;
  c.graphNodeId = 34;
  CUpti_ActivityMemset4 m = MakeMemset(64, 0, 300, 400, 7, 6);
  m.graphId = 12;
  m.graphNodeId = 35;
  Buffer b;
  b.Add(c).Add(m);
  EXPECT_EQ(Decode(b), 2u);
  ASSERT_EQ(sink_.memcpys.size(), 1u);
  ASSERT_EQ(sink_.memsets.size(), 1u);
  EXPECT_EQ(sink_.memcpys[0].graph_id, 12u);
  EXPECT_EQ(sink_.memcpys[0].graph_node_id, 34u);
  EXPECT_EQ(sink_.memsets[0].graph_id, 12u);
  EXPECT_EQ(sink_.memsets[0].graph_node_id, 35u);
}

TEST_F(CuptiDecoderTest, MemcpyKindBytesFlagsAndCorrelation) {
  CUpti_ActivityMemcpy6 runtime_copy =
      MakeMemcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 10, 20, 7, 101, 100);
  runtime_copy.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  runtime_copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  runtime_copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  CUpti_ActivityMemcpy6 driver_copy =
      MakeMemcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 8, 30, 40, 7, 205, 0);
  Buffer b;
  b.Add(runtime_copy).Add(driver_copy);
  Decode(b);
  ASSERT_EQ(sink_.memcpys.size(), 2u);
  EXPECT_EQ(sink_.memcpys[0].copy_kind, 1u);  // proto COPY_HTOD
  EXPECT_EQ(sink_.memcpys[0].bytes, 4096u);
  EXPECT_EQ(sink_.memcpys[0].flags, 1u | (CUPTI_ACTIVITY_MEMORY_KIND_PINNED << 8) |
                                        (CUPTI_ACTIVITY_MEMORY_KIND_DEVICE << 16));
  // The runtime call's id when there is one, else the driver call's.
  EXPECT_EQ(sink_.memcpys[0].correlation_id, 100u);
  EXPECT_EQ(sink_.memcpys[1].correlation_id, 205u);
  EXPECT_EQ(sink_.memcpys[1].copy_kind, 8u);  // proto COPY_DTOD
}

TEST_F(CuptiDecoderTest, MemsetAndSyncAndGraphTrace) {
  CUpti_ActivityMemset4 set = MakeMemset(256, 0xAB, 5, 9, 7, 12);
  set.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
  CUpti_ActivitySynchronization2 device_sync;
  std::memset(&device_sync, 0, sizeof(device_sync));
  device_sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  device_sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  device_sync.start = 50;
  device_sync.end = 80;
  device_sync.contextId = 1;
  device_sync.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  device_sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  device_sync.correlationId = 13;
  CUpti_ActivitySynchronization2 stream_sync = device_sync;
  stream_sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  stream_sync.streamId = 7;
  CUpti_ActivityGraphTrace2 g;
  std::memset(&g, 0, sizeof(g));
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.start = 100;
  g.end = 300;
  g.graphId = 9;
  g.contextId = 1;
  g.streamId = 7;
  g.correlationId = 14;
  Buffer b;
  b.Add(set).Add(device_sync).Add(stream_sync).Add(g);
  EXPECT_EQ(Decode(b), 4u);
  ASSERT_EQ(sink_.memsets.size(), 1u);
  EXPECT_EQ(sink_.memsets[0].value, 0xABu);
  EXPECT_EQ(sink_.memsets[0].bytes, 256u);
  EXPECT_EQ(sink_.memsets[0].flags, 1u);
  ASSERT_EQ(sink_.syncs.size(), 2u);
  EXPECT_EQ(sink_.syncs[0].stream, 0u);  // not applicable
  EXPECT_EQ(sink_.syncs[0].event, 0u);
  // The sync record has no device; the stream is the one the memset used.
  EXPECT_EQ(sink_.syncs[1].stream, sink_.memsets[0].stream);
  ASSERT_EQ(sink_.graph_launches.size(), 1u);
  EXPECT_EQ(sink_.graph_launches[0].graph_id, 9u);
  EXPECT_EQ(sink_.graph_launches[0].stream, sink_.memsets[0].stream);
  EXPECT_EQ(sink_.graph_launches[0].correlation_id, 14u);
}

TEST_F(CuptiDecoderTest, ApiRecordsGetThreadAndNameInternedOncePerCbid) {
  Buffer b;
  b.Add(MakeApi(false, 505, 1, 2, 0xAAAA, 1))
      .Add(MakeApi(false, 505, 3, 4, 0xBBBB, 2))
      .Add(MakeApi(true, 307, 5, 6, 0xAAAA, 3));
  Decode(b);
  ASSERT_EQ(sink_.apis.size(), 3u);
  EXPECT_EQ(sink_.apis[0].domain, ApiDomain::kRuntime);
  EXPECT_EQ(sink_.apis[2].domain, ApiDomain::kDriver);
  EXPECT_EQ(sink_.apis[0].cbid, 505u);
  EXPECT_EQ(sink_.Text(sink_.apis[0].name), "runtime_505");
  EXPECT_EQ(sink_.Text(sink_.apis[2].name), "driver_307");
  EXPECT_EQ(sink_.apis[0].thread, sink_.threads.at(0xAAAA));
  EXPECT_EQ(sink_.apis[1].thread, sink_.threads.at(0xBBBB));
  EXPECT_EQ(sink_.apis[2].thread, sink_.apis[0].thread);
  int name_lookups = 0;
  for (const std::string& c : api_.calls) name_lookups += c == "cuptiGetCallbackName";
  EXPECT_EQ(name_lookups, 2);
}

TEST_F(CuptiDecoderTest, OverheadDataIsFreedAndThreadMapped) {
  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof(o));
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.threadId = 0xCCCC;
  o.start = 10;
  o.end = 20;
  o.overheadData = std::malloc(16);  // the client must free it (cupti_activity.h)
  Buffer b;
  b.Add(o);
  Decode(b);
  ASSERT_EQ(sink_.overheads.size(), 1u);
  EXPECT_EQ(sink_.overheads[0].kind,
            static_cast<uint32_t>(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH));
  EXPECT_EQ(sink_.overheads[0].thread, sink_.threads.at(0xCCCC));
  const auto* in_buffer = reinterpret_cast<const CUpti_ActivityOverhead3*>(b.bytes.data());
  EXPECT_EQ(in_buffer->overheadData, nullptr);
}

TEST_F(CuptiDecoderTest, UnusableTimestampsAreCountedNotEmitted) {
  static const char kK[] = "k";
  Buffer b;
  b.Add(MakeKernel(kK, 0, 0, 1, 1))         // device buffer exhausted
      .Add(MakeKernel(kK, 500, 0, 1, 2))    // forced flush of a running kernel
      .Add(MakeKernel(kK, 500, 400, 1, 3))  // end < start
      .Add(MakeKernel(kK, 500, 600, 1, 4));
  EXPECT_EQ(Decode(b), 1u);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.kernels[0].correlation_id, 4u);
  EXPECT_EQ(sink_.counters["dropped.cupti_invalid_timestamps"], 3u);
  EXPECT_EQ(decoder_->totals().invalid_timestamps, 3u);
}

TEST_F(CuptiDecoderTest, UnknownKindsAreSkippedAndCounted) {
  static const char kK[] = "k";
  CUpti_ActivityExternalCorrelation ext;
  std::memset(&ext, 0, sizeof(ext));
  ext.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  Buffer b;
  b.Add(ext).Add(MakeKernel(kK, 1, 2, 1, 1));
  EXPECT_EQ(Decode(b), 1u);
  EXPECT_EQ(sink_.counters["cupti_unknown_kind"], 1u);
}

TEST_F(CuptiDecoderTest, InvalidRecordEndsTheBufferKeepingWhatCameBefore) {
  static const char kK[] = "k";
  Buffer b;
  b.Add(MakeKernel(kK, 1, 2, 1, 1));
  uint8_t zeros[sizeof(CUpti_ActivityKernel10)] = {};  // kind 0: incomplete record
  b.writer.AppendBytes(zeros, sizeof(zeros));
  b.Add(MakeKernel(kK, 3, 4, 1, 2));
  EXPECT_EQ(Decode(b), 1u);
  EXPECT_EQ(sink_.counters["cupti_buffer_errors"], 1u);
}

TEST_F(CuptiDecoderTest, TruncatedTailRecordIsIgnored) {
  static const char kK[] = "k";
  Buffer b;
  b.Add(MakeKernel(kK, 1, 2, 1, 1)).Add(MakeKernel(kK, 3, 4, 1, 2));
  EXPECT_EQ(decoder_ == nullptr, true);
  decoder_ = std::make_unique<CuptiDecoder>(&api_, nullptr);
  EXPECT_EQ(decoder_->DecodeBuffer(b.bytes.data(), b.writer.used() - 8, sink_), 1u);
  EXPECT_EQ(sink_.counters.count("cupti_buffer_errors"), 0u);
}

TEST_F(CuptiDecoderTest, CaptureWindowKeepsOpsByTheirLaunchAndOtherCallsByTime) {
  static const char kK[] = "k";
  CuptiCaptureWindow window(/*gated=*/true, /*initially_open=*/false);
  // Launch calls 10..19 and from 30 on saw the window open ...
  window.OpenAtLaunch(10);
  window.CloseAtLaunch(20);
  window.OpenAtLaunch(30);
  // ... which was open over [100, 200) and from 300 on.
  window.Open(100);
  window.Close(200);
  window.Open(300);
  constexpr uint32_t kLaunchCbid = CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000;
  constexpr uint32_t kStreamSync = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
  Buffer b;
  b.Add(MakeKernel(kK, 150, 160, 1, 5))      // runs inside, launched before: out
      .Add(MakeKernel(kK, 250, 260, 1, 12))  // runs after the close, launched inside: in
      .Add(MakeKernel(kK, 150, 160, 1, 25))  // runs inside, launched while closed: out
      .Add(MakeKernel(kK, 50, 60, 1, 31))    // launched inside the second opening: in
      .Add(MakeMemcpy(1, 64, 250, 260, 1, /*driver=*/16, /*runtime=*/15))  // in
      .Add(MakeMemcpy(1, 64, 150, 160, 1, /*driver=*/21, /*runtime=*/20))  // out
      .Add(MakeMemset(64, 0, 250, 260, 1, 19))                             // in
      .Add(MakeMemset(64, 0, 150, 160, 1, 9))                              // out
      .Add(MakeApi(false, kLaunchCbid, 250, 260, 1, 12))   // the launch of kernel 12: in
      .Add(MakeApi(false, kLaunchCbid, 150, 160, 1, 25))   // the launch of kernel 25: out
      .Add(MakeApi(false, kStreamSync, 150, 160, 1, 26))   // other call, started inside: in
      .Add(MakeApi(false, kStreamSync, 250, 260, 1, 13));  // started while closed: out
  EXPECT_EQ(Decode(b, &window), 6u);
  ASSERT_EQ(sink_.kernels.size(), 2u);
  EXPECT_EQ(sink_.kernels[0].correlation_id, 12u);
  EXPECT_EQ(sink_.kernels[1].correlation_id, 31u);
  ASSERT_EQ(sink_.memcpys.size(), 1u);
  EXPECT_EQ(sink_.memcpys[0].correlation_id, 15u);
  ASSERT_EQ(sink_.memsets.size(), 1u);
  EXPECT_EQ(sink_.memsets[0].correlation_id, 19u);
  ASSERT_EQ(sink_.apis.size(), 2u);
  EXPECT_EQ(sink_.apis[0].correlation_id, 12u);
  EXPECT_EQ(sink_.apis[1].correlation_id, 26u);
  EXPECT_EQ(sink_.counters["cupti_outside_capture_window"], 6u);
}

TEST_F(CuptiDecoderTest, CaptureWindowIdsSurviveTheCorrelationCounterWrapping) {
  static const char kK[] = "k";
  CuptiCaptureWindow window(/*gated=*/true, /*initially_open=*/false);
  Buffer before;
  before.Add(MakeKernel(kK, 1, 2, 1, 0xFFFFFF00u));  // decoded: the reference moves up
  Decode(before, &window);
  window.OpenAtLaunch(0xFFFFFFF0u);
  window.CloseAtLaunch(5);  // 2^32 + 5: after the wrap
  Buffer b;
  b.Add(MakeKernel(kK, 10, 20, 1, 0xFFFFFFEFu))     // just before the opening: out
      .Add(MakeKernel(kK, 10, 20, 1, 0xFFFFFFFEu))  // inside, before the wrap
      .Add(MakeKernel(kK, 10, 20, 1, 3))            // inside, after the wrap
      .Add(MakeKernel(kK, 10, 20, 1, 5));           // the closing launch: out
  EXPECT_EQ(Decode(b), 2u);
  ASSERT_EQ(sink_.kernels.size(), 2u);
  EXPECT_EQ(sink_.kernels[0].correlation_id, 0xFFFFFFFEu);
  EXPECT_EQ(sink_.kernels[1].correlation_id, 3u);
}

TEST_F(CuptiDecoderTest, UnfinishedOpsOfAForcedFlushAreCountedByCause) {
  static const char kK[] = "k";
  CuptiCaptureWindow window(/*gated=*/true, /*initially_open=*/false);
  window.OpenAtLaunch(10);
  window.CloseAtLaunch(20);
  Buffer spoiled;
  spoiled.Add(MakeKernel(kK, 0, 0, 1, 11));  // no forced flush yet: a spoiled record
  Decode(spoiled, &window);
  EXPECT_EQ(sink_.counters["dropped.cupti_invalid_timestamps"], 1u);
  decoder_->NoteForcedFlush();
  Buffer b;
  b.Add(MakeKernel(kK, 100, 0, 1, 12))        // was running: start, no end
      .Add(MakeKernel(kK, 0, 0, 1, 13))       // was still queued: no timestamp
      .Add(MakeKernel(kK, 0, 0, 1, 25))       // launched outside: not ours
      .Add(MakeKernel(kK, 300, 200, 1, 14));  // end before start: spoiled
  EXPECT_EQ(Decode(b), 0u);
  EXPECT_EQ(sink_.counters["dropped.cupti_unfinished_at_flush"], 2u);
  EXPECT_EQ(sink_.counters["dropped.cupti_invalid_timestamps"], 2u);
  EXPECT_EQ(sink_.counters["cupti_outside_capture_window"], 1u);
}

TEST(CuptiCaptureWindowTest, ConcurrentLaunchesKeepTheFirstBoundaryAndAreBounded) {
  CuptiCaptureWindow window(/*gated=*/true, /*initially_open=*/false);
  window.OpenAtLaunch(50);
  window.OpenAtLaunch(40);  // an earlier id saw the opening later: inside too
  window.CloseAtLaunch(70);
  window.CloseAtLaunch(60);  // already closed: the first boundary stays
  window.OpenAtLaunch(65);   // never reaches back over ids seen closed
  CuptiCaptureWindow::Snapshot s;
  window.Read(&s);
  ASSERT_EQ(s.id_intervals.size(), 2u);
  EXPECT_EQ(s.id_intervals[0], (std::pair<uint64_t, uint64_t>(40, 70)));
  EXPECT_EQ(s.id_intervals[1].first, 70u);
  EXPECT_TRUE(s.ContainsId(40));
  EXPECT_TRUE(s.ContainsId(69));
  EXPECT_TRUE(s.ContainsId(70));
  EXPECT_FALSE(s.ContainsId(39));
  // Many transitions: the list stays bounded, the newest are exact.
  for (uint32_t i = 0; i < 5000; ++i) {
    window.CloseAtLaunch(100 + 10 * i);
    window.OpenAtLaunch(105 + 10 * i);
  }
  window.Read(&s);
  EXPECT_LE(s.id_intervals.size(), CuptiCaptureWindow::kMaxIntervals);
  EXPECT_TRUE(s.ContainsId(105 + 10 * 4999));
  EXPECT_FALSE(s.ContainsId(100 + 10 * 4999));
  EXPECT_FALSE(s.ContainsId(101 + 10 * 4998));
  EXPECT_TRUE(s.ContainsId(105 + 10 * 4998));
}

TEST_F(CuptiDecoderTest, CountersAreReportedAsIncrementsPerBuffer) {
  static const char kK[] = "k";
  Buffer b1, b2;
  b1.Add(MakeKernel(kK, 0, 0, 1, 1));
  b2.Add(MakeKernel(kK, 0, 0, 1, 2)).Add(MakeKernel(kK, 0, 0, 1, 3));
  Decode(b1);
  EXPECT_EQ(sink_.counters["dropped.cupti_invalid_timestamps"], 1u);
  Decode(b2);
  EXPECT_EQ(sink_.counters["dropped.cupti_invalid_timestamps"], 3u);
}

}  // namespace
}  // namespace tracer
