// Runs independent per-process work (ProcessAnalysis, its GPU projection)
// on the machine's cores: a multi-rank export is a few processes whose
// analyses share nothing, so each is computed on a thread of its own.
#pragma once

#include <cstddef>
#include <functional>

namespace tracer::analysis {

// Calls fn(i) for every i in [0, n), on up to as many threads as the machine
// has cores (this one included), and returns when all are done. The first
// exception thrown by fn is rethrown here, after the others finished. Where
// no thread can be started, the calls run here, one after another.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

// The same, on this thread alone when the work is small: `records` (about
// the records the calls read, all together) below kParallelMinRecords. A
// thread costs its start, its stack and, on its first allocation, a malloc
// arena of its own whose pages fault in anew: on a trace of some ten
// thousand records that was more CPU time than the work it took over.
inline constexpr size_t kParallelMinRecords = 200000;
void ParallelFor(size_t n, size_t records, const std::function<void(size_t)>& fn);

}  // namespace tracer::analysis
