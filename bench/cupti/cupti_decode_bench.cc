// Activity-buffer decode + encode throughput, and bytes per kernel record on
// disk (docs/design.md section 7).
//
// (a) Synthetic CUpti_ActivityKernel10 buffers (8 MiB, as CUPTI's samples
//     use) walked with the real libcupti's cuptiActivityGetNextRecord (it
//     works without a driver): a plain pass that only reads each record is
//     the baseline; the tracer's path is CuptiDecoder -> ChunkBuilder frames.
// (b) The 4,010 kernels of a public 2 x H100 nsys export (real
//     names, grids, streams, timestamps) turned back into CUPTI records and
//     encoded: bytes per kernel in our stream vs the same kernels in an nsys
//     SQLite database and in Chrome trace JSON.
//
// usage: cupti_decode_bench [SQLITE] [--quick]
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "bench/common/cpu_time.h"
#include "bench/cupti/encoding_sink.h"
#include "libtracer/capture/cupti_decoder.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/writer.h"
#include "libtracer/cupti_api/real_cupti_api.h"

namespace {

// Thread CPU time: these machines are shared and often oversubscribed, and
// wall time would charge other processes' slices to us.
struct Clock {
  using time_point = double;
  static double now() { return tracer::bench::ThreadCpuSeconds(); }
};

double Seconds(double a, double b) { return b - a; }

std::vector<uint8_t> SyntheticBuffer(size_t bytes, size_t* count) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (int i = 0; i < 40; ++i)
      v.push_back("_Z" + std::to_string(10 + i) + "kernel_" + std::to_string(i) + "Pfi");
    return v;
  }();
  std::vector<uint8_t> buf(bytes);
  const size_t n = bytes / sizeof(CUpti_ActivityKernel10);
  uint64_t t = 1'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    // 40 kernels interleaved over 4 streams; like real code, a kernel keeps
    // its launch configuration (grid, block, registers) from launch to launch.
    const size_t kernel = (i * 7) % names.size();
    k.name = names[kernel].c_str();
    t += 1500 + (i * 37) % 900;
    k.start = t;
    k.end = t + 2000 + (i * 53) % 40000;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7 + (i % 4);
    k.correlationId = static_cast<uint32_t>(100 + 3 * i);
    k.gridX = 64 << (kernel % 3);
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.registersPerThread = 32 + 8 * (kernel % 2);
    std::memcpy(buf.data() + i * sizeof(k), &k, sizeof(k));
  }
  *count = n;
  return buf;
}

// Hands out ids and drops records: the decoder's own cost.
class NullSink : public tracer::RecordSink {
 public:
  uint64_t sum = 0;
  uint32_t InternString(std::string_view) override { return ++ids_; }
  uint32_t StreamId(uint32_t, uint32_t, uint64_t) override { return ++ids_; }
  uint32_t LaunchConfigId(const tracer::LaunchConfigRecord&) override { return ++ids_; }
  uint32_t ThreadIdForPthread(uint64_t) override { return 1; }
  void Kernel(const tracer::KernelRecord& r) override { sum += r.start_ns + r.name; }
  void Memcpy(const tracer::MemcpyRecord&) override {}
  void Memset(const tracer::MemsetRecord&) override {}
  void Api(const tracer::ApiRecord&) override {}
  void Sync(const tracer::SyncRecord&) override {}
  void Overhead(const tracer::OverheadRecord&) override {}
  void GraphLaunch(const tracer::GraphLaunchRecord&) override {}
  void PmSample(const tracer::PmSampleRecord&) override {}
  void Count(std::string_view, uint64_t) override {}

 private:
  uint32_t ids_ = 0;
};

