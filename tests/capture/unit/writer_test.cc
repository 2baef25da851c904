// The writer's output parses back with the generated protobuf classes field
// for field: every record kind the tracer writes (NVTX ranges, marks,
// launches, graph-node snapshots from rings; kernels, copies, sets, API
// calls, syncs, overheads, graph launches, PM samples from a RecordSource),
// the definitions they use, counters and the footer.
#include "libtracer/capture/writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <string>
#include <thread>

#include "libtracer/capture/definitions.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/thread_state.h"
#include "libtracer/core/string_table.h"
#include "tests/capture/trace_file_reader.h"
#include "tests/capture/unit/make_event.h"

namespace tracer {
namespace {

using testing::MakeEvent;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/tracer_writer_test_" + std::to_string(getpid()) + "_" +
         name;
}

uint32_t Id(const char* s) { return GlobalStrings().Intern(s).id; }

HeaderInfo TestHeader() {
  HeaderInfo h;
  h.tracer_version = "9.9.9";
  h.host = "testhost";
  h.pid = 4242;
  h.rank = 3;
  h.clock_description = "test clock";
  h.session_start_wall_ns = 1700000000000000000ull;
  h.session_start_trace_ns = 1000;
  h.config = {{"TRACER_OUTPUT", "x.trace"}, {"TRACER_BUFFER_SIZE", "4096"}};
  h.command_line = {"prog", "--flag"};
  h.parent_pid = 77;
  h.world_size = 4;
  h.local_rank = 0;  // 0 is a rank: written, with presence
  h.device = "GPU-8a1b";
  h.cuda_visible_devices = "GPU-8a1b";
  return h;
}

// Stands in for the CUPTI activity decoder: emits one record of every kind
// through the RecordSink interface on its first drain.
struct FakeSource : RecordSource {
  bool done = false;
  bool saw_final = false;
  uint32_t stream = 0, config = 0, thread = 0, kname = 0, api_name = 0, metric = 0;
  void Drain(RecordSink& sink, bool final) noexcept override {
    if (final) saw_final = true;
    if (done) return;
    done = true;
    kname = sink.InternString("_Z6kernelv");
    api_name = sink.InternString("cudaLaunchKernel_v7000");
    metric = sink.InternString("sm__throughput.avg.pct");
    stream = sink.StreamId(1, 2, 33);
    EXPECT_EQ(sink.StreamId(1, 2, 33), stream);  // stable
    LaunchConfigRecord lc;
    lc.grid[0] = 10;
    lc.grid[1] = 2;
    lc.grid[2] = 1;
    lc.block[0] = 256;
    lc.block[1] = 1;
    lc.block[2] = 1;
    lc.static_shared_memory = 128;
    lc.dynamic_shared_memory = 4096;
    lc.registers_per_thread = 32;
    config = sink.LaunchConfigId(lc);
    thread = sink.ThreadIdForPthread(0xABCDEF);  // a thread that never used NVTX
    KernelRecord k;
    k.start_ns = 5000;
    k.end_ns = 7000;
    k.name = kname;
    k.stream = stream;
    k.correlation_id = 12;
    k.launch_config = config;
    k.graph_id = 3;
    k.graph_node_id = 4;
    sink.Kernel(k);
    k.start_ns = 8000;
    k.end_ns = 8500;
    k.correlation_id = 13;
    k.graph_id = 0;
    k.graph_node_id = 0;
    sink.Kernel(k);
    MemcpyRecord m;
    m.start_ns = 100;
    m.end_ns = 300;
    m.bytes = 1 << 20;
    m.copy_kind = 1;
    m.stream = stream;
    m.correlation_id = 14;
    m.flags = 1 | (2 << 8) | (3 << 16);
    sink.Memcpy(m);
    MemsetRecord s;
    s.start_ns = 400;
    s.end_ns = 450;
    s.bytes = 64;
    s.value = 7;
    s.stream = stream;
    s.correlation_id = 15;
    s.flags = 1;
    sink.Memset(s);
    ApiRecord a;
    a.start_ns = 4000;
    a.end_ns = 4100;
    a.domain = ApiDomain::kDriver;
    a.cbid = 211;
    a.thread = thread;
    a.correlation_id = 12;
    a.return_value = 0;
    a.name = api_name;
    sink.Api(a);
    SyncRecord sy;
    sy.start_ns = 9000;
    sy.end_ns = 9500;
    sy.type = 3;
    sy.stream = stream;
    sy.correlation_id = 16;
    sy.context = 1;
    sy.event = 2;
    sink.Sync(sy);
    OverheadRecord o;
    o.start_ns = 10;
    o.end_ns = 20;
    o.kind = 4;
    o.thread = thread;
    o.correlation_id = 0;
    sink.Overhead(o);
    GraphLaunchRecord gl;
    gl.start_ns = 11000;
    gl.end_ns = 12000;
    gl.graph_id = 3;
    gl.stream = stream;
    gl.correlation_id = 17;
    sink.GraphLaunch(gl);
    PmSampleRecord pm;
    pm.start_ns = 100;
    pm.end_ns = 200;
    pm.device = 1;
    pm.metric = metric;
    pm.value = 42.5;
    sink.PmSample(pm);
    sink.Count("dropped.cupti_dropped", 3);
    sink.Count("cupti_unattributed", 2);
  }
};

TEST(WriterTest, EveryRecordParsesBackFieldForField) {
  std::string path = TempPath("roundtrip.trace");
  ThreadRegistry registry(1 << 16);
  ThreadState* t = registry.Register(/*os_tid=*/555001, /*pthread_id=*/0x1111);
  ThreadState* t2 = registry.Register(555002, 0x2222);
  ASSERT_NE(t, nullptr);
  uint32_t outer = Id("w_outer"), inner = Id("w_inner"), mark = Id("w_mark");
  uint32_t tname = Id("w_thread"), dname = Id("w_domain"), cname = Id("w_category");
  GlobalDefinitions().NameOsThread(555001, tname);
  NvtxDomain* dom = GlobalDefinitions().CreateDomain(dname, true);
  GlobalDefinitions().NameCategory(dom->id, 5, cname);

  Event payload = MakeEvent(EventType::kPayload, 0, static_cast<uint64_t>(-9), 0, 0, 0,
                            static_cast<uint8_t>(PayloadValue::Type::kI64));
  Event push[2] = {MakeEvent(EventType::kPush, 1000, 1, outer, 5 | (0xFF00FF00ull << 32), dom->id,
                             kEventHasPayload),
                   payload};
  ASSERT_TRUE(t->Append(push, 2));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 1100, 2, inner)));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 1200, 2)));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kMark, 1250, 0, mark, 6)));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 1300, 1, 0, 0, dom->id)));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kStart, 1400, 3, inner)));
  ASSERT_TRUE(t2->Append(MakeEvent(EventType::kEnd, 1500, 3)));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kLaunch, 1600, 12, 211, 1, 0,
                                  static_cast<uint8_t>(ApiDomain::kDriver))));
  Event graph[2] = {MakeEvent(EventType::kGraphNode, 1700, 3, 0, 1),
                    MakeEvent(EventType::kPayload, 0, 4, 0, 0, 0,
                              static_cast<uint8_t>(PayloadValue::Type::kU64))};
  ASSERT_TRUE(t->Append(graph, 2));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 1800, 4, outer)));  // left open

  FakeSource source;
  Writer writer(&registry, 1000);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, TestHeader(), &error)) << error;
  writer.AddSource(&source);
  writer.DrainOnce(false);
  writer.DrainOnce(true);
  EXPECT_TRUE(source.saw_final);

  testing::ParsedTrace p = testing::ReadTraceFile(path);
  ASSERT_TRUE(p.magic_ok);
  EXPECT_EQ(p.stop_reason, "");
  EXPECT_TRUE(p.problems.empty()) << p.problems[0];
  ASSERT_TRUE(p.has_header);
  ASSERT_TRUE(p.has_footer);
  EXPECT_EQ(p.frames, 3u);  // header, records, footer

  // Header.
  const auto& h = p.header;
  EXPECT_EQ(h.format_version(), 2u);
  EXPECT_EQ(h.tracer_version(), "9.9.9");
  EXPECT_EQ(h.host(), "testhost");
  EXPECT_EQ(h.pid(), 4242u);
  EXPECT_EQ(h.rank(), 3);
  EXPECT_EQ(h.world_size(), 4);
  ASSERT_TRUE(h.has_local_rank());
  EXPECT_EQ(h.local_rank(), 0);
  EXPECT_EQ(h.device(), "GPU-8a1b");
  EXPECT_EQ(h.cuda_visible_devices(), "GPU-8a1b");
  EXPECT_EQ(h.clock().description(), "test clock");
  EXPECT_EQ(h.session_start_wall_ns(), 1700000000000000000ull);
  EXPECT_EQ(h.session_start_trace_ns(), 1000u);
  ASSERT_EQ(h.config_size(), 2);
  EXPECT_EQ(h.config(1).key(), "TRACER_BUFFER_SIZE");
  EXPECT_EQ(h.config(1).value(), "4096");
  ASSERT_EQ(h.command_line_size(), 2);
  EXPECT_EQ(h.command_line(1), "--flag");
  EXPECT_EQ(h.parent_pid(), 77u);
  EXPECT_EQ(h.source(), "tracer");

  // Definitions.
  ASSERT_TRUE(p.threads.count(t->id()));
  EXPECT_EQ(p.threads[t->id()].os_tid(), 555001u);
  EXPECT_EQ(p.threads[t->id()].pthread_id(), 0x1111u);
  EXPECT_EQ(p.Name(p.threads[t->id()].name()), "w_thread");
  ASSERT_TRUE(p.threads.count(source.thread));
  EXPECT_EQ(p.threads[source.thread].pthread_id(), 0xABCDEFu);
  EXPECT_EQ(p.threads[source.thread].os_tid(), 0u);
  ASSERT_TRUE(p.domains.count(dom->id));
  EXPECT_EQ(p.Name(p.domains[dom->id].name()), "w_domain");
  bool category_found = false;
  for (const auto& c : p.categories) {
    if (c.domain() == dom->id && c.category() == 5 && p.Name(c.name()) == "w_category") {
      category_found = true;
    }
  }
  EXPECT_TRUE(category_found);

  // Ranges.
  ASSERT_EQ(p.ranges.size(), 4u);
  const proto::Range* r_outer = nullptr;
  const proto::Range* r_inner = nullptr;
  const proto::Range* r_start = nullptr;
  const proto::Range* r_open = nullptr;
  for (const auto& r : p.ranges) {
    if (r.id() == 1) r_outer = &r;
    if (r.id() == 2) r_inner = &r;
    if (r.id() == 3) r_start = &r;
    if (r.id() == 4) r_open = &r;
  }
  ASSERT_TRUE(r_outer && r_inner && r_start && r_open);
  EXPECT_EQ(p.Name(r_outer->name()), "w_outer");
  EXPECT_EQ(r_outer->parent_id(), 0u);
  EXPECT_EQ(r_outer->thread(), t->id());
  EXPECT_EQ(r_outer->domain(), dom->id);
  EXPECT_EQ(r_outer->category(), 5u);
  EXPECT_EQ(r_outer->color(), 0xFF00FF00u);
  EXPECT_EQ(r_outer->start_ns(), 1000u);
  EXPECT_EQ(r_outer->end_ns(), 1300u);
  EXPECT_EQ(r_outer->kind(), proto::RANGE_PUSH_POP);
  EXPECT_EQ(r_outer->depth(), 0u);
  EXPECT_EQ(r_outer->flags(), 0u);
  ASSERT_EQ(r_outer->payload().value_case(), proto::Payload::kI64);
  EXPECT_EQ(r_outer->payload().i64(), -9);
  EXPECT_EQ(r_inner->parent_id(), 1u);
  EXPECT_EQ(r_inner->depth(), 1u);
  EXPECT_EQ(r_inner->start_ns(), 1100u);
  EXPECT_EQ(r_inner->end_ns(), 1200u);
  EXPECT_EQ(r_inner->domain(), 0u);
  EXPECT_EQ(r_start->kind(), proto::RANGE_START_END);
  EXPECT_EQ(r_start->thread(), t->id());
  EXPECT_EQ(r_start->end_thread(), t2->id());
  EXPECT_EQ(r_start->start_ns(), 1400u);
  EXPECT_EQ(r_start->end_ns(), 1500u);
  EXPECT_EQ(r_open->flags(), static_cast<uint32_t>(proto::RANGE_FLAG_UNCLOSED));
  EXPECT_GE(r_open->end_ns(), r_open->start_ns());

  // Marks.
  ASSERT_EQ(p.marks.size(), 1u);
  EXPECT_EQ(p.Name(p.marks[0].name()), "w_mark");
  EXPECT_EQ(p.marks[0].time_ns(), 1250u);
  EXPECT_EQ(p.marks[0].thread(), t->id());
  EXPECT_EQ(p.marks[0].category(), 6u);

  // Columnar and row records, all in the records chunk.
  const proto::Chunk& c = p.chunks[1];
  ASSERT_EQ(c.launches().correlation_delta_size(), 1);
  EXPECT_EQ(c.launches().correlation_delta(0), 12);
  EXPECT_EQ(c.launches().time_delta(0), 1600);
  EXPECT_EQ(c.launches().thread(0), t->id());
  EXPECT_EQ(c.launches().range_id(0), 1u);
  EXPECT_EQ(c.launches().cbid(0), 211u);
  EXPECT_EQ(c.launches().domain(0), static_cast<uint32_t>(proto::API_DRIVER));
  ASSERT_EQ(c.graph_nodes_size(), 1);
  EXPECT_EQ(c.graph_nodes(0).graph_id(), 3u);
  EXPECT_EQ(c.graph_nodes(0).graph_node_id(), 4u);
  EXPECT_EQ(c.graph_nodes(0).range_id(), 1u);
  EXPECT_EQ(c.graph_nodes(0).time_ns(), 1700u);

  ASSERT_EQ(c.streams_size(), 1);
  EXPECT_EQ(c.streams(0).id(), source.stream);
  EXPECT_EQ(c.streams(0).device(), 1u);
  EXPECT_EQ(c.streams(0).context(), 2u);
  EXPECT_EQ(c.streams(0).stream(), 33u);
  ASSERT_EQ(c.launch_configs_size(), 1);
  const auto& lc = c.launch_configs(0);
  EXPECT_EQ(lc.id(), source.config);
  EXPECT_EQ(lc.grid_x(), 10u);
  EXPECT_EQ(lc.grid_y(), 2u);
  EXPECT_EQ(lc.block_x(), 256u);
  EXPECT_EQ(lc.static_shared_memory(), 128u);
  EXPECT_EQ(lc.dynamic_shared_memory(), 4096u);
  EXPECT_EQ(lc.registers_per_thread(), 32u);

  const auto& k = c.kernels();
  ASSERT_EQ(k.start_delta_size(), 2);
  EXPECT_EQ(k.start_delta(0), 5000);
  EXPECT_EQ(k.start_delta(0) + k.start_delta(1), 8000);
  EXPECT_EQ(k.duration(0), 2000u);
  EXPECT_EQ(k.duration(1), 500u);
  EXPECT_EQ(p.Name(k.name(0)), "_Z6kernelv");
  EXPECT_EQ(k.stream(1), source.stream);
  EXPECT_EQ(k.correlation_delta(0), 12);
  EXPECT_EQ(k.correlation_delta(1), 1);
  EXPECT_EQ(k.launch_config(0), source.config);
  ASSERT_EQ(k.graph_size(), 1);
  EXPECT_EQ(k.graph(0).row(), 0u);
  EXPECT_EQ(k.graph(0).graph_id(), 3u);
  EXPECT_EQ(k.graph(0).graph_node_id(), 4u);

  const auto& m = c.memcpys();
  ASSERT_EQ(m.start_delta_size(), 1);
  EXPECT_EQ(m.start_delta(0), 100);
  EXPECT_EQ(m.duration(0), 200u);
  EXPECT_EQ(m.bytes(0), 1u << 20);
  EXPECT_EQ(m.copy_kind(0), 1u);
  EXPECT_EQ(m.stream(0), source.stream);
  EXPECT_EQ(m.correlation_delta(0), 14);
  EXPECT_EQ(m.flags(0), 1u | (2u << 8) | (3u << 16));

  const auto& s = c.memsets();
  ASSERT_EQ(s.start_delta_size(), 1);
  EXPECT_EQ(s.duration(0), 50u);
  EXPECT_EQ(s.bytes(0), 64u);
  EXPECT_EQ(s.value(0), 7u);
  EXPECT_EQ(s.correlation_delta(0), 15);
  EXPECT_EQ(s.flags(0), 1u);

  const auto& a = c.api_calls();
  ASSERT_EQ(a.start_delta_size(), 1);
  EXPECT_EQ(a.start_delta(0), 4000);
  EXPECT_EQ(a.duration(0), 100u);
  EXPECT_EQ(a.domain(0), static_cast<uint32_t>(proto::API_DRIVER));
  EXPECT_EQ(a.cbid(0), 211u);
  EXPECT_EQ(a.thread(0), source.thread);
  EXPECT_EQ(a.correlation_delta(0), 12);
  EXPECT_EQ(p.Name(a.name(0)), "cudaLaunchKernel_v7000");

  ASSERT_EQ(c.synchronizations_size(), 1);
  EXPECT_EQ(c.synchronizations(0).start_ns(), 9000u);
  EXPECT_EQ(c.synchronizations(0).end_ns(), 9500u);
  EXPECT_EQ(c.synchronizations(0).type(), 3u);
  EXPECT_EQ(c.synchronizations(0).stream(), source.stream);
  EXPECT_EQ(c.synchronizations(0).correlation_id(), 16u);
  EXPECT_EQ(c.synchronizations(0).context(), 1u);
  EXPECT_EQ(c.synchronizations(0).event(), 2u);
  ASSERT_EQ(c.overheads_size(), 1);
  EXPECT_EQ(c.overheads(0).start_ns(), 10u);
  EXPECT_EQ(c.overheads(0).end_ns(), 20u);
  EXPECT_EQ(c.overheads(0).kind(), 4u);
  EXPECT_EQ(c.overheads(0).thread(), source.thread);
  ASSERT_EQ(c.graph_launches_size(), 1);
  EXPECT_EQ(c.graph_launches(0).start_ns(), 11000u);
  EXPECT_EQ(c.graph_launches(0).end_ns(), 12000u);
  EXPECT_EQ(c.graph_launches(0).graph_id(), 3u);
  EXPECT_EQ(c.graph_launches(0).stream(), source.stream);
  EXPECT_EQ(c.graph_launches(0).correlation_id(), 17u);
  ASSERT_EQ(c.pm_samples_size(), 1);
  EXPECT_EQ(c.pm_samples(0).start_ns(), 100u);
  EXPECT_EQ(c.pm_samples(0).end_ns(), 200u);
  EXPECT_EQ(c.pm_samples(0).device(), 1u);
  EXPECT_EQ(p.Name(c.pm_samples(0).metric()), "sm__throughput.avg.pct");
  EXPECT_EQ(c.pm_samples(0).value(), 42.5);

  // Counters and footer.
  EXPECT_EQ(p.counters["dropped.cupti_dropped"], 3u);
  EXPECT_EQ(p.counters["cupti_unattributed"], 2u);
  std::map<std::string, uint64_t> kinds, dropped, stats;
  for (const auto& x : p.footer.records_by_kind()) kinds[x.name()] = x.value();
  for (const auto& x : p.footer.dropped_by_cause()) dropped[x.name()] = x.value();
  for (const auto& x : p.footer.stats()) stats[x.name()] = x.value();
  EXPECT_EQ(kinds["ranges"], 4u);
  EXPECT_EQ(kinds["marks"], 1u);
  EXPECT_EQ(kinds["launches"], 1u);
  EXPECT_EQ(kinds["graph_nodes"], 1u);
  EXPECT_EQ(kinds["kernels"], 2u);
  EXPECT_EQ(kinds["memcpys"], 1u);
  EXPECT_EQ(kinds["memsets"], 1u);
  EXPECT_EQ(kinds["api_calls"], 1u);
  EXPECT_EQ(kinds["synchronizations"], 1u);
  EXPECT_EQ(kinds["overheads"], 1u);
  EXPECT_EQ(kinds["graph_launches"], 1u);
  EXPECT_EQ(kinds["pm_samples"], 1u);
  EXPECT_EQ(dropped["cupti_dropped"], 3u);
  EXPECT_EQ(stats["cupti_unattributed"], 2u);
  EXPECT_EQ(stats["ranges_left_open"], 1u);
  EXPECT_GT(p.footer.overhead_ns(), 0u);
  EXPECT_GE(p.footer.session_end_trace_ns(), 1u);
  unlink(path.c_str());
}

