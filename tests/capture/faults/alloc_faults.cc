// TEST ONLY, linked into libtracer_faults.so and never into libtracer.so: an
// allocator that fails the tracer's own allocations inside chosen entry
// points, so tests can show that no C boundary lets an allocation failure
// reach the host (entry_guard.h). Settings, read once:
//
//   TRACER_TEST_FAIL_ALLOC=ENTRY[,ENTRY...]   entry points as named by their
//                                             guard, or * for every one
//   TRACER_TEST_FAIL_ALLOC_SKIP=N             let the first N allocations made
//                                             inside them succeed (default 0)
//   TRACER_TEST_FAIL_ALLOC_COUNT=M            then fail M (default: all later)
//
// operator new throws std::bad_alloc and aligned_alloc (the CUPTI buffer
// pool) returns nullptr, as they do when memory is exhausted. The version
// script makes these definitions local, so only the library's own calls
// reach them: the host's and libstdc++'s allocations are untouched.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "libtracer/capture/entry_guard.h"

#ifndef TRACER_FAULT_INJECTION
#error "alloc_faults.cc belongs to the fault-injection test build only"
#endif

namespace tracer {
namespace {

__attribute__((tls_model("initial-exec"))) thread_local const char* t_entry = nullptr;

struct Settings {
  const char* entries = nullptr;  // nullptr: fail nothing
  uint64_t skip = 0;
  uint64_t count = UINT64_MAX;
};

Settings Load() {
  Settings s;
  s.entries = std::getenv("TRACER_TEST_FAIL_ALLOC");
  if (const char* v = std::getenv("TRACER_TEST_FAIL_ALLOC_SKIP"))
    s.skip = std::strtoull(v, nullptr, 10);
  if (const char* v = std::getenv("TRACER_TEST_FAIL_ALLOC_COUNT"))
    s.count = std::strtoull(v, nullptr, 10);
  return s;
}

const Settings& Get() {
  static const Settings settings = Load();
  return settings;
}

std::atomic<uint64_t> g_armed_allocations{0};

bool Listed(const char* list, const char* entry) {
  if (std::strcmp(list, "*") == 0) return true;
  const size_t n = std::strlen(entry);
  for (const char* p = list; *p != '\0';) {
    const char* end = std::strchr(p, ',');
    const size_t len = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
    if (len == n && std::strncmp(p, entry, n) == 0) return true;
    if (end == nullptr) break;
    p = end + 1;
  }
  return false;
}

bool ShouldFail() noexcept {
  const char* entry = t_entry;
  if (entry == nullptr) return false;
  const Settings& s = Get();
  if (s.entries == nullptr || !Listed(s.entries, entry)) return false;
  const uint64_t n = g_armed_allocations.fetch_add(1, std::memory_order_relaxed);
  return n >= s.skip && n - s.skip < s.count;
}

void* Allocate(std::size_t size) {
  if (ShouldFail()) throw std::bad_alloc();
  if (void* p = std::malloc(size != 0 ? size : 1)) return p;
  throw std::bad_alloc();
}

void* AllocateAligned(std::size_t size, std::align_val_t alignment) {
  if (ShouldFail()) throw std::bad_alloc();
  void* p = nullptr;
  if (posix_memalign(&p, static_cast<std::size_t>(alignment), size != 0 ? size : 1) == 0) return p;
  throw std::bad_alloc();
}

}  // namespace

uint64_t ArmedAllocations() { return g_armed_allocations.load(std::memory_order_relaxed); }

FaultScope::FaultScope(const char* entry) noexcept : saved_(t_entry) { t_entry = entry; }
FaultScope::~FaultScope() { t_entry = saved_; }

}  // namespace tracer

void* operator new(std::size_t size) { return tracer::Allocate(size); }
void* operator new[](std::size_t size) { return tracer::Allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) {
  return tracer::AllocateAligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return tracer::AllocateAligned(size, a);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return tracer::Allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return tracer::Allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

// The CUPTI buffer pool's allocation point: C semantics, nullptr on failure.
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  if (tracer::ShouldFail()) return nullptr;
  void* p = nullptr;
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

// TRACER_TEST_FAIL_ALLOC_STATS=1: at unload, says how many allocations the
// chosen entry points made, so a test can sweep the failure over each.
__attribute__((destructor)) static void ReportArmedAllocations() {
  if (std::getenv("TRACER_TEST_FAIL_ALLOC_STATS") == nullptr) return;
  char line[96];
  const int n = std::snprintf(line, sizeof(line), "alloc_faults: %llu allocations\n",
                              static_cast<unsigned long long>(tracer::ArmedAllocations()));
  if (n > 0) {
    ssize_t ignored = write(2, line, static_cast<size_t>(n));
    (void)ignored;
  }
}