void Throughput(tracer::CuptiApi* api, bool quick) {
  size_t per_buffer = 0;
  std::vector<uint8_t> buf = SyntheticBuffer(8u << 20, &per_buffer);
  const int passes = quick ? 2 : 30;
  // Baseline: walk the same buffer with the same iterator, touching fields.
  double best_plain = 1e9, best_ours = 1e9, best_decode = 1e9, best_writer = 1e9;
  uint64_t sink_sum = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    for (int p = 0; p < passes; ++p) {
      CUpti_Activity* r = nullptr;
      while (api->ActivityGetNextRecord(buf.data(), per_buffer * sizeof(CUpti_ActivityKernel10),
                                        &r) == CUPTI_SUCCESS) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
        sink_sum += k->end - k->start + k->streamId + k->correlationId;
      }
    }
    auto t1 = Clock::now();
    best_plain = std::min(best_plain, Seconds(t0, t1));

    {
      tracer::CuptiDecoder decoder(api, nullptr);
      NullSink null_sink;
      auto t4 = Clock::now();
      for (int p = 0; p < passes; ++p) {
        decoder.DecodeBuffer(buf.data(), per_buffer * sizeof(CUpti_ActivityKernel10), null_sink);
      }
      best_decode = std::min(best_decode, Seconds(t4, Clock::now()));
      sink_sum += null_sink.sum;
    }
    {
      // The capture writer itself as the sink, one frame per buffer, written
      // to /dev/null: the path a real session takes.
      tracer::ThreadRegistry registry(1 << 20);
      tracer::Writer writer(&registry, 200);
      int fd = open("/dev/null", O_WRONLY);
      writer.BeginOnFd(fd, tracer::HeaderInfo());
      tracer::CuptiDecoder decoder(api, nullptr);
      auto t6 = Clock::now();
      for (int p = 0; p < passes; ++p) {
        decoder.DecodeBuffer(buf.data(), per_buffer * sizeof(CUpti_ActivityKernel10), writer);
        writer.DrainOnce(false);
      }
      best_writer = std::min(best_writer, Seconds(t6, Clock::now()));
      writer.Stop(1000);
    }
    tracer::CuptiDecoder decoder(api, nullptr);
    tracer::bench::EncodingSink sink;
    auto t2 = Clock::now();
    for (int p = 0; p < passes; ++p) {
      decoder.DecodeBuffer(buf.data(), per_buffer * sizeof(CUpti_ActivityKernel10), sink);
    }
    sink.Finish();
    auto t3 = Clock::now();
    best_ours = std::min(best_ours, Seconds(t2, t3));
    sink_sum += sink.bytes();
  }
  const double records = static_cast<double>(per_buffer) * passes;
  std::printf(
      "decode+encode: %zu kernel records per 8 MiB buffer, %d buffers, best of 3, thread CPU "
      "time\n",
      per_buffer, passes);
  std::printf("  plain pass (cuptiActivityGetNextRecord + read): %8.1f M records/s\n",
              records / best_plain / 1e6);
  std::printf("  decode only (CuptiDecoder -> null sink):        %8.1f M records/s\n",
              records / best_decode / 1e6);
  std::printf(
      "  decode + encode (CuptiDecoder -> ChunkBuilder): %8.1f M records/s  (target >= 30)\n",
      records / best_ours / 1e6);
  std::printf("  decode + capture Writer (frames to /dev/null):  %8.1f M records/s\n",
              records / best_writer / 1e6);
  std::printf("  ratio decode+encode / plain pass time: %.2fx  [checksum %llu]\n",
              best_ours / best_plain, static_cast<unsigned long long>(sink_sum % 1000));
}

struct SqlKernel {
  CUpti_ActivityKernel10 record;
  std::string name;
};

bool LoadKernels(const char* path, std::deque<std::string>* names,
                 std::vector<CUpti_ActivityKernel10>* out) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "cannot open %s\n", path);
    return false;
  }
  const char* sql =
      "SELECT k.start, k.end, k.deviceId, k.contextId, k.streamId, k.correlationId, "
      "COALESCE(s.value, ''), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, "
      "k.staticSharedMemory, k.dynamicSharedMemory, k.registersPerThread, "
      "COALESCE(k.graphId, 0), COALESCE(k.graphNodeId, 0) "
      "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s "
      "ON s.id = COALESCE(k.mangledName, k.demangledName) ORDER BY k.end";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "%s: %s\n", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return false;
  }
  std::map<std::string, const char*> interned;
  while (sqlite3_step(st) == SQLITE_ROW) {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = sqlite3_column_int64(st, 0);
    k.end = sqlite3_column_int64(st, 1);
    k.deviceId = sqlite3_column_int(st, 2);
    k.contextId = sqlite3_column_int(st, 3);
    k.streamId = sqlite3_column_int(st, 4);
    k.correlationId = sqlite3_column_int(st, 5);
    std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 6));
    auto it = interned.find(name);
    if (it == interned.end()) {
      names->push_back(name);
      it = interned.emplace(name, names->back().c_str()).first;
    }
    k.name = it->second;
    k.gridX = sqlite3_column_int(st, 7);
    k.gridY = sqlite3_column_int(st, 8);
    k.gridZ = sqlite3_column_int(st, 9);
    k.blockX = sqlite3_column_int(st, 10);
    k.blockY = sqlite3_column_int(st, 11);
    k.blockZ = sqlite3_column_int(st, 12);
    k.staticSharedMemory = sqlite3_column_int(st, 13);
    k.dynamicSharedMemory = sqlite3_column_int(st, 14);
    k.registersPerThread = static_cast<uint16_t>(sqlite3_column_int(st, 15));
    k.graphId = static_cast<uint32_t>(sqlite3_column_int64(st, 16));
    k.graphNodeId = sqlite3_column_int64(st, 17);
    out->push_back(k);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return !out->empty();
}

