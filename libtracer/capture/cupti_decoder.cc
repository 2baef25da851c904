#include "libtracer/capture/cupti_decoder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "libtracer/capture/cupti_cbids.h"

namespace tracer {

namespace {

constexpr uint32_t kNoName = 0xFFFFFFFFu;  // api_names_ entry: looked up, none

uint32_t CopyKindOf(uint8_t cupti_kind) {
  // CUpti_ActivityMemcpyKind 0..10 has the same numbering as proto CopyKind.
  return cupti_kind <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? cupti_kind : 0;
}

}  // namespace

bool CuptiDecoder::ConfigKey::operator==(const ConfigKey& o) const {
  return std::memcmp(v, o.v, sizeof(v)) == 0;
}

size_t CuptiDecoder::ConfigKeyHash::operator()(const ConfigKey& k) const {
  // Independent multiplies (no dependency chain): a few cycles per record.
  uint64_t w[5] = {0, 0, 0, 0, 0};
  std::memcpy(w, k.v, sizeof(k.v));
  const uint64_t h = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xC2B2AE3D27D4EB4Full) ^
                     (w[2] * 0x165667B19E3779F9ull) ^ (w[3] * 0xD6E8FEB86659FD93ull) ^
                     (w[4] * 0xFF51AFD7ED558CCDull);
  return static_cast<size_t>(h ^ (h >> 29));
}

CuptiDecoder::CuptiDecoder(CuptiApi* api, CuptiCaptureWindow* window)
    : api_(api), window_(window) {}

