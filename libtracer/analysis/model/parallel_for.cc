#include "libtracer/analysis/model/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace tracer::analysis {

void ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t workers = std::min(n, cores);
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first_error;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      // An exception must not leave a worker thread (std::terminate): the
      // first one (std::bad_alloc; expected failures are Status values) is
      // rethrown on the calling thread below.
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) {
    // std::thread says it could not start only by throwing.
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the ones started and this one do the rest
    }
  }
  work();
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

void ParallelFor(size_t n, size_t records, const std::function<void(size_t)>& fn) {
  if (records >= kParallelMinRecords) {
    ParallelFor(n, fn);
    return;
  }
  for (size_t i = 0; i < n; ++i) fn(i);
}

}  // namespace tracer::analysis
