// Turns completed CUPTI activity buffers into RecordSink calls. Runs on the
// writer thread only (never inside CUPTI's buffer-completed callback), walks a
// buffer with cuptiActivityGetNextRecord through the CuptiApi interface, and
// caches the per-name, per-stream and per-launch-config ids so that the common
// kernel record costs no string hashing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "libtracer/capture/cupti_buffer_pool.h"
#include "libtracer/capture/cupti_capture_window.h"
#include "libtracer/capture/record_sink.h"
#include "libtracer/cupti_api/cupti_api.h"

namespace tracer {

class CuptiDecoder {
 public:
  // Counts by outcome, cumulative over the decoder's life (tests and benches
  // read them; the stream gets the same numbers through sink.Count()).
  struct Totals {
    uint64_t kernels = 0, memcpys = 0, memsets = 0, apis = 0, syncs = 0, overheads = 0,
             graph_launches = 0;
    uint64_t invalid_timestamps = 0;  // start = end = 0 or end < start
    uint64_t unknown_kind = 0;        // kinds we did not ask for
    uint64_t outside_window = 0;      // dropped by the capture window
    // Launched inside the window, but handed back unfinished (end = 0) by a
    // forced flush: CUPTI never delivers them again (docs/cupti.md section 4).
    uint64_t unfinished_at_flush = 0;
    uint64_t buffer_errors = 0;  // buffers cut short by an iterator error
    // First seen after their module was unloaded, with no copy made at the
    // unload: named kUnloadedKernelName rather than read from freed memory.
    uint64_t names_lost_at_unload = 0;
  };
  static constexpr const char* kUnloadedKernelName = "(kernel of an unloaded module)";

  // window may be null (everything captured). Both must outlive the decoder.
  CuptiDecoder(CuptiApi* api, CuptiCaptureWindow* window);

  // Hands every record of one completed buffer to sink and adds this buffer's
  // drop counts to the sink's counters. Returns the records handed over.
  size_t DecodeBuffer(uint8_t* buffer, size_t valid_bytes, RecordSink& sink);

  const Totals& totals() const { return totals_; }

  // A module is being unloaded at time_ns (trace clock), called on the
  // unloading thread inside MODULE_UNLOAD_STARTING, while its names are
  // still valid. undecoded: the buffers handed back and not yet decoded
  // (pinned by the caller). Copies the names their kernel records point to,
  // so that decoding them later never reads the module's memory, and starts
  // a new name epoch so that a kernel starting after it never takes a name
  // cached before it. Never waits for the writer (see the rule in
  // cupti_decoder.cc).
  void ModuleUnloaded(uint64_t time_ns, const std::vector<CuptiBufferPool::Completed>& undecoded);
  // Copies made at unloads and not yet let go (tests: bounded).
  size_t saved_names();
  // Any thread, before cuptiActivityFlushAll(FLUSH_FORCED): from then on a
  // GPU record without an end time is work the forced flush cut short, not
  // a record spoiled by device-buffer exhaustion.
  void NoteForcedFlush() { forced_flush_.store(true, std::memory_order_relaxed); }

 private:
  struct StreamKey {
    uint64_t device_context;
    uint64_t stream;
    bool operator==(const StreamKey& o) const {
      return device_context == o.device_context && stream == o.stream;
    }
  };
  struct StreamKeyHash {
    size_t operator()(const StreamKey& k) const {
      return static_cast<size_t>(k.device_context * 0x9E3779B97F4A7C15ull ^ k.stream);
    }
  };
  struct ConfigKey {
    uint32_t v[9];
    bool operator==(const ConfigKey& o) const;
  };
  struct ConfigKeyHash {
    size_t operator()(const ConfigKey& k) const;
  };

  struct NameSlot;
  void Kernel(const CUpti_ActivityKernel10& r, RecordSink& sink);
  void Memcpy(const CUpti_ActivityMemcpy6& r, RecordSink& sink);
  void Memset(const CUpti_ActivityMemset4& r, RecordSink& sink);
  void Api(const CUpti_ActivityAPI& r, RecordSink& sink);
  void Sync(const CUpti_ActivitySynchronization2& r, RecordSink& sink);
  void Overhead(CUpti_ActivityOverhead3& r, RecordSink& sink);
  void GraphTrace(const CUpti_ActivityGraphTrace2& r, RecordSink& sink);