// Kernel names and module unloads, the rule this follows:
//  - CUPTI says only that a kernel record's `name` is "shared across all
//    activity records representing the same kernel, and so should not be
//    modified" (cupti_activity.h, CUpti_ActivityKernel10). Nothing says it
//    outlives the kernel's module, so it is taken to be valid until the
//    module's MODULE_UNLOAD_STARTING callback returns, and freed (its
//    address free for a later module's name) after.
//  - The module's kernels have finished when it is unloaded, so its records
//    start before the unload, later modules' kernels after: a record's name
//    epoch (the unloads before its start) says which module's name its
//    address held.
// So: the unload callback flushes the completed buffers into the pool and,
// on its own thread, copies the names their current-epoch kernel records
// point to (this call); the writer reads a name from CUPTI's memory only
// when no known unload follows the record's start, under the lock an
// unload takes before returning, else takes the copy. A record of an
// unloaded module that reaches us only later (its buffer still held by
// CUPTI at the unload) and whose name was never seen is named
// kUnloadedKernelName and counted: never a read of freed memory, never a
// later module's name. Nothing here waits for the writer.
void CuptiDecoder::ModuleUnloaded(uint64_t time_ns,
                                  const std::vector<CuptiBufferPool::Completed>& undecoded) {
  std::lock_guard<std::mutex> lock(unload_mu_);
  const uint32_t epoch = static_cast<uint32_t>(unload_count_);
  SavedNames saved;
  saved.epoch = epoch;
  for (const CuptiBufferPool::Completed& b : undecoded) {
    if (b.valid_bytes == 0) continue;
    bool used = false;
    CUpti_Activity* record = nullptr;
    // Reads only kernel records, which the writer only reads too.
    while (api_->ActivityGetNextRecord(b.buffer, b.valid_bytes, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      // Earlier epochs' names may be freed already: copied at their unload.
      if (k.name == nullptr || k.start < last_unload_ || k.start > time_ns) continue;
      if (saved.names.count(k.name) == 0) saved.names.emplace(k.name, std::string(k.name));
      used = true;
    }
    if (used) saved.buffers.push_back(b.buffer);
  }
  if (!saved.names.empty()) {
    saved_.push_back(std::move(saved));
    has_saved_.store(true, std::memory_order_release);
  }
  pending_unloads_.push_back(time_ns);
  ++unload_count_;
  last_unload_ = std::max(last_unload_, time_ns);
  unloads_changed_.store(true, std::memory_order_release);
}

size_t CuptiDecoder::saved_names() {
  std::lock_guard<std::mutex> lock(unload_mu_);
  size_t n = 0;
  for (const SavedNames& s : saved_) n += s.names.size();
  return n;
}

void CuptiDecoder::SyncUnloadsLocked() {
  unloads_changed_.store(false, std::memory_order_relaxed);
  if (pending_unloads_.empty()) return;
  unloads_.insert(unloads_.end(), pending_unloads_.begin(), pending_unloads_.end());
  pending_unloads_.clear();
  std::sort(unloads_.begin(), unloads_.end());
}

uint32_t CuptiDecoder::NameEpoch(uint64_t start) const {
  if (unloads_.empty()) return 0;
  return static_cast<uint32_t>(std::upper_bound(unloads_.begin(), unloads_.end(), start) -
                               unloads_.begin());
}

size_t CuptiDecoder::DecodeBuffer(uint8_t* buffer, size_t valid_bytes, RecordSink& sink) {
  if (unloads_changed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(unload_mu_);
    SyncUnloadsLocked();
  }
  if (window_ != nullptr) {
    window_->Read(&window_snapshot_);
  } else {
    window_snapshot_.gated = false;
  }
  size_t handed = 0;
  const uint64_t emitted_before = totals_.kernels + totals_.memcpys + totals_.memsets +
                                  totals_.apis + totals_.syncs + totals_.overheads +
                                  totals_.graph_launches;
  CUpti_Activity* record = nullptr;
  for (;;) {
    CUptiResult r = api_->ActivityGetNextRecord(buffer, valid_bytes, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      // INVALID_KIND marks an incomplete record; nothing after it can be
      // walked safely (cupti_activity.h, cuptiActivityGetNextRecord).
      ++totals_.buffer_errors;
      break;
    }
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL:
        Kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        Memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        Memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        Api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        Sync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_OVERHEAD:
        Overhead(*reinterpret_cast<CUpti_ActivityOverhead3*>(record), sink);
        break;
      case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
        GraphTrace(*reinterpret_cast<const CUpti_ActivityGraphTrace2*>(record), sink);
        break;
      default:
        ++totals_.unknown_kind;
        break;
    }
  }

  const uint64_t after = totals_.kernels + totals_.memcpys + totals_.memsets + totals_.apis +
                         totals_.syncs + totals_.overheads + totals_.graph_launches;
  handed = after - emitted_before;
  if (window_snapshot_.gated) window_->NoteDecodedId(id_reference_);

  // Counters go to the stream as increments, once per buffer.
  auto report = [&](const char* name, uint64_t now, uint64_t* seen) {
    if (now != *seen) {
      sink.Count(name, now - *seen);
      *seen = now;
    }
  };
  report("dropped.cupti_invalid_timestamps", totals_.invalid_timestamps,
         &reported_.invalid_timestamps);
  report("cupti_unknown_kind", totals_.unknown_kind, &reported_.unknown_kind);
  report("cupti_outside_capture_window", totals_.outside_window, &reported_.outside_window);
  report("dropped.cupti_unfinished_at_flush", totals_.unfinished_at_flush,
         &reported_.unfinished_at_flush);
  report("cupti_buffer_errors", totals_.buffer_errors, &reported_.buffer_errors);
  report("cupti_kernel_names_lost_at_unload", totals_.names_lost_at_unload,
         &reported_.names_lost_at_unload);
  if (has_saved_.load(std::memory_order_acquire)) {
    // This buffer's records no longer need the copies made from it.
    std::lock_guard<std::mutex> lock(unload_mu_);
    for (SavedNames& saved : saved_) {
      std::erase(saved.buffers, buffer);
    }
    std::erase_if(saved_, [](const SavedNames& saved) { return saved.buffers.empty(); });
    has_saved_.store(!saved_.empty(), std::memory_order_release);
  }
  return handed;
}

bool CuptiDecoder::ValidTimes(uint64_t start, uint64_t end) {
  // Device-buffer exhaustion yields start = end = 0 or end < start
  // (cupti_activity.h; parca-dev/parcagpu#23).
  if ((start == 0 && end == 0) || end < start) {
    ++totals_.invalid_timestamps;
    return false;
  }
  return true;
}

bool CuptiDecoder::Keep(uint64_t start, uint64_t end) {
  if (!ValidTimes(start, end)) return false;
  if (window_snapshot_.gated && !window_snapshot_.Contains(start)) {
    ++totals_.outside_window;
    return false;
  }
  return true;
}

