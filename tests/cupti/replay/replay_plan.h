// What the replay driver plays, computed up front from an imported nsys
// export: every NVTX and API event in global recorded-time order, the thread
// each runs on, the cbid each recorded API name has, and the GPU activity
// records (real CUPTI 13.0 structs) each launch produces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::replay {

enum class EventType : uint8_t { kPush, kPop, kStart, kEnd, kMark, kApiEnter, kApiExit };

struct Event {
  uint64_t time = 0;
  EventType type = EventType::kPush;
  size_t index = 0;  // into ProcessTrace ranges / marks / api_calls
  size_t slot = 0;   // ThreadPlan index
};

struct ThreadPlan {
  uint32_t thread = 0;  // ProcessTrace thread id
  uint64_t os_tid = 0;
  std::string name;
  std::vector<size_t> events;  // indices into Plan::events, in order
};

struct Plan {
  std::vector<Event> events;  // global recorded-time order
  std::vector<ThreadPlan> threads;
  size_t main_thread_slot = SIZE_MAX;
  std::vector<uint32_t> api_cbids;                                 // per api_calls index
  std::map<std::pair<int, uint32_t>, std::string> callback_names;  // (driver?, cbid) -> name
  std::vector<std::vector<uint8_t>> gpu_records;
  std::multimap<size_t, size_t> gpu_by_api;  // api_calls index -> gpu_records index
  std::vector<size_t> orphan_gpu_records;    // no replayed call launched them
  uint64_t first_time = 0, last_time = 0;
};

// False with a one-line *error when the cbid headers cannot be read.
bool BuildPlan(const analysis::Trace& trace, const analysis::ProcessTrace& p,
               const std::string& cupti_include_dir, Plan* plan, std::string* error);

}  // namespace tracer::replay
