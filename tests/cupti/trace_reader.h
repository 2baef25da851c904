// Reads a tracer stream with the generated protobuf classes (the on-disk
// contract, proto/trace.proto) and flattens it for assertions: columnar
// batches back to rows, strings resolved, counters summed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/trace.pb.h"

namespace tracer::testing {

struct KernelRow {
  uint64_t start, end;
  std::string name;
  uint32_t stream;
  uint64_t correlation;
  uint32_t launch_config;
  uint64_t graph_id = 0, graph_node_id = 0;
};
struct LaunchRow {
  uint64_t correlation, time;
  uint32_t thread;
  uint64_t range_id;
  uint32_t cbid, domain;
};
struct CopyRow {
  uint64_t start, end, bytes;
  uint32_t copy_kind, stream;
  uint64_t correlation;
  uint32_t flags;
  uint64_t graph_id = 0, graph_node_id = 0;
};
struct ApiRow {
  uint64_t start, end;
  uint32_t domain, cbid, thread;
  uint64_t correlation;
  std::string name;
};

struct TraceContents {
  bool ok = false;
  std::string error;
  bool has_footer = false;
  size_t bytes = 0;
  proto::Header header;
  proto::Footer footer;
  std::map<uint32_t, std::string> strings;
  std::map<uint32_t, proto::StreamDef> streams;
  std::map<uint32_t, proto::ThreadDef> threads;
  std::map<uint32_t, proto::LaunchConfigDef> launch_configs;
  std::vector<proto::Range> ranges;
  std::vector<KernelRow> kernels;
  std::vector<LaunchRow> launches;
  std::vector<CopyRow> memcpys;
  std::vector<CopyRow> memsets;
  std::vector<ApiRow> apis;
  std::vector<proto::Synchronization> syncs;
  std::vector<proto::Overhead> overheads;
  std::vector<proto::GraphNodeSnapshot> graph_nodes;
  std::vector<proto::GraphLaunch> graph_launches;
  std::vector<proto::PmSample> pm_samples;
  std::map<std::string, uint64_t> counters;  // counter deltas summed

  std::string RangeName(uint64_t range_id) const;
  const proto::Range* FindRange(uint64_t range_id) const;
  // Innermost range id of the launch with this correlation id (0 = none).
  uint64_t LaunchRange(uint64_t correlation) const;
};

TraceContents ReadTrace(const std::string& path);

}  // namespace tracer::testing
