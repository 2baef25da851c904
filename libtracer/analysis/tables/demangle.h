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

namespace tracer::analysis {

// Full demangled name, or the input when it is not a mangled C++ name.
std::string Demangle(std::string_view name);
// Short name as described above.
std::string ShortKernelName(std::string_view name);

}  // namespace tracer::analysis
