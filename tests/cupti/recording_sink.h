// A RecordSink that keeps everything it is given, standing for the writer
// thread in unit tests of the CUPTI decoder and adapter.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "libtracer/capture/record_sink.h"

namespace tracer::testing {

class RecordingSink : public RecordSink {
 public:
  std::map<std::string, uint32_t> strings;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> streams;
  std::vector<LaunchConfigRecord> configs;
  std::map<uint64_t, uint32_t> threads;
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> apis;
  std::vector<SyncRecord> syncs;
  std::vector<OverheadRecord> overheads;
  std::vector<GraphLaunchRecord> graph_launches;
  std::vector<PmSampleRecord> pm_samples;
  std::map<std::string, uint64_t> counters;
  int intern_calls = 0;

  std::string Text(uint32_t id) const {
    for (const auto& [text, i] : strings) {
      if (i == id) return text;
    }
    return "";
  }

  uint32_t InternString(std::string_view text) override {
    ++intern_calls;
    auto [it, added] = strings.emplace(std::string(text), strings.size() + 1);
    return it->second;
  }
  uint32_t StreamId(uint32_t device, uint32_t context, uint64_t stream) override {
    auto [it, added] =
        streams.emplace(std::make_tuple(device, context, stream), streams.size() + 1);
    return it->second;
  }
  uint32_t LaunchConfigId(const LaunchConfigRecord& c) override {
    configs.push_back(c);
    configs.back().id = static_cast<uint32_t>(configs.size());
    return configs.back().id;
  }
  uint32_t ThreadIdForPthread(uint64_t pthread_id) override {
    auto [it, added] = threads.emplace(pthread_id, threads.size() + 1);
    return it->second;
  }
  void Kernel(const KernelRecord& r) override { kernels.push_back(r); }
  void Memcpy(const MemcpyRecord& r) override { memcpys.push_back(r); }
  void Memset(const MemsetRecord& r) override { memsets.push_back(r); }
  void Api(const ApiRecord& r) override { apis.push_back(r); }
  void Sync(const SyncRecord& r) override { syncs.push_back(r); }
  void Overhead(const OverheadRecord& r) override { overheads.push_back(r); }
  void GraphLaunch(const GraphLaunchRecord& r) override { graph_launches.push_back(r); }
  void PmSample(const PmSampleRecord& r) override { pm_samples.push_back(r); }
  void Count(std::string_view counter, uint64_t delta) override {
    counters[std::string(counter)] += delta;
  }
};

}  // namespace tracer::testing
