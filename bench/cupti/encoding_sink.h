// A RecordSink that encodes into stream frames with the core ChunkBuilder,
// defining strings, streams and launch configs on first use, the way the
// capture writer does; it keeps only the byte counts. For benchmarks.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "libtracer/capture/record_sink.h"
#include "libtracer/core/chunk_builder.h"

namespace tracer::bench {

class EncodingSink : public RecordSink {
 public:
  size_t bytes() const { return bytes_; }
  size_t string_bytes() const { return string_bytes_; }
  void Finish() {
    builder_.FinishFrame(&out_);
    bytes_ += out_.size();
    out_.clear();
  }

  uint32_t InternString(std::string_view text) override {
    auto [it, added] = strings_.emplace(std::string(text), strings_.size() + 1);
    if (added) {
      builder_.AddString(it->second, text);
      string_bytes_ += text.size() + 4;
    }
    return it->second;
  }
  uint32_t StreamId(uint32_t device, uint32_t context, uint64_t stream) override {
    auto [it, added] =
        streams_.emplace(std::make_tuple(device, context, stream), streams_.size() + 1);
    if (added) builder_.AddStream({it->second, device, context, stream});
    return it->second;
  }
  uint32_t LaunchConfigId(const LaunchConfigRecord& c) override {
    LaunchConfigRecord def = c;
    def.id = ++configs_;
    builder_.AddLaunchConfig(def);
    return def.id;
  }
  uint32_t ThreadIdForPthread(uint64_t) override { return 1; }
  void Kernel(const KernelRecord& r) override {
    builder_.AddKernel(r);
    MaybeCut();
  }
  void Memcpy(const MemcpyRecord& r) override { builder_.AddMemcpy(r); }
  void Memset(const MemsetRecord& r) override { builder_.AddMemset(r); }
  void Api(const ApiRecord& r) override { builder_.AddApi(r); }
  void Sync(const SyncRecord& r) override { builder_.AddSync(r); }
  void Overhead(const OverheadRecord& r) override { builder_.AddOverhead(r); }
  void GraphLaunch(const GraphLaunchRecord& r) override { builder_.AddGraphLaunch(r); }
  void PmSample(const PmSampleRecord& r) override { builder_.AddPmSample(r); }
  void Count(std::string_view counter, uint64_t delta) override {
    builder_.AddCounterDelta(counter, delta);
  }

 private:
  // The writer cuts a frame every few thousand records.
  void MaybeCut() {
    if (++pending_ >= 16384) {
      pending_ = 0;
      Finish();
    }
  }
  ChunkBuilder builder_;
  std::string out_;
  size_t bytes_ = 0, string_bytes_ = 0, pending_ = 0;
  uint32_t configs_ = 0;
  std::unordered_map<std::string, uint32_t> strings_;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> streams_;
};

}  // namespace tracer::bench