bool CuptiDecoder::KeepLaunched(uint32_t correlation_id, uint64_t start, uint64_t end) {
  // Membership first: an op launched outside the window is not ours, however
  // its record came back.
  if (window_snapshot_.gated) {
    const uint64_t id = CuptiCaptureWindow::Unwrap(correlation_id, id_reference_);
    if (id > id_reference_) id_reference_ = id;
    if (!window_snapshot_.ContainsId(id)) {
      ++totals_.outside_window;
      return false;
    }
  }
  // A forced flush hands back work still queued or running with end = 0
  // (start = 0 too when it had not started) and never delivers it again
  // (docs/cupti.md section 4, pytorch/pytorch#195844). Once one was issued, such a
  // record is counted as that loss rather than as a bad record.
  if (end == 0 && forced_flush_.load(std::memory_order_relaxed)) {
    ++totals_.unfinished_at_flush;
    return false;
  }
  return ValidTimes(start, end);
}

uint32_t CuptiDecoder::Stream(uint32_t device, uint32_t context, uint32_t stream,
                              RecordSink& sink) {
  const StreamKey key{(static_cast<uint64_t>(device) << 32) | context, stream};
  StreamSlot& slot = stream_slots_[StreamKeyHash()(key) % kStreamSlots];
  if (slot.key == key) return slot.id;
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    it = streams_.emplace(key, sink.StreamId(device, context, stream)).first;
    context_device_.emplace(context, device);
  }
  slot.key = key;
  slot.id = it->second;
  return it->second;
}

namespace {
inline size_t PointerHash(const char* p) {
  // Fibonacci hashing: names often sit at a fixed stride in memory.
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull) >> 32);
}
}  // namespace

inline CuptiDecoder::NameSlot& CuptiDecoder::KernelName(const char* name, uint64_t start,
                                                        RecordSink& sink) {
  if (name == nullptr) return no_name_;  // id 0; only its config memo is used
  const uint32_t epoch = NameEpoch(start);
  const size_t mask = name_table_.size() - 1;
  for (size_t i = PointerHash(name) & mask;; i = (i + 1) & mask) {
    NameSlot& slot = name_table_[i];
    if (slot.name == name && slot.epoch == epoch) return slot;
    if (slot.name == nullptr) return AddName(name, start, sink);
  }
}

// The first record of a kernel name in its epoch: out of line, off the
// common path. Reads the name only as the rule above (ModuleUnloaded) allows.
CuptiDecoder::NameSlot& CuptiDecoder::AddName(const char* name, uint64_t start, RecordSink& sink) {
  std::string text;
  uint32_t epoch = 0;
  {
    std::lock_guard<std::mutex> lock(unload_mu_);
    SyncUnloadsLocked();
    epoch = NameEpoch(start);
    if (epoch == unloads_.size()) {
      text = name;  // its module is loaded: an unload waits for this lock
    } else {
      const std::string* copy = nullptr;
      for (const SavedNames& saved : saved_) {
        if (saved.epoch != epoch) continue;
        auto it = saved.names.find(name);
        if (it != saved.names.end()) copy = &it->second;
      }
      if (copy != nullptr) {
        text = *copy;
      } else {
        text = kUnloadedKernelName;
        ++totals_.names_lost_at_unload;
      }
    }
  }
  // A (name, epoch) seen before: the caller missed it with a stale epoch.
  const size_t mask0 = name_table_.size() - 1;
  for (size_t i = PointerHash(name) & mask0; name_table_[i].name != nullptr; i = (i + 1) & mask0) {
    if (name_table_[i].name == name && name_table_[i].epoch == epoch) return name_table_[i];
  }
  if ((names_used_ + 1) * 2 > name_table_.size()) GrowNameTable();
  const size_t mask = name_table_.size() - 1;
  size_t i = PointerHash(name) & mask;
  while (name_table_[i].name != nullptr) i = (i + 1) & mask;
  NameSlot& slot = name_table_[i];
  slot.name = name;
  slot.epoch = epoch;
  slot.id = sink.InternString(text.c_str());
  ++names_used_;
  return slot;
}

