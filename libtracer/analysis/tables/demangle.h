// Kernel names for humans: demangle (abi::__cxa_demangle), then shorten to
// the qualified function name, dropping template arguments, parameter lists
// and the return type:
//   "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)"
//     -> "at::native::vectorized_elementwise_kernel"
// Already demangled names (nsys, Kineto) are shortened the same way; names
// without a template or parameter list ("ampere_sgemm_128x64_nn") are
// returned as they are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tracer::analysis {

// Full demangled name, or the input when it is not a mangled C++ name.
std::string Demangle(std::string_view name);
// Short name as described above.
std::string ShortKernelName(std::string_view name);
// Short names of distinct kernels that never collide: a name whose short
// form another one shares gets the least of its template / argument text
// that tells it apart: the text up to the first difference when that comes
// early ("at::native::reduce_kernel<512, 1...>"), else the differing word
// alone ("at::native::elementwise_kernel<...MulFunctor...>"); " #2", ... as
// a last resort. Names that do not collide get ShortKernelName. Empty names
// read "(unnamed)".
std::vector<std::string> UniqueShortNames(const std::vector<std::string_view>& names);
// A CUDA API function as nsys's reports print it: CUPTI's runtime callback
// names carry the version the entry point appeared in ("cudaMemcpy2D_v3020",
// "cudaStreamGetCaptureInfo_v2_v11030"); that trailing "_v<digits>" (four or
// more digits: a CUDA version) is dropped. A driver function's own "_v2"
// ("cuMemcpyHtoDAsync_v2") is part of its name and stays.
std::string_view ApiDisplayName(std::string_view name);

}  // namespace tracer::analysis
