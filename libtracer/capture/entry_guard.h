// The one guard of every C boundary of libtracer.so (NVTX injection
// functions, CUPTI callbacks, the injection entry points, the control API,
// atexit / destructor / fork handlers, the writer thread's body). Code below a
// guard may throw (allocations, std::string building, mutex locks, map
// inserts); the guard catches everything, logs one line the first time a
// given entry point fails, and returns the entry point's fallback, so an
// out-of-memory error inside the tracer degrades the trace instead of
// terminating the host.
#pragma once

#include <exception>
#include <utility>

namespace tracer {

// Logs "<entry> failed (<what>); <consequence>" once per entry point, and
// never allocates (it must work when memory is exhausted). entry must have
// static storage (a string literal): it is remembered.
void ReportEntryFailure(const char* entry, const char* what, const char* consequence) noexcept;

#ifdef TRACER_FAULT_INJECTION
// Test builds only (tests/capture/faults): marks the calling thread as inside
// `entry`, so the test allocator can fail the allocations made there.
class FaultScope {
 public:
  explicit FaultScope(const char* entry) noexcept;
  ~FaultScope();
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;

 private:
  const char* saved_;
};
#define TRACER_FAULT_SCOPE(entry) ::tracer::FaultScope tracer_fault_scope_(entry)
#else
#define TRACER_FAULT_SCOPE(entry) static_cast<void>(0)
#endif

inline constexpr const char* kNotTraced = "that call was not traced; the program continues";

// Runs fn() and returns its result; if it throws, reports the failure and
// returns fallback() instead. The fallback must not throw (checked).
template <typename Fn, typename Fallback>
inline auto Guarded(const char* entry, const char* consequence, Fn&& fn,
                    Fallback&& fallback) noexcept -> decltype(fn()) {
  static_assert(noexcept(fallback()), "a guard's fallback must be noexcept");
  {
    TRACER_FAULT_SCOPE(entry);
    try {
      return std::forward<Fn>(fn)();
    } catch (const std::exception& e) {
      ReportEntryFailure(entry, e.what(), consequence);
    } catch (...) {
      ReportEntryFailure(entry, "unknown exception", consequence);
    }
  }
  return std::forward<Fallback>(fallback)();
}

// Same, with a value-initialised result (nothing for void) as the fallback.
template <typename Fn>
inline auto Guarded(const char* entry, Fn&& fn) noexcept -> decltype(fn()) {
  using Result = decltype(fn());
  return Guarded(entry, kNotTraced, std::forward<Fn>(fn), []() noexcept { return Result(); });
}

}  // namespace tracer