void CuptiDecoder::GrowNameTable() {
  std::vector<NameSlot> old(name_table_.size() * 2);
  old.swap(name_table_);
  const size_t mask = name_table_.size() - 1;
  for (const NameSlot& s : old) {
    if (s.name == nullptr) continue;
    size_t i = PointerHash(s.name) & mask;
    while (name_table_[i].name != nullptr) i = (i + 1) & mask;
    name_table_[i] = s;
  }
}

uint32_t CuptiDecoder::LaunchConfig(const ConfigKey& key, RecordSink& sink) {
  ConfigSlot& slot = config_slots_[ConfigKeyHash()(key) % kConfigSlots];
  if (slot.id != 0 && slot.key == key) return slot.id;
  auto it = configs_.find(key);
  if (it == configs_.end()) {
    LaunchConfigRecord c;
    for (int i = 0; i < 3; ++i) {
      c.grid[i] = key.v[i];
      c.block[i] = key.v[3 + i];
    }
    c.static_shared_memory = key.v[6];
    c.dynamic_shared_memory = key.v[7];
    c.registers_per_thread = key.v[8];
    it = configs_.emplace(key, sink.LaunchConfigId(c)).first;
  }
  slot.key = key;
  slot.id = it->second;
  return it->second;
}

uint32_t CuptiDecoder::ApiName(bool driver, uint32_t cbid, RecordSink& sink) {
  std::vector<uint32_t>& names = api_names_[driver ? 1 : 0];
  if (cbid >= 65536) return 0;  // corrupt record; do not grow the table for it
  if (cbid >= names.size()) names.resize(cbid + 1, 0);
  uint32_t& id = names[cbid];
  if (id == 0) {
    const char* text = nullptr;
    CUptiResult r = api_->GetCallbackName(
        driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &text);
    id = (r == CUPTI_SUCCESS && text != nullptr && *text != '\0') ? sink.InternString(text)
                                                                  : kNoName;
  }
  return id == kNoName ? 0 : id;
}

void CuptiDecoder::Kernel(const CUpti_ActivityKernel10& r, RecordSink& sink) {
  // Kernels of a graph launch carry the launch's correlation id.
  if (!KeepLaunched(r.correlationId, r.start, r.end)) return;
  KernelRecord k;
  k.start_ns = r.start;
  k.end_ns = r.end;
  NameSlot& name = KernelName(r.name, r.start, sink);
  k.name = name.id;
  k.stream = Stream(r.deviceId, r.contextId, r.streamId, sink);
  k.correlation_id = r.correlationId;
  const ConfigKey config{{static_cast<uint32_t>(r.gridX), static_cast<uint32_t>(r.gridY),
                          static_cast<uint32_t>(r.gridZ), static_cast<uint32_t>(r.blockX),
                          static_cast<uint32_t>(r.blockY), static_cast<uint32_t>(r.blockZ),
                          static_cast<uint32_t>(r.staticSharedMemory),
                          static_cast<uint32_t>(r.dynamicSharedMemory), r.registersPerThread}};
  if (name.config_id == 0 || !(name.config == config)) {
    name.config_id = LaunchConfig(config, sink);
    name.config = config;
  }
  k.launch_config = name.config_id;
  k.graph_id = r.graphId;
  k.graph_node_id = r.graphNodeId;
  ++totals_.kernels;
  sink.Kernel(k);
}

void CuptiDecoder::Memcpy(const CUpti_ActivityMemcpy6& r, RecordSink& sink) {
  // The runtime call is the outer one; both were inside or outside together
  // (the nested driver call's id follows it), except across a transition.
  if (!KeepLaunched(r.runtimeCorrelationId != 0 ? r.runtimeCorrelationId : r.correlationId, r.start,
                    r.end)) {
    return;
  }
  MemcpyRecord m;
  m.start_ns = r.start;
  m.end_ns = r.end;
  m.bytes = r.bytes;
  m.copy_kind = CopyKindOf(r.copyKind);
  m.stream = Stream(r.deviceId, r.contextId, r.streamId, sink);
  // correlationId is the driver call's, runtimeCorrelationId the runtime
  // call's (0 for a driver-only copy). Kernels of runtime launches carry the
  // runtime id, so prefer it: one key per user-visible call.
  m.correlation_id = r.runtimeCorrelationId != 0 ? r.runtimeCorrelationId : r.correlationId;
  m.flags = (r.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC ? 1u : 0u) |
            (static_cast<uint32_t>(r.srcKind) << 8) | (static_cast<uint32_t>(r.dstKind) << 16);
  m.graph_id = r.graphId;
  m.graph_node_id = r.graphNodeId;
  ++totals_.memcpys;
  sink.Memcpy(m);
}

