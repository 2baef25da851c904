// Plain record types shared by the capture side (which encodes them into the
// stream) and the analysis side (which decodes, imports and aggregates them).
// They mirror proto/trace.proto one to one; ids (strings, threads, streams,
// launch configs) refer to the definitions of the same file or model.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tracer {

// Mirrors proto RangeKind / RangeFlag / ApiDomain / CopyKind.
enum class RangeKind : uint8_t { kPushPop = 0, kStartEnd = 1 };
inline constexpr uint32_t kRangeFlagUnclosed = 1;
enum class ApiDomain : uint8_t { kRuntime = 0, kDriver = 1 };

struct PayloadValue {
  enum class Type : uint8_t { kNone = 0, kU64, kI64, kF64 };
  Type type = Type::kNone;
  union {
    uint64_t u64;
    int64_t i64;
    double f64;
  };
  PayloadValue() : u64(0) {}
};

struct RangeRecord {
  uint64_t id = 0;
  uint64_t parent_id = 0;
  uint32_t thread = 0;
  uint32_t name = 0;
  uint32_t domain = 0;
  uint32_t category = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  RangeKind kind = RangeKind::kPushPop;
  uint32_t depth = 0;
  uint32_t end_thread = 0;
  uint32_t flags = 0;
  uint32_t color = 0;
  // Analysis side only (not in the stream): the name as recorded when the
  // reporter's range-name rules replaced `name` by its normalized form
  // ("aten::to, seq = 7, op_id = 42" -> "aten::to"); 0 = `name` is as
  // recorded. Fills padding: the record keeps its size.
  uint32_t raw_name = 0;
  PayloadValue payload;
};

struct MarkRecord {
  uint64_t time_ns = 0;
  uint32_t thread = 0;
  uint32_t name = 0;
  uint32_t domain = 0;
  uint32_t category = 0;
  uint32_t color = 0;
  PayloadValue payload;
};

struct KernelRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name = 0;
  uint32_t stream = 0;  // StreamDef id
  uint64_t correlation_id = 0;
  uint32_t launch_config = 0;  // LaunchConfigDef id; 0 = unknown
  uint64_t graph_id = 0;
  uint64_t graph_node_id = 0;
};

struct MemcpyRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t copy_kind = 0;  // proto CopyKind
  uint32_t stream = 0;
  uint64_t correlation_id = 0;
  uint32_t flags = 0;
  uint64_t graph_id = 0;  // as KernelRecord: executed from a graph node
  uint64_t graph_node_id = 0;
};

struct MemsetRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t value = 0;
  uint32_t stream = 0;
  uint64_t correlation_id = 0;
  uint32_t flags = 0;
  uint64_t graph_id = 0;
  uint64_t graph_node_id = 0;
};

struct ApiRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  ApiDomain domain = ApiDomain::kRuntime;
  uint32_t cbid = 0;
  uint32_t thread = 0;
  uint64_t correlation_id = 0;
  uint32_t return_value = 0;
  uint32_t name = 0;  // string id of the function name; 0 = unknown
};

struct LaunchRecord {
  uint64_t correlation_id = 0;
  uint64_t time_ns = 0;
  uint32_t thread = 0;
  uint64_t range_id = 0;
  uint32_t cbid = 0;
  ApiDomain domain = ApiDomain::kRuntime;
};

struct SyncRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t type = 0;
  uint32_t stream = 0;
  uint64_t correlation_id = 0;
  uint32_t context = 0;
  uint32_t event = 0;
};

struct OverheadRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t kind = 0;
  uint32_t thread = 0;
  uint64_t correlation_id = 0;
};

struct GraphNodeSnapshotRecord {
  uint64_t graph_id = 0;
  uint64_t graph_node_id = 0;
  uint64_t range_id = 0;
  uint32_t thread = 0;
  uint64_t time_ns = 0;
};

struct GraphLaunchRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t graph_id = 0;
  uint32_t stream = 0;
  uint64_t correlation_id = 0;
};

struct PmSampleRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t metric = 0;
  double value = 0;
};

struct ThreadDefRecord {
  uint32_t id = 0;
  uint64_t os_tid = 0;
  uint32_t name = 0;
  uint64_t pthread_id = 0;
};

struct StreamDefRecord {
  uint32_t id = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint64_t stream = 0;
};

struct LaunchConfigRecord {
  uint32_t id = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t static_shared_memory = 0;
  uint32_t dynamic_shared_memory = 0;
  uint32_t registers_per_thread = 0;
};

struct DomainDefRecord {
  uint32_t id = 0;
  uint32_t name = 0;
};

struct CategoryDefRecord {
  uint32_t domain = 0;
  uint32_t category = 0;
  uint32_t name = 0;
};

using CounterList = std::vector<std::pair<std::string, uint64_t>>;

struct HeaderInfo {
  uint32_t format_version = 2;  // proto/trace.proto; 2: range and mark batches
  std::string tracer_version;
  std::string host;
  uint32_t pid = 0;
  int32_t rank = -1;
  std::string clock_description;
  uint64_t session_start_wall_ns = 0;
  uint64_t session_start_trace_ns = 0;
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<std::string> command_line;
  uint32_t parent_pid = 0;
  std::string source = "tracer";
  int32_t world_size = 0;   // 0 = unknown
  int32_t local_rank = -1;  // -1 = unknown
  std::string device;       // expected GPU (trace.proto Header.device); empty = unknown
  std::string cuda_visible_devices;
};

struct FooterInfo {
  uint64_t session_end_trace_ns = 0;
  CounterList records_by_kind;
  CounterList dropped_by_cause;
  uint64_t overhead_ns = 0;
  CounterList stats;
};

}  // namespace tracer
