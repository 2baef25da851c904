// Chrome trace export: valid JSON that Perfetto's JSON importer accepts, with
// ranges on thread tracks, GPU ops on per-stream tracks and launch flows,
// and memory counters where the input has them.
#include "libtracer/analysis/export/chrome_export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/reader.h"
#include "tests/analysis/run_tracer.h"
#include "tests/analysis/scenario.h"
#include "tests/importers/nsys_test_schema.h"

namespace tracer::analysis {
namespace {

nlohmann::json Export(const Trace& trace) {
  std::ostringstream out;
  std::string error;
  EXPECT_TRUE(WriteChromeTrace(trace, out, &error)) << error;
  return nlohmann::json::parse(out.str());
}

TEST(ChromeExportTest, TracksFlowsAndTimestamps) {
  testing::TraceFileBuilder b(100);
  testing::BuildScenario(&b);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "s.trace", &trace, &error));
  const nlohmann::json j = Export(trace);
  const auto& events = j.at("traceEvents");
  std::map<std::string, int> by_cat;
  std::map<std::string, int> by_ph;
  std::set<std::string> thread_names;
  std::map<int64_t, std::pair<int64_t, int64_t>> flow_start;  // id -> pid, tid
  int flows_finished = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    ++by_ph[ph];
    if (e.contains("cat")) ++by_cat[e["cat"].get<std::string>()];
    if (ph == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"]);
    if (ph == "s") flow_start[e["id"].get<int64_t>()] = {e["pid"], e["tid"]};
    if (ph == "f") {
      ++flows_finished;
      EXPECT_EQ(e["bp"], "e");
      EXPECT_GE(e["pid"].get<int64_t>(), 1000000000);  // a GPU pseudo process
      EXPECT_TRUE(flow_start.count(e["id"].get<int64_t>()));
    }
    if (ph == "X" && e["cat"] == "nvtx" && e["name"] == "layer" &&
        e["args"]["id"].get<int>() == 3) {
      // [200, 2000] ns -> ts 0.2 us, dur 1.8 us (exact decimals).
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.2);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.8);
      EXPECT_EQ(e["pid"], 100);
      EXPECT_EQ(e["tid"], 100);
    }
    if (ph == "X" && e["cat"] == "kernel" && e["args"]["correlation"] == 6) {
      EXPECT_EQ(e["tid"], 8);  // CUPTI stream 8
      EXPECT_EQ(e["name"], "bwd_kernel");
    }
  }
  EXPECT_EQ(by_cat["nvtx"], 6 + 2);  // 6 push/pop "X" + start/end "b" and "e"
  EXPECT_EQ(by_cat["kernel"], 8);
  EXPECT_EQ(by_cat["memcpy"], 1);
  // Every op with a launch record (8 of 9; K8 has none) has a flow.
  EXPECT_EQ(flows_finished, 8);
  EXPECT_EQ(flow_start.size(), 8u);
  EXPECT_TRUE(thread_names.count("main"));
  EXPECT_TRUE(thread_names.count("stream 7"));
  EXPECT_TRUE(thread_names.count("stream 8"));
}

TEST(ChromeExportTest, OddNamesStillGiveValidJson) {
  testing::TraceFileBuilder b;
  b.Range(1, 0, 1, "quote\" back\\slash \x01 latin1 \xe9", 0, 10);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "odd.trace", &trace, &error));
  const nlohmann::json j = Export(trace);
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      found = true;
      EXPECT_EQ(e["name"].get<std::string>().substr(0, 17), "quote\" back\\slash");
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeExportTest, MergedProcessesWithTheSamePidStayApart) {
  Trace trace;
  std::string error;
  for (int i = 0; i < 2; ++i) {
    testing::TraceFileBuilder b(100);
    b.Thread(1, 100);
    b.Range(1, 0, 1, "r", 0, 10);
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "same.trace", &trace, &error));
  }
  std::set<int64_t> pids;
  const nlohmann::json j = Export(trace);
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") pids.insert(e["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 2u);
}

// Memory counters (issue 16): per series ("GPU 0 allocated", "CPU
// reserved", ...) the points (ts in us as the JSON number reads, bytes).
using MemoryPoint = std::pair<double, int64_t>;
using MemorySeries = std::map<std::string, std::vector<MemoryPoint>>;

int64_t IntArg(const nlohmann::json& args, const char* key) {
  return args.contains(key) && args[key].is_number_integer() ? args[key].get<int64_t>() : -1;
}