TEST(WriterTest, DiskFullStopsWritingWithoutCrashing) {
  int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  ThreadRegistry registry(1 << 16);
  ThreadState* t = registry.Register(1, 1);
  Writer writer(&registry, 1000);
  EXPECT_FALSE(writer.BeginOnFd(fd, TestHeader()));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 10 + i, 100 + i, Id("df"))));
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 20 + i, 100 + i)));
  }
  writer.DrainOnce(false);
  writer.DrainOnce(true);
  EXPECT_TRUE(writer.file().failed());
  EXPECT_GT(writer.file().bytes_lost(), 0u);
  EXPECT_EQ(writer.file().bytes_written(), 0u);
}

TEST(WriterTest, ExitedThreadIsDrainedThenFreed) {
  std::string path = TempPath("exited.trace");
  ThreadRegistry registry(1 << 16);
  ThreadState* t = registry.Register(1, 1);
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 10, 1, Id("last_words"))));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 20, 1)));
  t->exited.store(true);
  Writer writer(&registry, 1000);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, TestHeader(), &error));
  writer.DrainOnce(false);
  std::vector<ThreadState*> left;
  registry.Snapshot(&left);
  EXPECT_TRUE(left.empty());
  writer.DrainOnce(true);
  testing::ParsedTrace p = testing::ReadTraceFile(path);
  ASSERT_EQ(p.ranges.size(), 1u);
  EXPECT_EQ(p.Name(p.ranges[0].name()), "last_words");
  unlink(path.c_str());
}

