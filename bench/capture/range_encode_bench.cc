// Writer-side cost of one NVTX range record (docs/design.md section 3: one
// background writer encodes every thread's events). The writer must keep up
// with a thread that pushes and pops as fast as it can (about 55 ns per pair
// on the machines here, nvtx_push_pop_bench), or rings fill and events drop.
//
// The input is what the writer reads: the application threads' ring events
// (capture/event.h, 32 bytes each, a push and a pop per range: 64 bytes a
// range), nested up to 8 deep, 300 names, some domains and colours. The
// writer decodes a pair into one RangeRecord on its thread's open-range
// stack (EventDecoder, in cache) and encodes it from there, so the encoder
// never reads a record from memory; only the events come from memory.
// Times, in one run, on the same events (thread CPU time, best of R):
//   baseline: copying the events (the least any writer does with them),
//   encode:   ChunkBuilder::AddRange of records in cache (the decoded
//             batch of 4096 ranges, as the decoder hands them over) +
//             FinishFrame whenever the frame reaches the writer's size
//             (kWriterFrameBytes, or --frame-bytes) (RangeBatch columns with
//             per-thread deltas, framing, CRC-32),
//   decode+encode: EventDecoder::Consume of each event straight into
//             AddRange, one pass as the writer drains a ring,
// and prints ns per range, encode / baseline and bytes per range in the
// frames (on disk). Format version 1 wrote one Range message per record:
// 45.9 bytes and 42-71 ns per range here (issue 13); target <= 10 ns.
// Version 2 encoding each value as it came: 14.3 bytes, encode 11.2-12.7
// ns (2.6-3.0x); with the columns staged and encoded 64 rows at a time
// (AVX-512 here) and push/pop ranges ending on their own thread: 13.3
// bytes, 8.2-8.5 ns (2.0x), same machine and run (load 10).
// The dense columns are varint-encoded 64 rows at a time by the CPU's
// fastest codec (core/varint_encode.h); --codec picks another to compare.
// With a loop per column's longest length and SSSE3 byte shuffles for
// columns of up to four bytes, encode+frame, same run (load 6-8): pdep
// 10.5-10.7 -> 9.0-9.1 ns, portable 11.4-11.8 -> 9.0-9.3 ns, avx512 8.3-8.6
// (unchanged), scalar (no SSSE3) 10.1-10.6 ns. Where decode+encode's
// 19-21 ns go (a harness of this input, same run): the decoder alone costs
// 8.4 ns a range with the events in cache and 16-17 ns reading them from
// memory (64 bytes a range, as the copy baseline does: most of its samples
// wait on the event's first load); encoding adds 5-7 ns on top, partly
// hidden behind those loads.
// Until this input was the 32-byte events, the bench fed AddRange from an
// array of 96-byte RangeRecords, which at 2 M ranges (192 MB) timed memory
// reads the writer never does.
//
//   range_encode_bench [--ranges N] [--repeats R] [--frame-bytes B]
//                      [--codec portable|pdep|avx512|scalar]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/common/cpu_time.h"
#include "libtracer/capture/event.h"
#include "libtracer/capture/event_decoder.h"
#include "libtracer/core/chunk_builder.h"
#include "libtracer/core/varint_encode.h"

namespace {

using tracer::bench::ThreadCpuSeconds;

// The ring events of n ranges on one thread, as the NVTX handler writes
// them: a push (name, domain, time, instance id, category | color << 32)
// and later its pop (time, instance id), nested 1 to 8 deep.
std::vector<tracer::Event> MakeEvents(size_t n) {
  std::vector<tracer::Event> v;
  v.reserve(2 * n);
  uint64_t t = 1'700'000'000'000'000'000ull;  // trace clock values are large
  std::vector<uint64_t> open;
  size_t made = 0;
  while (made < n) {
    const size_t depth = std::min<size_t>(1 + made % 8, n - made);
    for (size_t d = 0; d < depth; ++d) {
      const size_t i = made + d;
      tracer::Event e;
      e.type = tracer::EventType::kPush;
      e.name = 1 + static_cast<uint32_t>(i % 300);
      e.domain = i % 5 == 0 ? 2 : 0;
      e.a = (uint64_t{3} << 40) | (i + 1);  // per-thread id space
      e.b = uint64_t{i % 3 == 0 ? 0xff00ff00u : 0u} << 32;
      e.time = t += 1'000 + (i % 97) * 31;
      v.push_back(e);
      open.push_back(e.a);
    }
    for (size_t d = 0; d < depth; ++d) {
      tracer::Event e;
      e.type = tracer::EventType::kPop;
      e.a = open.back();
      open.pop_back();
      e.time = t += 700 + (d % 13) * 17;
      v.push_back(e);
    }
    made += depth;
  }
  return v;
}

// Decoder output straight into the builder (the writer's Range() also
// defines names and threads on first use: writer_drain_bench times that).
class ToBuilder : public tracer::EventDecoder::Output {
 public:
  explicit ToBuilder(tracer::ChunkBuilder* b) : b_(b) {}
  void Range(const tracer::RangeRecord& r) override {
    b_->AddRange(r);
    ++ranges;
  }
  void Mark(const tracer::MarkRecord&) override {}
  void Launch(const tracer::LaunchRecord&) override {}
  void GraphNode(const tracer::GraphNodeSnapshotRecord&) override {}
  void ThreadName(uint32_t, uint32_t) override {}
  void Count(std::string_view, uint64_t) override {}
  uint64_t ranges = 0;

