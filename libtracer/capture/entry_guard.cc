#include "libtracer/capture/entry_guard.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "libtracer/capture/log.h"

namespace tracer {
namespace {

// Entry points that already reported a failure. Fixed size and lock-free:
// reporting runs when allocation has just failed. There are fewer entry
// points than slots; were they all taken, later failures would be reported
// every time rather than never.
constexpr int kSlots = 128;
std::atomic<const char*> g_reported[kSlots];

// True the first time `entry` is seen.
bool FirstFailure(const char* entry) noexcept {
  for (int i = 0; i < kSlots; ++i) {
    const char* seen = g_reported[i].load(std::memory_order_acquire);
    while (seen == nullptr) {
      if (g_reported[i].compare_exchange_weak(seen, entry, std::memory_order_acq_rel)) return true;
    }
    if (seen == entry || std::strcmp(seen, entry) == 0) return false;
  }
  return true;
}

}  // namespace

void ReportEntryFailure(const char* entry, const char* what, const char* consequence) noexcept {
  if (!FirstFailure(entry)) return;
  char line[512];
  std::snprintf(line, sizeof(line), "%s failed (%s); %s", entry, what ? what : "?",
                consequence ? consequence : kNotTraced);
  Log(LogLevel::kError, line);
}

}  // namespace tracer
