// Protobuf varints of a column of values at a time, for the packed columns
// the capture writer fills once per NVTX range (VarintColumns): encoding a
// column at once lets the code pick one loop for all its values (a column
// of one-byte values is a narrowing copy) and encode several values per
// instruction where the CPU can, where a varint per call costs a branch per
// byte, mispredicted whenever the values change length
// (bench/capture/range_encode_bench).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracer {

enum class VarintCodec : uint8_t {
  // Any CPU: a narrowing copy for one-byte columns, byte shuffles for up to
  // four bytes (x86-64 with SSSE3), else a branch-free loop per longest
  // length (groups moved by adds).
  kPortable,
  kPdep,    // x86-64 with BMI2 that runs pdep in hardware: the same, a pdep a value
  kAvx512,  // x86-64 with AVX-512 VBMI2 (vpcompressb): eight values a step
  // kPortable without the byte shuffles, as on CPUs without SSSE3 (and
  // not x86-64): a codec of its own so that tests and benches run it here.
  kScalar,
};

// Whether this CPU (and its OS, for AVX-512 state) runs codec.
bool VarintCodecSupported(VarintCodec codec);
// The fastest codec this CPU runs (checked once).
VarintCodec BestVarintCodec();

// Bytes EncodeVarints may write past the end of the varints it returns
// (whole-register stores; the next call overwrites them).
inline constexpr size_t kVarintEncodeSlack = 64;

// Writes the varints of v[0..n) at p, which has room for
// 10 * n + kVarintEncodeSlack bytes, and returns their end. Every codec
// writes the same bytes (a codec the CPU lacks must not be passed).
char* EncodeVarints(VarintCodec codec, char* p, const uint64_t* v, size_t n);

}  // namespace tracer
