#include "libtracer/core/varint_encode.h"

#include <cstring>

#include "libtracer/core/wire_writer.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace tracer {
namespace {

struct Cpu {
  bool pdep = false;    // BMI2, pdep in hardware
  bool avx512 = false;  // AVX-512 F, BW, VBMI, VBMI2 and POPCNT, with the OS saving zmm state
};

Cpu DetectCpu() {
  Cpu cpu;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0 || eax < 7) return cpu;
  const bool intel = ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e;  // GenuineIntel
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;    // AuthenticAMD
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  const unsigned base_family = (eax >> 8) & 0xF;
  const unsigned family = base_family + (base_family == 0xF ? (eax >> 20) & 0xFF : 0);
  const bool osxsave = (ecx >> 27 & 1) != 0;
  const bool popcnt = (ecx >> 23 & 1) != 0;
  unsigned xcr0 = 0;
  if (osxsave) {
    unsigned high = 0;
    asm volatile("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
  }
  __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
  const bool bmi2 = (ebx >> 8 & 1) != 0;
  // AMD before Zen 3 (family 0x19) runs pdep in microcode: tens to
  // hundreds of cycles, slower than the byte loop.
  cpu.pdep = bmi2 && (intel || (amd && family >= 0x19));
  const bool avx512f = (ebx >> 16 & 1) != 0, avx512bw = (ebx >> 30 & 1) != 0;
  const bool vbmi = (ecx >> 1 & 1) != 0, vbmi2 = (ecx >> 6 & 1) != 0;
  // XCR0: SSE, AVX, opmask and both halves of the zmm registers enabled.
  cpu.avx512 = avx512f && avx512bw && vbmi && vbmi2 && popcnt && (xcr0 & 0xE6) == 0xE6;
#endif
  return cpu;
}

const Cpu& TheCpu() {
  static const Cpu cpu = DetectCpu();
  return cpu;
}

// The bitwise or of v[0..n): below 2^(7k), every value is at most k bytes.
uint64_t AnyBits(const uint64_t* v, size_t n) {
  size_t i = 0;
  uint64_t any = 0;
#if defined(__SSE2__)
  __m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    a = _mm_or_si128(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    b = _mm_or_si128(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i + 2)));
  }
  a = _mm_or_si128(a, b);
  any = static_cast<uint64_t>(_mm_cvtsi128_si64(a)) |
        static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
#endif
  for (; i < n; ++i) any |= v[i];
  return any;
}

// v[0..n), each below 0x80 (its varint is its one byte), as bytes at p.
char* PutBytes(char* p, const uint64_t* v, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  // 16 values a step: the 64-bit lanes' low halves packed to 16 bits (the
  // high halves are 0, so each value stays whole), again, then to bytes.
  const auto* q = reinterpret_cast<const __m128i*>(v);
  for (; i + 16 <= n; i += 16, q += 8) {
    const __m128i a = _mm_packs_epi32(_mm_loadu_si128(q), _mm_loadu_si128(q + 1));
    const __m128i b = _mm_packs_epi32(_mm_loadu_si128(q + 2), _mm_loadu_si128(q + 3));
    const __m128i c = _mm_packs_epi32(_mm_loadu_si128(q + 4), _mm_loadu_si128(q + 5));
    const __m128i d = _mm_packs_epi32(_mm_loadu_si128(q + 6), _mm_loadu_si128(q + 7));
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), bytes);
  }
#endif
  for (; i < n; ++i) p[i] = static_cast<char>(v[i]);
  return p + n;
}

char* PutEach(char* p, const uint64_t* v, size_t n) {
  for (size_t i = 0; i < n; ++i) p = wire::PutVarint(p, v[i]);
  return p;
}

char* EncodePortable(char* p, const uint64_t* v, size_t n) {
  const uint64_t any = AnyBits(v, n);
  if (any < 0x80) return PutBytes(p, v, n);
  if (any >= (uint64_t{1} << 14)) return PutEach(p, v, n);
  // Values of one or two bytes: both bytes stored, the pointer moved by
  // one or two, no branch on which.
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = v[i];
    const uint64_t two = x >= 0x80;
    const auto w = static_cast<uint16_t>((x & 0x7F) | (two << 7) | ((x >> 7) << 8));
    std::memcpy(p, &w, 2);
    p += 1 + two;
  }
  return p;
}

#if defined(__x86_64__)

