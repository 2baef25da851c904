// Importer of PyTorch profiler (Kineto) Chrome-trace JSON, gzipped or not.
// The file is streamed: zlib inflates it on a background thread a few 256 KiB
// blocks ahead (gzip_stream.h) while a hand-written pull tokenizer
// (kineto_tokenizer.h) hands over one flattened event at a time; only the
// model's records are kept (peak RSS ~9 MB for the 15 MB ResNet trace).
//
// Mapping to the model (one ProcessTrace per file = one rank):
//   * time: Chrome-trace "ts"/"dur" are microseconds whatever
//     "displayTimeUnit" says (that key only sets the viewer's display unit).
//     Kineto's "ns resolution" traces (HTA's ns_resolution_trace) write
//     fractional microseconds with up to 3 decimals; they are converted from
//     the text exactly, so ns = us * 1000 with no double rounding.
//   * cat kernel / gpu_memcpy / gpu_memset -> kernels / memcpys / memsets on
//     the stream (args.device, args.context, args.stream), correlation from
//     args.correlation; memcpy kind from the name ("Memcpy DtoD ...").
//   * cuda_runtime / cuda_driver -> api_calls (name = event name, cbid =
//     args.cbid, domain runtime / driver) on their (tid) thread.
//   * cpu_op and user_annotation -> push/pop ranges on their thread, category
//     1 "cpu_op" / 2 "user_annotation" (default domain); parents recovered by
//     time per thread (range_nesting.h; partial overlaps counted in
//     counters["import_partially_overlapping_ranges"]).
//   * gpu_user_annotation -> push/pop ranges on one pseudo-thread per GPU
//     stream (os_tid 0, named "GPU <d> stream <s>"), in domain 1
//     "gpu_user_annotation" so that they never merge with the CPU
//     annotations of the same name; no launch comes from those threads, so
//     attribution never uses them.
//   * python_function and other categories are skipped and counted; ac2g
//     flows repeat args.correlation and are only counted.
//   * distributedInfo.rank -> header.rank; host_name -> header.host; the pid
//     of the CPU events -> header.pid; header.source = "kineto-json".
#pragma once

#include <string>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

// Appends the trace at path as one process. False with a one-line *error
// when the file is not a readable Chrome-trace JSON (then *trace gets no
// process).
bool ImportKinetoJson(const std::string& path, Trace* trace, std::string* error);

// Domain and categories used for Kineto ranges (see above).
inline constexpr uint32_t kKinetoCategoryCpuOp = 1;
inline constexpr uint32_t kKinetoCategoryUserAnnotation = 2;
inline constexpr uint32_t kKinetoCategoryGpuUserAnnotation = 3;
inline constexpr uint32_t kKinetoGpuAnnotationDomain = 1;

}  // namespace tracer::analysis::importers