void SortByTime(MemorySeries* series) {
  for (auto& [name, points] : *series) {
    std::stable_sort(points.begin(), points.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
  }
}

// What the input says: PyTorch's "[memory]" instant events, by device
// (c10 DeviceType 1 = CUDA, 0 = CPU), in time order.
MemorySeries InputMemory(const nlohmann::json& kineto) {
  MemorySeries series;
  for (const auto& e : kineto["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "i" || e.value("name", "") != "[memory]") continue;
    const nlohmann::json& a = e["args"];
    const std::string device =
        IntArg(a, "Device Type") == 1 ? "GPU " + std::to_string(IntArg(a, "Device Id")) : "CPU";
    const double ts = e["ts"].get<double>();
    if (const int64_t v = IntArg(a, "Total Allocated"); v >= 0)
      series[device + " allocated"].emplace_back(ts, v);
    if (const int64_t v = IntArg(a, "Total Reserved"); v >= 0)
      series[device + " reserved"].emplace_back(ts, v);
  }
  SortByTime(&series);
  return series;
}

// What the export draws: "GPU memory allocated|reserved" counters on a
// GPU's pseudo process (named "GPU n (...)" by its process_name), "CPU
// memory ..." on the process.
MemorySeries ExportedMemory(const nlohmann::json& chrome) {
  std::map<int64_t, std::string> gpu_of_pid;
  for (const auto& e : chrome["traceEvents"]) {
    if (e["ph"] != "M" || e["name"] != "process_name") continue;
    const std::string name = e["args"]["name"];
    if (name.rfind("GPU ", 0) == 0)
      gpu_of_pid[e["pid"].get<int64_t>()] = name.substr(0, name.find(' ', 4));
  }
  MemorySeries series;
  for (const auto& e : chrome["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const std::string name = e["name"];
    for (const char* prefix : {"GPU memory ", "CPU memory "}) {
      if (name.rfind(prefix, 0) != 0) continue;
      EXPECT_EQ(e["cat"], "memory");
      std::string device = "CPU";
      if (prefix[0] == 'G') {
        const auto it = gpu_of_pid.find(e["pid"].get<int64_t>());
        device = it == gpu_of_pid.end() ? "GPU ?" : it->second;
      }
      series[device + " " + name.substr(std::string(prefix).size())].emplace_back(
          e["ts"].get<double>(), IntArg(e["args"], "bytes"));
    }
  }
  return series;
}

nlohmann::json ExportWithCli(const std::string& input) {
  const testing::CliRun r =
      testing::RunTracerCli("export " + input + " --format chrome -o -", false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// A PyTorch profiler trace (profile_memory=True) as torch writes it: one
// "[memory]" instant event per allocation / free with the caching
// allocator's totals after it, on two GPUs and the CPU, one out of time order,
// one without "Total Reserved"; another instant event is not memory.
constexpr char kKinetoWithMemory[] = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 77, "tid": 77,
   "ts": 1000.000, "dur": 20.5, "args": {"External id": 1}},
  {"ph": "X", "cat": "kernel", "name": "fill_kernel", "pid": 0, "tid": 7,
   "ts": 1030.250, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 5}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1001.125, "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512,
   "Addr": 139872185532416, "Device Id": 0, "Device Type": 1}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1002.5, "args": {"Total Reserved": 2097152, "Total Allocated": 4608, "Bytes": 4096,
   "Addr": 139872185533440, "Device Id": 0, "Device Type": 1}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1010, "args": {"Total Reserved": 0, "Total Allocated": 64, "Bytes": 64,
   "Addr": 94000000, "Device Id": -1, "Device Type": 0}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1020.001, "args": {"Total Reserved": 23068672, "Total Allocated": 20971520,
   "Bytes": 20971520, "Addr": 140000000000000, "Device Id": 1, "Device Type": 1}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1005.75, "args": {"Total Reserved": 2097152, "Total Allocated": 4096, "Bytes": -512,
   "Addr": 139872185532416, "Device Id": 0, "Device Type": 1}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 77, "tid": 77,
   "ts": 1021, "args": {"Total Allocated": 0, "Bytes": -20971520,
   "Addr": 140000000000000, "Device Id": 1, "Device Type": 1}},
  {"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces",
   "tid": "Trace PyTorch Profiler", "ts": 1000}
]})";