// The same kernels as nsys stores them: the kernel table and the strings it
// references, in a fresh, vacuumed SQLite file.
long SqliteBytes(const char* path) {
  char tmp[] = "/tmp/cupti_bench_XXXXXX";
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  close(fd);
  unlink(tmp);
  sqlite3* db = nullptr;
  if (sqlite3_open(tmp, &db) != SQLITE_OK) return -1;
  std::string attach = std::string("ATTACH DATABASE '") + path + "' AS src;";
  const std::string sql =
      attach +
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM src.CUPTI_ACTIVITY_KIND_KERNEL;"
      "CREATE TABLE StringIds AS SELECT * FROM src.StringIds WHERE id IN "
      "(SELECT demangledName FROM src.CUPTI_ACTIVITY_KIND_KERNEL UNION "
      " SELECT shortName FROM src.CUPTI_ACTIVITY_KIND_KERNEL UNION "
      " SELECT mangledName FROM src.CUPTI_ACTIVITY_KIND_KERNEL);"
      "DETACH DATABASE src; VACUUM;";
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite: %s\n", err != nullptr ? err : "?");
    sqlite3_free(err);
    sqlite3_close(db);
    unlink(tmp);
    return -1;
  }
  sqlite3_close(db);
  struct stat st;
  long size = stat(tmp, &st) == 0 ? static_cast<long>(st.st_size) : -1;
  unlink(tmp);
  return size;
}

// The same kernels as Chrome trace events, the shape Kineto writes.
size_t ChromeJsonBytes(const std::vector<CUpti_ActivityKernel10>& kernels) {
  size_t total = std::strlen("{\"traceEvents\":[\n]}\n");
  char line[4096];
  for (const auto& k : kernels) {
    int n = std::snprintf(
        line, sizeof(line),
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,"
        "\"dur\":%.3f,\"args\":{\"correlation\":%u,\"device\":%u,\"stream\":%u,"
        "\"registers per thread\":%u,\"shared memory\":%d,\"grid\":[%d,%d,%d],"
        "\"block\":[%d,%d,%d]}},\n",
        k.name, k.deviceId, k.streamId, k.start / 1e3, (k.end - k.start) / 1e3, k.correlationId,
        k.deviceId, k.streamId, k.registersPerThread, k.staticSharedMemory + k.dynamicSharedMemory,
        k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ);
    total += static_cast<size_t>(std::max(n, 0));
  }
  return total;
}

void BytesPerKernel(tracer::CuptiApi* api, const char* sqlite_path) {
  std::deque<std::string> names;
  std::vector<CUpti_ActivityKernel10> kernels;
  if (!LoadKernels(sqlite_path, &names, &kernels)) return;
  // As CUPTI delivers them: 8 MiB buffers of records in completion order.
  std::vector<uint8_t> buf(kernels.size() * sizeof(CUpti_ActivityKernel10));
  std::memcpy(buf.data(), kernels.data(), buf.size());
  tracer::CuptiDecoder decoder(api, nullptr);
  tracer::bench::EncodingSink sink;
  decoder.DecodeBuffer(buf.data(), buf.size(), sink);
  sink.Finish();
  const double n = static_cast<double>(kernels.size());
  const long sqlite = SqliteBytes(sqlite_path);
  const size_t json = ChromeJsonBytes(kernels);
  std::printf("bytes per kernel record: %zu kernels of %s (%zu distinct names)\n", kernels.size(),
              sqlite_path, names.size());
  std::printf("  tracer stream, all frames incl. definitions: %7.2f B/kernel  (target < 16)\n",
              sink.bytes() / n);
  std::printf("  tracer stream without the name strings:      %7.2f B/kernel\n",
              (sink.bytes() - sink.string_bytes()) / n);
  std::printf("  nsys SQLite (kernel table + its strings):    %7.2f B/kernel  (%.1fx ours)\n",
              sqlite / n, sqlite / static_cast<double>(sink.bytes()));
  std::printf("  Chrome trace JSON (Kineto-style events):     %7.2f B/kernel  (%.1fx ours)\n",
              json / n, json / static_cast<double>(sink.bytes()));
}

}  // namespace

int main(int argc, char** argv) {
  // A real export to take kernels from: the first argument, else the one the
  // build found beside the project (absent on a user's clone: then skipped).
  const char* sqlite_path = TRACER_DECODE_BENCH_EXPORT;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      sqlite_path = argv[i];
    }
  }
  std::string error;
  auto api = tracer::RealCuptiApi::Load("", &error);
  if (api == nullptr) {
    std::fprintf(stderr, "cupti_decode_bench: %s\n", error.c_str());
    return 1;
  }
  Throughput(api.get(), quick);
  if (access(sqlite_path, R_OK) == 0) {
    BytesPerKernel(api.get(), sqlite_path);
  } else {
    std::printf("bytes per kernel record: skipped, %s not readable\n", sqlite_path);
  }
  return 0;
}