// A source that runs out of memory once armed (as any allocation of a drain
// pass may).
struct ThrowingSource : RecordSource {
  std::atomic<bool> armed{false};
  void Drain(RecordSink& sink, bool final) override {
    if (armed.load()) {
      sink.InternString("half_done");  // leaves the pass half way through
      throw std::bad_alloc();
    }
  }
};

// A pass that throws may leave half a record in the frame being built: the
// file keeps its complete frames, gets nothing more (no footer), and the
// exception reaches the caller (the entry point's guard).
TEST(WriterTest, ThrowingPassClosesTheFileAtItsLastFrame) {
  std::string path = TempPath("throwing.trace");
  ThreadRegistry registry(1 << 16);
  ThreadState* t = registry.Register(1, 1);
  ThrowingSource source;
  Writer writer(&registry, 1000);
  writer.AddSource(&source);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, TestHeader(), &error));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 10, 1, Id("before_failure"))));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 20, 1)));
  writer.DrainOnce(false);
  source.armed = true;
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 30, 2, Id("lost"))));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 40, 2)));
  EXPECT_THROW(writer.DrainOnce(false), std::bad_alloc);
  const uint64_t written = writer.file().bytes_written();
  source.armed = false;
  writer.DrainOnce(true);  // nothing more, not even the footer
  EXPECT_EQ(writer.file().bytes_written(), written);
  testing::ParsedTrace p = testing::ReadTraceFile(path);
  EXPECT_TRUE(p.magic_ok);
  EXPECT_EQ(p.stop_reason, "");
  EXPECT_TRUE(p.problems.empty());
  EXPECT_FALSE(p.has_footer);
  ASSERT_EQ(p.ranges.size(), 1u);
  EXPECT_EQ(p.Name(p.ranges[0].name()), "before_failure");
  unlink(path.c_str());
}