 private:
  tracer::ChunkBuilder* b_;
};

// Decoder output kept in a batch (copied out of the open-range stack).
class ToBatch : public tracer::EventDecoder::Output {
 public:
  void Range(const tracer::RangeRecord& r) override { batch.push_back(r); }
  void Mark(const tracer::MarkRecord&) override {}
  void Launch(const tracer::LaunchRecord&) override {}
  void GraphNode(const tracer::GraphNodeSnapshotRecord&) override {}
  void ThreadName(uint32_t, uint32_t) override {}
  void Count(std::string_view, uint64_t) override {}
  std::vector<tracer::RangeRecord> batch;
};

const char* CodecName(tracer::VarintCodec codec) {
  switch (codec) {
    case tracer::VarintCodec::kPortable:
      return "portable";
    case tracer::VarintCodec::kPdep:
      return "pdep";
    case tracer::VarintCodec::kAvx512:
      return "avx512";
    case tracer::VarintCodec::kScalar:
      return "scalar";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 1'000'000;
  int repeats = 5;
  size_t frame_bytes = tracer::kWriterFrameBytes;
  tracer::VarintCodec codec = tracer::BestVarintCodec();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranges" && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--frame-bytes" && i + 1 < argc) {
      frame_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else if (a == "--codec" && i + 1 < argc) {
      const std::string c = argv[++i];
      bool known = false;
      for (tracer::VarintCodec k : {tracer::VarintCodec::kPortable, tracer::VarintCodec::kPdep,
                                    tracer::VarintCodec::kAvx512, tracer::VarintCodec::kScalar}) {
        if (c == CodecName(k)) {
          codec = k;
          known = true;
        }
      }
      if (!known || !tracer::VarintCodecSupported(codec)) {
        std::fprintf(stderr, "range_encode_bench: codec '%s' unknown or not run by this CPU\n",
                     c.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: range_encode_bench [--ranges N] [--repeats R] [--frame-bytes B] "
                   "[--codec portable|pdep|avx512|scalar]\n");
      return 2;
    }
  }
  const std::vector<tracer::Event> events = MakeEvents(n);
  double best_copy = 1e30, best_encode = 1e30, best_both = 1e30;
  size_t bytes = 0;
  uint64_t sink = 0;
  // One builder for every repeat, as the writer thread keeps one: its
  // buffers reach their steady-state size in the first repeat.
  tracer::ChunkBuilder b;
  b.set_varint_codec(codec);
  std::string out;
  auto add_checked = [&](size_t i) {
    // Checked every 2048 ranges, as the writer checks every 4096 events.
    if (i % 2048 == 2047 && b.ApproximateBytes() >= frame_bytes) {
      b.FinishFrame(&out);
      bytes += out.size();
      out.clear();
    }
  };
  std::vector<tracer::Event> copy(64 * 1024);
  for (int rep = 0; rep < repeats; ++rep) {
    // Baseline: the events copied, 64 k at a time.
    const double t0 = ThreadCpuSeconds();
    for (size_t at = 0; at < events.size(); at += copy.size()) {
      const size_t m = std::min(copy.size(), events.size() - at);
      std::copy(events.begin() + static_cast<long>(at), events.begin() + static_cast<long>(at + m),
                copy.begin());
      sink += copy[m - 1].time;
    }
    const double t1 = ThreadCpuSeconds();
    best_copy = std::min(best_copy, t1 - t0);

    // Encode alone: decode 4096 ranges into a batch (not timed), encode it.
    {
      ToBatch batcher;
      tracer::EventDecoder decoder(&batcher);
      double encode = 0;
      size_t i = 0, e = 0;
      while (e < events.size()) {
        batcher.batch.clear();
        while (e < events.size() && batcher.batch.size() < 4096) decoder.Consume(3, events[e++]);
        const double s0 = ThreadCpuSeconds();
        for (const tracer::RangeRecord& r : batcher.batch) {
          b.AddRange(r);
          add_checked(i++);
        }
        encode += ThreadCpuSeconds() - s0;
      }
      const double s0 = ThreadCpuSeconds();
      b.FinishFrame(&out);
      encode += ThreadCpuSeconds() - s0;
      out.clear();
      best_encode = std::min(best_encode, encode);
    }

    // Decode + encode, one pass over the events as a drain makes it.
    {
      bytes = 0;
      ToBuilder to(&b);
      tracer::EventDecoder decoder(&to);
      const double s0 = ThreadCpuSeconds();
      for (size_t e = 0; e < events.size(); ++e) {
        decoder.Consume(3, events[e]);
        if (e % 4096 == 4095) add_checked(2047);
      }
      b.FinishFrame(&out);
      bytes += out.size();
      out.clear();
      best_both = std::min(best_both, ThreadCpuSeconds() - s0);
      if (to.ranges != n) {
        std::fprintf(stderr, "range_encode_bench: decoded %llu ranges of %zu\n",
                     static_cast<unsigned long long>(to.ranges), n);
        return 1;
      }
    }
  }
  std::printf(
      "range_encode_bench: %zu ranges (%zu MB of 32-byte ring events), best of %d, %.1f "
      "bytes/range, %s varints\n",
      n, events.size() * sizeof(tracer::Event) >> 20, repeats, static_cast<double>(bytes) / n,
      CodecName(codec));
  std::printf("  baseline copy of the events: %6.1f ns/range\n", best_copy * 1e9 / n);
  std::printf("  encode+frame (records in cache): %6.1f ns/range  %5.1fx baseline\n",
              best_encode * 1e9 / n, best_encode / best_copy);
  std::printf("  decode+encode+frame from events: %6.1f ns/range  %5.1fx baseline\n",
              best_both * 1e9 / n, best_both / best_copy);
  return sink == 42 ? 3 : 0;
}