void CuptiDecoder::Memset(const CUpti_ActivityMemset4& r, RecordSink& sink) {
  if (!KeepLaunched(r.correlationId, r.start, r.end)) return;
  MemsetRecord m;
  m.start_ns = r.start;
  m.end_ns = r.end;
  m.bytes = r.bytes;
  m.value = r.value;
  m.stream = Stream(r.deviceId, r.contextId, r.streamId, sink);
  m.correlation_id = r.correlationId;
  m.flags = r.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC ? 1u : 0u;
  m.graph_id = r.graphId;
  m.graph_node_id = r.graphNodeId;
  ++totals_.memsets;
  sink.Memset(m);
}

void CuptiDecoder::Api(const CUpti_ActivityAPI& r, RecordSink& sink) {
  const bool driver = r.kind == CUPTI_ACTIVITY_KIND_DRIVER;
  // A launch call's record goes with its ops (same correlation id); other
  // calls are inside when they started while the window was open.
  const CbidAction action =
      ActionFor(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, r.cbid);
  const bool launch = action == CbidAction::kLaunch || action == CbidAction::kGraphLaunch;
  if (launch ? !KeepLaunched(r.correlationId, r.start, r.end) : !Keep(r.start, r.end)) return;
  ApiRecord a;
  a.start_ns = r.start;
  a.end_ns = r.end;
  a.domain = driver ? ApiDomain::kDriver : ApiDomain::kRuntime;
  a.cbid = r.cbid;
  // CUPTI's threadId is pthread_self() cut to 32 bits (CUpti_ActivityAPI).
  a.thread = sink.ThreadIdForPthread(r.threadId);
  a.correlation_id = r.correlationId;
  a.return_value = r.returnValue;
  a.name = ApiName(driver, r.cbid, sink);
  ++totals_.apis;
  sink.Api(a);
}

void CuptiDecoder::Sync(const CUpti_ActivitySynchronization2& r, RecordSink& sink) {
  if (!Keep(r.start, r.end)) return;
  SyncRecord s;
  s.start_ns = r.start;
  s.end_ns = r.end;
  s.type = r.type;
  if (r.streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) {
    auto dev = context_device_.find(r.contextId);
    s.stream =
        Stream(dev != context_device_.end() ? dev->second : 0, r.contextId, r.streamId, sink);
  }
  s.correlation_id = r.correlationId;
  s.context = r.contextId;
  s.event = r.cudaEventId != CUPTI_SYNCHRONIZATION_INVALID_VALUE ? r.cudaEventId : 0;
  ++totals_.syncs;
  sink.Sync(s);
}

void CuptiDecoder::Overhead(CUpti_ActivityOverhead3& r, RecordSink& sink) {
  // The client owns overheadData and must free it (cupti_activity.h,
  // CUpti_ActivityOverhead3); clear it so a second walk cannot double-free.
  if (r.overheadData != nullptr) {
    std::free(r.overheadData);
    r.overheadData = nullptr;
  }
  if (!Keep(r.start, r.end)) return;
  OverheadRecord o;
  o.start_ns = r.start;
  o.end_ns = r.end;
  o.kind = r.overheadKind;
  if (r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
    o.thread = sink.ThreadIdForPthread(r.objectId.pt.threadId);
  }
  o.correlation_id = r.correlationId;
  ++totals_.overheads;
  sink.Overhead(o);
}

void CuptiDecoder::GraphTrace(const CUpti_ActivityGraphTrace2& r, RecordSink& sink) {
  if (!KeepLaunched(r.correlationId, r.start, r.end)) return;
  GraphLaunchRecord g;
  g.start_ns = r.start;
  g.end_ns = r.end;
  g.graph_id = r.graphId;
  g.stream = Stream(r.deviceId, r.contextId, r.streamId, sink);
  g.correlation_id = r.correlationId;
  ++totals_.graph_launches;
  sink.GraphLaunch(g);
}

}  // namespace tracer