// On the writer thread the failure ends the thread through its guard, which
// marks it finished: Flush and Stop return at once instead of timing out.
TEST(WriterTest, WriterThreadFailureDoesNotMakeStopWait) {
  std::string path = TempPath("thread_throwing.trace");
  ThreadRegistry registry(1 << 16);
  ThrowingSource source;
  source.armed = true;
  Writer writer(&registry, 1000);
  writer.AddSource(&source);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, TestHeader(), &error));
  writer.StartThread();
  const auto start = std::chrono::steady_clock::now();
  writer.Flush(5000);
  EXPECT_TRUE(writer.Stop(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  testing::ParsedTrace p = testing::ReadTraceFile(path);
  EXPECT_TRUE(p.magic_ok && p.has_header && !p.has_footer);
  unlink(path.c_str());
}

// RequestPopulate (a producer nearing the end of the populated part of its
// fresh ring) makes the writer thread fault that ring's pages in ahead of
// the head, at once and without a drain: with a 60 s flush interval only the
// request makes it run, and the events are all still in the ring after.
TEST(WriterTest, RequestPopulateFaultsRingPagesInAheadWithoutADrain) {
  if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "page size is not 4 KiB";
  void* probe = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool populate = RingPopulateBySystem(probe, 4096) == 0;
  munmap(probe, 4096);
  if (!populate) GTEST_SKIP() << "no MADV_POPULATE_WRITE (kernel before 5.14)";
  std::string path = TempPath("populate.trace");
  ThreadRegistry registry(32 << 20);
  ThreadState* t = registry.Register(1, 1);
  const uint64_t events = 4000;  // 125 KiB; the producer faulted in 136 KiB itself
  for (uint64_t i = 0; i < events / 2; ++i) {
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 10 + 2 * i, 1 + i, Id("p"))));
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 11 + 2 * i, 1 + i)));
  }
  const uint64_t resident_before = t->ring().ResidentBytes();
  Writer writer(&registry, 60000);
  std::string error;
  ASSERT_TRUE(writer.Begin(path, TestHeader(), &error));
  writer.StartThread();
  writer.RequestPopulate();
  // At least twice what was written since the writer last looked, past the
  // head: 3 x 4,000 events in all (10 s at most on a loaded machine).
  const uint64_t want = 3 * events * sizeof(Event);
  ASSERT_LT(resident_before, want);  // what the producer faulted in itself
  for (int i = 0; i < 1000 && t->ring().ResidentBytes() < want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(t->ring().ResidentBytes(), want) << "before the request: " << resident_before;
  EXPECT_EQ(t->ring().SizeApprox(), events);  // not drained
  EXPECT_TRUE(writer.Stop(10000));
  testing::ParsedTrace p = testing::ReadTraceFile(path);
  EXPECT_EQ(p.ranges.size(), events / 2);
  unlink(path.c_str());
}

