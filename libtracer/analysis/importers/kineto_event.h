// One flattened Chrome-trace event of a Kineto (PyTorch profiler) trace: the
// fields the importer uses, as the tokenizer (kineto_tokenizer.h) pulls them
// out of a `traceEvents` element. Reused between events (clear(), then fill)
// so the steady state does not allocate.
#pragma once

#include <cstdint>
#include <string>

namespace tracer::analysis::importers {

struct KinetoEvent {
  char ph = 0;
  std::string cat;
  std::string name;
  bool has_pid = false, has_tid = false;  // false for string ids ("Spans")
  int64_t pid = 0, tid = 0;
  bool has_ts = false;
  uint64_t ts_ns = 0;   // "ts", converted from microseconds exactly
  uint64_t dur_ns = 0;  // "dur"
  // args (-1 = absent)
  int64_t correlation = -1;
  int64_t device = -1;
  int64_t stream = -1;
  int64_t context = -1;
  int64_t bytes = -1;
  int64_t cbid = -1;
  int64_t registers = -1;
  int64_t shared_memory = -1;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  bool has_grid = false, has_block = false;
  std::string arg_name;  // args.name of metadata events (thread_name, ...)
  // "[memory]" instant events (profile_memory=True): the allocator's totals
  // after the event, and the device (type 1 = CUDA, 0 = CPU).
  int64_t total_allocated = -1;
  int64_t total_reserved = -1;
  int64_t device_id = -1;
  int64_t device_type = -1;

  void clear() {
    ph = 0;
    cat.clear();
    name.clear();
    has_pid = has_tid = has_ts = false;
    pid = tid = 0;
    ts_ns = dur_ns = 0;
    correlation = device = stream = context = bytes = cbid = registers = shared_memory = -1;
    for (int i = 0; i < 3; ++i) grid[i] = block[i] = 0;
    has_grid = has_block = false;
    arg_name.clear();
    total_allocated = total_reserved = device_id = device_type = -1;
  }
};

// Top-level facts of the trace object.
struct KinetoTraceInfo {
  int64_t rank = -1;       // distributedInfo.rank
  int64_t world_size = 0;  // distributedInfo.world_size; 0 = absent
  // The one device (args.device) of the GPU activities (kernels, memcpys,
  // memsets); -1 when there is none, or several_devices.
  int64_t gpu_device = -1;
  bool several_devices = false;
  void NoteGpuDevice(int64_t device) {
    if (gpu_device < 0 && !several_devices) {
      gpu_device = device;
    } else if (device != gpu_device) {
      several_devices = true;
      gpu_device = -1;
    }
  }
  std::string host_name;
  std::string display_time_unit;
  uint64_t device_properties = 0;  // entries of deviceProperties
};

// Microseconds as written in the file (integer or decimal text) to
// nanoseconds, exactly for up to 3 decimals (Kineto writes at most 3; more
// are rounded). Doubles would lose the nanoseconds: an epoch timestamp in
// microseconds (~1.7e15) has a resolution of 0.25 us as a double. False when
// the text is not a plain non-negative decimal number.
bool MicrosTextToNs(const char* text, size_t size, uint64_t* ns);

}  // namespace tracer::analysis::importers
