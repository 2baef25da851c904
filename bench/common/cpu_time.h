// CPU-time readings shared by the benchmarks. They time CPU, not wall
// time, because the machines they run on are shared and often
// oversubscribed: wall time would charge other processes' slices to the
// code under test.
#ifndef TRACER_BENCH_COMMON_CPU_TIME_H_
#define TRACER_BENCH_COMMON_CPU_TIME_H_

#include <time.h>

#include <cstdint>

namespace tracer::bench {

inline int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline double ClockSeconds(clockid_t clock) { return static_cast<double>(ClockNs(clock)) * 1e-9; }

// The calling thread's CPU time.
inline int64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }
inline double ThreadCpuSeconds() { return ClockSeconds(CLOCK_THREAD_CPUTIME_ID); }

// The CPU time of the whole process, all its threads together.
inline double ProcessCpuSeconds() { return ClockSeconds(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace tracer::bench

#endif  // TRACER_BENCH_COMMON_CPU_TIME_H_