// Reads what is in the pipe now (non-blocking) onto *out; bytes read.
size_t ReadAvailable(int fd, std::string* out) {
  size_t total = 0;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return total;
    out->append(buf, static_cast<size_t>(n));
    total += static_cast<size_t>(n);
  }
}

// Reads until the pipe has given more than `size` bytes in all (10 s at most).
bool ReadUntilMoreThan(int fd, std::string* out, size_t size) {
  for (int i = 0; i < 1000 && out->size() <= size; ++i) {
    ReadAvailable(fd, out);
    if (out->size() <= size) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return out->size() > size;
}

// RequestDrain (a forked child's top-level pop) wakes the writer thread and
// returns: with a 60 s flush interval only the request makes it drain, and a
// request made while the writer thread is stuck in write() (a full pipe)
// returns at once instead of waiting for it.
TEST(WriterTest, RequestDrainWakesTheWriterThreadWithoutWaiting) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  ThreadRegistry registry(1 << 20);
  ThreadState* t = registry.Register(1, 1);
  Writer writer(&registry, 60000);
  ASSERT_TRUE(writer.BeginOnFd(fds[1], TestHeader()));
  writer.StartThread();
  std::string bytes;
  ReadAvailable(fds[0], &bytes);  // magic and header
  const size_t header = bytes.size();
  ASSERT_GT(header, 0u);

  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 10, 1, Id("requested"))));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 20, 1)));
  writer.RequestDrain();
  ASSERT_TRUE(ReadUntilMoreThan(fds[0], &bytes, header)) << "no drain after RequestDrain";

  // Stall the writer thread: many ranges, a frame larger than the pipe, and
  // nobody reading.
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 100 + 2 * i, 2 + i, Id("bulk"))));
    ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 101 + 2 * i, 2 + i)));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the 1 ms spacing
  writer.RequestDrain();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // it is now stuck in write()
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPush, 9000, 9000, Id("while_stuck"))));
  ASSERT_TRUE(t->Append(MakeEvent(EventType::kPop, 9001, 9000)));
  const auto before = std::chrono::steady_clock::now();
  writer.RequestDrain();
  writer.RequestDrain();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(1));

  // Unblock it; the pending request drains "while_stuck" too.
  const size_t before_bulk = bytes.size();
  ASSERT_TRUE(ReadUntilMoreThan(fds[0], &bytes, before_bulk));
  std::thread reader([&] {  // until the writer closes its end (EOF)
    char buf[65536];
    while (true) {
      ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n == 0) return;
      if (n > 0) {
        bytes.append(buf, static_cast<size_t>(n));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  EXPECT_TRUE(writer.Stop(10000));
  reader.join();
  close(fds[0]);

  const std::string path = TempPath("request_drain.trace");
  std::ofstream(path, std::ios::binary) << bytes;
  testing::ParsedTrace p = testing::ReadTraceFile(path);
  EXPECT_TRUE(p.has_footer);
  std::map<std::string, size_t> counts;
  for (const auto& r : p.ranges) ++counts[std::string(p.Name(r.name()))];
  EXPECT_EQ(counts["requested"], 1u);
  EXPECT_EQ(counts["bulk"], 2000u);
  EXPECT_EQ(counts["while_stuck"], 1u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tracer