  // False (and counted) when the timestamps are unusable or the record is
  // outside the window: by its start time (CPU-side records of calls no
  // launch callback sees) ...
  bool Keep(uint64_t start, uint64_t end);
  // ... or by the correlation id of its launch call (GPU ops, launch APIs).
  bool KeepLaunched(uint32_t correlation_id, uint64_t start, uint64_t end);
  bool ValidTimes(uint64_t start, uint64_t end);
  uint32_t Stream(uint32_t device, uint32_t context, uint32_t stream, RecordSink& sink);
  NameSlot& KernelName(const char* name, uint64_t start, RecordSink& sink);
  NameSlot& AddName(const char* name, uint64_t start, RecordSink& sink);
  // Under unload_mu_: moves pending_unloads_ into unloads_.
  void SyncUnloadsLocked();
  // Module unloads before `start`: names are cached per (address, epoch).
  uint32_t NameEpoch(uint64_t start) const;
  uint32_t ApiName(bool driver, uint32_t cbid, RecordSink& sink);
  uint32_t LaunchConfig(const ConfigKey& key, RecordSink& sink);

  CuptiApi* api_;
  CuptiCaptureWindow* window_;
  CuptiCaptureWindow::Snapshot window_snapshot_;
  uint64_t id_reference_ = 0;  // highest unwrapped correlation id decoded
  std::atomic<bool> forced_flush_{false};
  Totals totals_;
  Totals reported_;  // what has been passed to sink.Count() already

  // CUPTI's kernel names are shared strings (cupti_activity.h: "shared
  // across all activity records representing the same kernel"), so within a
  // module's life their address identifies them (name_table_ below). Nothing
  // says they outlive the module: a module unload starts a new epoch, and a
  // name is cached per (address, epoch), the epoch of a record being the
  // number of unloads before its start (a module's kernels finish before it
  // is unloaded, later kernels start after). A name is read from CUPTI's
  // memory only while its module is loaded; see the rule in
  // cupti_decoder.cc (ModuleUnloaded).
  std::unordered_map<StreamKey, uint32_t, StreamKeyHash> streams_;
  std::unordered_map<ConfigKey, uint32_t, ConfigKeyHash> configs_;
  std::unordered_map<uint32_t, uint32_t> context_device_;  // sync records lack a device
  std::vector<uint32_t> api_names_[2];                     // [driver][cbid]; 0 = not looked up
  // Kernel names: an open-addressing table keyed by the name's address
  // (linear probing, at most half full), so the common record costs one hash
  // and one or two probes, never a string hash. A kernel is nearly always
  // launched with the same configuration, so its entry also remembers its
  // last one.
  struct NameSlot {
    const char* name = nullptr;  // nullptr = empty
    uint32_t epoch = 0;
    uint32_t id = 0;
    uint32_t config_id = 0;  // 0 = none yet
    ConfigKey config{};
  };
  std::vector<NameSlot> name_table_ = std::vector<NameSlot>(64);
  size_t names_used_ = 0;
  NameSlot no_name_;  // kernels without a name
  // Direct-mapped caches in front of the stream and config maps: a run has a
  // few streams and configs.
  static constexpr size_t kStreamSlots = 16, kConfigSlots = 64;
  struct StreamSlot {
    StreamKey key{~0ull, ~0ull};
    uint32_t id = 0;
  };
  struct ConfigSlot {
    ConfigKey key{};
    uint32_t id = 0;  // 0 = empty
  };
  StreamSlot stream_slots_[kStreamSlots];
  ConfigSlot config_slots_[kConfigSlots];
  void GrowNameTable();

  // Unload times: appended by ModuleUnloaded (any thread), copied into
  // unloads_ at the start of each buffer and at each new name (writer
  // thread), sorted. unload_mu_ also guards saved_ and is what makes a name
  // read safe: the writer reads a name under it only when no known unload
  // follows the record's start, and an unload takes it before its callback
  // returns (and the module is freed). Held for a string copy at most.
  std::mutex unload_mu_;
  std::vector<uint64_t> pending_unloads_;
  std::atomic<bool> unloads_changed_{false};
  std::vector<uint64_t> unloads_;
  size_t unload_count_ = 0;   // unloads_ + pending_unloads_ (under unload_mu_)
  uint64_t last_unload_ = 0;  // the latest of them
  // Names copied at one unload, keyed by (address, epoch), kept until every
  // buffer they were copied from has been decoded.
  struct SavedNames {
    std::unordered_map<const char*, std::string> names;
    uint32_t epoch = 0;
    std::vector<const uint8_t*> buffers;  // not yet decoded
  };
  std::vector<SavedNames> saved_;
  std::atomic<bool> has_saved_{false};
};

}  // namespace tracer