char* EncodePdep(char* p, const uint64_t* v, size_t n) {
  const uint64_t any = AnyBits(v, n);
  if (any < 0x80) return PutBytes(p, v, n);
  if (any >> 56 != 0) return PutEach(p, v, n);
  // By the value's top bit: its varint's length, and 0x80 in every byte
  // of it but the last.
  struct Tables {
    uint64_t continuation[64];
    uint8_t length[64];
  };
  static constexpr Tables kBy = [] {
    Tables t{};
    for (int top = 0; top < 64; ++top) {
      const int length = top / 7 + 1;
      t.length[top] = static_cast<uint8_t>(length);
      for (int b = 0; b + 1 < length && b < 8; ++b)
        t.continuation[top] |= uint64_t{0x80} << (8 * b);
    }
    return t;
  }();
  const uint64_t groups = 0x7F7F7F7F7F7F7F7F;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = v[i];
    // The top set bit (bsr; GCC's __bsrq is not in clang, the fuzz build's).
    const auto top = static_cast<size_t>(63 - __builtin_clzll(x | 1));
    uint64_t w;
    // Inline assembly rather than _pdep_u64, which needs the caller
    // compiled for BMI2; this runs only where the CPU has it.
    asm("pdep %2, %1, %0" : "=r"(w) : "r"(x), "r"(groups));
    w |= kBy.continuation[top];
    std::memcpy(p, &w, 8);
    p += kBy.length[top];
  }
  return p;
}

#define TRACER_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt")))

// The varints of the eight values of x (each below 2^56), of which the
// lanes whose bytes are set in `lanes` count, at p (64 bytes stored).
TRACER_AVX512 inline char* PutEight(char* p, __m512i x, uint64_t lanes) {
  // Byte k of each lane = bits 7k..7k+6 of its value.
  // (Zero-masked forms with all lanes: the plain ones pass an undefined
  // register, which makes GCC 12 warn.)
  const __m512i groups = _mm512_and_si512(
      _mm512_maskz_multishift_epi64_epi8(~__mmask64{0}, _mm512_set1_epi64(0x312A231C150E0700), x),
      _mm512_set1_epi8(0x7F));
  // The bytes of a varint: those up to its highest non-zero group, at
  // least one: an or of each byte's mask bit with those above it in the
  // lane (8 bits a lane in the mask).
  uint64_t used = _mm512_test_epi8_mask(groups, groups);
  used |= (used >> 1) & 0x7F7F7F7F7F7F7F7F;
  used |= (used >> 2) & 0x3F3F3F3F3F3F3F3F;
  used |= (used >> 4) & 0x0F0F0F0F0F0F0F0F;
  used = (used | 0x0101010101010101) & lanes;
  // The continuation bit on every byte followed by one of its varint.
  const uint64_t more = (used >> 1) & 0x7F7F7F7F7F7F7F7F;
  const __m512i bytes = _mm512_mask_blend_epi8(
      more, groups, _mm512_or_si512(groups, _mm512_set1_epi8(static_cast<char>(0x80))));
  _mm512_storeu_si512(p, _mm512_maskz_compress_epi8(used, bytes));
  return p + _mm_popcnt_u64(used);
}

TRACER_AVX512 char* EncodeAvx512(char* p, const uint64_t* v, size_t n) {
  size_t i = 0;
  __m512i acc = _mm512_setzero_si512();
  for (; i + 8 <= n; i += 8) acc = _mm512_or_si512(acc, _mm512_loadu_si512(v + i));
  const size_t rest = n - i;  // 0..7 values after the last whole step
  const auto rest_lanes = static_cast<__mmask8>((1u << rest) - 1);
  const __m512i last = _mm512_maskz_loadu_epi64(rest_lanes, v + i);
  // Not _mm512_reduce_or_epi64 or _mm512_cvtepi64_epi8: their use of
  // undefined registers makes GCC 12 warn.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_or_si512(acc, last));
  uint64_t any = 0;
  for (uint64_t lane : lanes) any |= lane;
  if (any < 0x80) {
    // One byte a value: eight narrowed per instruction.
    for (i = 0; i + 8 <= n; i += 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p + i),
                       _mm512_maskz_cvtepi64_epi8(0xFF, _mm512_loadu_si512(v + i)));
    }
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p + i), _mm512_maskz_cvtepi64_epi8(0xFF, last));
    return p + n;
  }
  if (any >> 56 != 0) return PutEach(p, v, n);
  for (i = 0; i + 8 <= n; i += 8) p = PutEight(p, _mm512_loadu_si512(v + i), ~uint64_t{0});
  if (rest > 0) p = PutEight(p, last, (uint64_t{1} << (8 * rest)) - 1);
  return p;
}

#undef TRACER_AVX512

#endif  // __x86_64__

}  // namespace

bool VarintCodecSupported(VarintCodec codec) {
  switch (codec) {
    case VarintCodec::kPortable:
      return true;
    case VarintCodec::kPdep:
      return TheCpu().pdep;
    case VarintCodec::kAvx512:
      return TheCpu().avx512;
  }
  return false;
}

VarintCodec BestVarintCodec() {
  if (TheCpu().avx512) return VarintCodec::kAvx512;
  if (TheCpu().pdep) return VarintCodec::kPdep;
  return VarintCodec::kPortable;
}

char* EncodeVarints(VarintCodec codec, char* p, const uint64_t* v, size_t n) {
#if defined(__x86_64__)
  if (codec == VarintCodec::kAvx512) return EncodeAvx512(p, v, n);
  if (codec == VarintCodec::kPdep) return EncodePdep(p, v, n);
#endif
  return EncodePortable(p, v, n);
}

}  // namespace tracer
