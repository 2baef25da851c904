#include "libtracer/core/frame_crc.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace tracer {

uint32_t FrameCrc32Portable(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: frames stay far below 4 GiB, but stay exact.
  while (size > 0) {
    const uInt n = size > (1u << 30) ? (1u << 30) : static_cast<uInt>(size);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), n);
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

#if defined(__x86_64__)
namespace {

bool CpuHasClmul() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_PCLMUL) != 0 && (c & bit_SSE4_1) != 0;
}

bool HasClmul() {
  static const bool has = CpuHasClmul();  // initialized on first use, by any thread
  return has;
}

#define TRACER_CLMUL __attribute__((target("pclmul,sse4.1")))

TRACER_CLMUL inline __m128i Load(const char* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// x times the two constants of k, low and high halves, plus next.
TRACER_CLMUL inline __m128i Fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

// The bit-reflected CRC-32 state (no pre/post inversion) over `size` bytes,
// size >= 64 and a multiple of 16. Folding constants x^k mod P for the
// reflected polynomial 0xEDB88320, as in the Linux kernel's
// crc32-pclmul_asm.S: R1/R2 fold 64 bytes, R3/R4 16, R5 the last 64 bits to
// 32; then a Barrett reduction by P and mu = floor(x^64 / P).
TRACER_CLMUL uint32_t FoldCrc(uint32_t crc, const char* p, size_t size) {
  const __m128i k_r2r1 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k_r4r3 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  const __m128i k_r5 = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i k_mask32 = _mm_set_epi64x(0, 0xFFFFFFFF);
  const __m128i k_poly_mu = _mm_set_epi64x(0x1F7011641, 0x1DB710641);
  __m128i x1 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = Load(p + 16), x3 = Load(p + 32), x4 = Load(p + 48);
  p += 64;
  size -= 64;
  for (; size >= 64; size -= 64, p += 64) {
    x1 = Fold(x1, k_r2r1, Load(p));
    x2 = Fold(x2, k_r2r1, Load(p + 16));
    x3 = Fold(x3, k_r2r1, Load(p + 32));
    x4 = Fold(x4, k_r2r1, Load(p + 48));
  }
  x1 = Fold(x1, k_r4r3, x2);
  x1 = Fold(x1, k_r4r3, x3);
  x1 = Fold(x1, k_r4r3, x4);
  for (; size >= 16; size -= 16, p += 16) x1 = Fold(x1, k_r4r3, Load(p));
  // 128 -> 64 bits (appending 32 zero bits), then -> 32 bits.
  x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k_r4r3, x1, 0x01));
  __m128i x2b = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, k_mask32), k_r5, 0x00), x2b);
  // Barrett reduction.
  x2b = x1;
  x1 = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, k_mask32), k_poly_mu, 0x10), k_mask32);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k_poly_mu, 0x00), x2b);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

#undef TRACER_CLMUL

}  // namespace

uint32_t FrameCrc32(const char* data, size_t size) {
  if (size < 64 || !HasClmul()) return FrameCrc32Portable(data, size);
  const size_t folded = size & ~size_t{15};
  // zlib's crc32 inverts the state on entry and exit; the fold works on the
  // raw state.
  uint32_t crc = ~FoldCrc(~uint32_t{0}, data, folded);
  if (folded < size) {
    crc = static_cast<uint32_t>(crc32(crc, reinterpret_cast<const Bytef*>(data + folded),
                                      static_cast<uInt>(size - folded)));
  }
  return crc;
}

bool FrameCrc32UsesClmul() { return HasClmul(); }

#else

uint32_t FrameCrc32(const char* data, size_t size) { return FrameCrc32Portable(data, size); }
bool FrameCrc32UsesClmul() { return false; }

#endif

}  // namespace tracer
