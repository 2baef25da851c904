// Process-wide NVTX definitions that outlive a session (a forked child keeps
// the parent's domain handles): domains, category names, and names given to
// OS threads by id. Rarely written (under a lock); the writer reads what is
// new since its last drain.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/core/records.h"

namespace tracer {

// What an nvtxDomainHandle_t points to.
struct NvtxDomain {
  uint16_t id;    // DomainDef id; 0 = the default domain
  uint32_t name;  // string id
  bool enabled;   // TRACER_DOMAINS_INCLUDE / _EXCLUDE
  // Set by nvtxDomainDestroy, cleared when the name is created again: calls
  // with a destroyed domain's handle are dropped and counted.
  std::atomic<bool> destroyed{false};
};

class Definitions {
 public:
  static constexpr uint16_t kMaxDomains = 0xFFFF;

  Definitions() = default;
  // Only definitions the tests own are ever destroyed: the library's
  // (GlobalDefinitions) lives until the process ends, so its domains stay
  // valid for NVTX calls made during exit.
  ~Definitions();
  Definitions(const Definitions&) = delete;
  Definitions& operator=(const Definitions&) = delete;

  // The same name gives the same domain. nullptr when out of ids.
  NvtxDomain* CreateDomain(uint32_t name, bool enabled);
  NvtxDomain* DefaultDomain(bool enabled);
  uint32_t DomainName(uint16_t id);
  // The domain CreateDomain gave this id, or nullptr (0, or never given).
  // Lock-free: every NVTX call with a domain handle validates it here.
  NvtxDomain* FindDomain(uint16_t id) const noexcept {
    auto* chunk = chunks_[id >> 8].load(std::memory_order_acquire);
    return chunk ? chunk[id & 0xFF].load(std::memory_order_acquire) : nullptr;
  }

  void NameCategory(uint16_t domain, uint32_t category, uint32_t name);
  // Category names recorded at index >= from; returns the new end index.
  size_t CategoriesSince(size_t from, std::vector<CategoryDefRecord>* out);

  void NameOsThread(uint64_t os_tid, uint32_t name);
  uint32_t OsThreadName(uint64_t os_tid);

  void LockForFork() { mu_.lock(); }
  void UnlockAfterFork() { mu_.unlock(); }

 private:
  // Read by every NVTX call: kept off the mutex's cache line.
  alignas(64) NvtxDomain default_domain_{0, 0, true};
  alignas(64) std::mutex mu_;
  bool default_set_ = false;
  std::vector<NvtxDomain*> domains_;  // index = id - 1; freed only with this object
  std::unordered_map<uint32_t, NvtxDomain*> by_name_;
  // FindDomain's table: 256 chunks of 256 slots, a chunk allocated (under
  // mu_) when its first id is given, freed only with this object.
  std::atomic<std::atomic<NvtxDomain*>*> chunks_[256] = {};
  std::vector<CategoryDefRecord> categories_;
  std::unordered_map<uint64_t, uint32_t> thread_names_;
};

Definitions& GlobalDefinitions();

}  // namespace tracer