TEST(ChromeExportTest, MemoryCountersAreTheInputsAllocatorTotals) {
  const std::string path = testing::TraceFileBuilder::TempPath("memory.json");
  std::ofstream(path) << kKinetoWithMemory;
  const MemorySeries want = InputMemory(nlohmann::json::parse(kKinetoWithMemory));
  ASSERT_EQ(want.size(), 6u);
  ASSERT_EQ(want.at("GPU 0 allocated").size(), 3u);
  const nlohmann::json chrome = ExportWithCli(path);
  std::remove(path.c_str());
  ASSERT_FALSE(chrome.is_discarded());
  const MemorySeries got = ExportedMemory(chrome);
  EXPECT_EQ(got, want);
  // Spelled out: GPU 0 in time order (the free at 1005.75 between).
  EXPECT_EQ(got.at("GPU 0 allocated"),
            (std::vector<MemoryPoint>{{1001.125, 512}, {1002.5, 4608}, {1005.75, 4096}}));
  EXPECT_EQ(got.at("GPU 0 reserved").size(), 3u);
  EXPECT_EQ(got.at("CPU allocated"), (std::vector<MemoryPoint>{{1010, 64}}));
  // The last GPU 1 event has no "Total Reserved": no reserved point for it.
  EXPECT_EQ(got.at("GPU 1 allocated").size(), 2u);
  EXPECT_EQ(got.at("GPU 1 reserved"), (std::vector<MemoryPoint>{{1020.001, 23068672}}));
  // GPU 0's counter shares the pseudo process of GPU 0's kernels.
  int64_t kernel_pid = -1, counter_pid = -2;
  for (const auto& e : chrome["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "fill_kernel") kernel_pid = e["pid"];
    if (e["ph"] == "C" && e["name"] == "GPU memory allocated" && e["args"]["bytes"] == 512)
      counter_pid = e["pid"];
  }
  EXPECT_EQ(kernel_pid, counter_pid);
}

// The real PyTorch profiler trace: every "[memory]" event it has becomes a
// counter point with its values, and no counter is made up where it has
// none.
TEST(ChromeExportTest, MemoryCountersOfTheRealKinetoTrace) {
  const std::string path =
      std::string(TRACER_SHARED_DATA_DIR) + "/kineto/resnet_ddp_rank0.pt.trace.json.gz";
  if (!std::ifstream(path).good()) GTEST_SKIP() << "shared data absent: " << path;
  FILE* gz = popen(("gzip -dc '" + path + "'").c_str(), "r");
  ASSERT_NE(gz, nullptr);
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), gz)) > 0;) text.append(buf, n);
  ASSERT_EQ(pclose(gz), 0);
  const MemorySeries want = InputMemory(nlohmann::json::parse(text));
  const nlohmann::json chrome = ExportWithCli(path);
  ASSERT_FALSE(chrome.is_discarded());
  EXPECT_EQ(ExportedMemory(chrome), want);
  size_t points = 0;
  for (const auto& [track, p] : want) points += p.size();
  // This file was recorded without profile_memory: it has no "[memory]"
  // events, so the export must have no memory counter.
  RecordProperty("memory_points_in_input", static_cast<int>(points));
}

// An nsys export with CUDA memory usage (`nsys profile
// --cuda-memory-usage=true`; the tables as NVIDIA's SQLite schema reference
// documents them, nsys_test_schema.h): the export draws the importer's
// running totals, device memory on the GPU's pseudo process beside its
// kernels, managed memory its own counter there, pinned host memory on the
// process.
TEST(ChromeExportTest, MemoryCountersOfAnNsysExport) {
  const std::string path = testing::TraceFileBuilder::TempPath("memory.sqlite");
  std::remove(path.c_str());
  const std::string g = std::to_string((uint64_t{1} << 48) | (uint64_t{42} << 24));
  auto row = [&](uint64_t start, int device, uint64_t address, int64_t bytes, int kind, int op) {
    return "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, "
           "address, pc, bytes, memKind, memoryOperationType) VALUES (" +
           std::to_string(start) + ", " + g + ", " + std::to_string(device) + ", 1, " +
           std::to_string(address) + ", 0, " + std::to_string(bytes) + ", " + std::to_string(kind) +
           ", " + std::to_string(op) + ");";
  };
  const std::string sql =
      std::string(importers::kNsysSchema) + importers::kNsysMemoryUsageTable +
      importers::kNsysMemoryEnums +
      "INSERT INTO StringIds VALUES (1, 'fill_kernel');"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName) VALUES (3000, 4000, 0, 1, 7, 1, " +
      g + ", 1);" + row(1000, 0, 0x7000, 1024, 2, 0) + row(2500, 0, 0x8000, 4096, 2, 0) +
      row(2000, 1, 0x9000, 512, 2, 0) + row(5000, 0, 0x7000, 1024, 2, 1) +
      row(1500, 0, 0xa000, 64, 1, 0) + row(1600, 0, 0xb000, 256, 4, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  const nlohmann::json chrome = ExportWithCli(path);
  std::remove(path.c_str());
  ASSERT_FALSE(chrome.is_discarded());
  const MemorySeries got = ExportedMemory(chrome);
  // ns -> us as the export writes timestamps.
  const MemorySeries want = {{"GPU 0 allocated", {{1.0, 1024}, {2.5, 5120}, {5.0, 4096}}},
                             {"GPU 1 allocated", {{2.0, 512}}},
                             {"CPU allocated", {{1.5, 64}}}};
  EXPECT_EQ(got, want);
  int64_t kernel_pid = -1, counter_pid = -2, managed_pid = -3;
  std::vector<int64_t> managed;
  for (const auto& e : chrome["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "fill_kernel") kernel_pid = e["pid"];
    if (e["ph"] == "C" && e["name"] == "GPU memory allocated" && e["args"]["bytes"] == 1024)
      counter_pid = e["pid"];
    if (e["ph"] == "C" && e["name"] == "GPU managed memory allocated") {
      managed_pid = e["pid"];
      managed.push_back(e["args"]["bytes"]);
    }
  }
  EXPECT_EQ(kernel_pid, counter_pid);
  EXPECT_EQ(managed_pid, kernel_pid);  // allocated on GPU 0
  EXPECT_EQ(managed, std::vector<int64_t>{256});
}

}  // namespace
}  // namespace tracer::analysis
