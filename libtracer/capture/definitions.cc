#include "libtracer/capture/definitions.h"

namespace tracer {

Definitions::~Definitions() {
  for (NvtxDomain* d : domains_) delete d;
  for (auto& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

NvtxDomain* Definitions::CreateDomain(uint32_t name, bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    it->second->destroyed.store(false, std::memory_order_relaxed);
    return it->second;
  }
  if (domains_.size() >= kMaxDomains - 1) return nullptr;
  const auto id = static_cast<uint16_t>(domains_.size() + 1);
  auto* chunk = chunks_[id >> 8].load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new std::atomic<NvtxDomain*>[256]();
    chunks_[id >> 8].store(chunk, std::memory_order_release);
  }
  auto* d = new NvtxDomain{id, name, enabled};
  domains_.push_back(d);
  by_name_.emplace(name, d);
  chunk[id & 0xFF].store(d, std::memory_order_release);
  return d;
}

NvtxDomain* Definitions::DefaultDomain(bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!default_set_) {
    default_domain_.enabled = enabled;
    default_set_ = true;
  }
  return &default_domain_;
}

uint32_t Definitions::DomainName(uint16_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id == 0 || id > domains_.size()) return 0;
  return domains_[id - 1]->name;
}

void Definitions::NameCategory(uint16_t domain, uint32_t category, uint32_t name) {
  std::lock_guard<std::mutex> lock(mu_);
  categories_.push_back(CategoryDefRecord{domain, category, name});
}

size_t Definitions::CategoriesSince(size_t from, std::vector<CategoryDefRecord>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = from; i < categories_.size(); ++i) out->push_back(categories_[i]);
  return categories_.size();
}

void Definitions::NameOsThread(uint64_t os_tid, uint32_t name) {
  std::lock_guard<std::mutex> lock(mu_);
  thread_names_[os_tid] = name;
}

uint32_t Definitions::OsThreadName(uint64_t os_tid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = thread_names_.find(os_tid);
  return it == thread_names_.end() ? 0 : it->second;
}

Definitions& GlobalDefinitions() {
  static Definitions* d = new Definitions();  // leaked: usable during exit
  return *d;
}

}  // namespace tracer
