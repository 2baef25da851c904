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
  bool ssse3 = false;   // pshufb
  bool pdep = false;    // BMI2, pdep in hardware (and SSSE3)
  bool avx512 = false;  // AVX-512 F, BW, VBMI, VBMI2 and POPCNT, with the OS saving zmm state
};

Cpu DetectCpu() {
  Cpu cpu;
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return cpu;
  const unsigned max_leaf = eax;
  const bool intel = ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e;  // GenuineIntel
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;    // AuthenticAMD
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  cpu.ssse3 = (ecx >> 9 & 1) != 0;
  if (max_leaf < 7) return cpu;
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
  // (Every such CPU has SSSE3, which the pdep codec uses too.)
  cpu.pdep = bmi2 && cpu.ssse3 && (intel || (amd && family >= 0x19));
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

// 0x80 in every byte of a varint of `length` bytes but its last.
constexpr uint64_t kContinuation[9] = {
    0, 0, 0x80, 0x8080, 0x808080, 0x80808080, 0x8080808080, 0x808080808080, 0x80808080808080};

// By the top set bit of a value below 2^56: its varint's length.
constexpr struct LengthByTop {
  uint8_t length[64];
  constexpr LengthByTop() : length() {
    for (int top = 0; top < 64; ++top) length[top] = static_cast<uint8_t>(top / 7 + 1);
  }
} kLengthByTop;

// Groups of 7 bits of x (below 2^(7 * kBytes)) one per byte, by adds: x +
// the sum over k of (x & -2^(7k)) << (k - 1) moves group k up by k bits,
// an and and an lea a group (no port-bound instruction, as pdep is).
struct ByShifts {
  template <int kBytes>
  static uint64_t Spread(uint64_t x) {
    uint64_t w = x;
    for (int k = 1; k < kBytes; ++k) w += (x & ~((uint64_t{1} << (7 * k)) - 1)) << (k - 1);
    return w;
  }
};

#if defined(__x86_64__)
// The same by one pdep. Inline assembly rather than _pdep_u64, which needs
// the caller compiled for BMI2; this runs only where the CPU has it.
struct ByPdep {
  template <int kBytes>
  static uint64_t Spread(uint64_t x) {
    uint64_t w;
    asm("pdep %2, %1, %0" : "=r"(w) : "r"(x), "r"(uint64_t{0x7F7F7F7F7F7F7F7F}));
    return w;
  }
};
#endif

// v[0..n), each below 2^(7 * kBytes), no branch per value: its groups
// spread, the continuation bits of its length or'ed in, 8 bytes stored and
// the pointer moved by the length. The loop is bound by its instruction
// count (range_encode_bench), so the length is what costs least for the
// column's longest value: up to four bytes, compares (no bsr, which shares
// the one port that runs pdep); longer, a table by the top bit.
template <int kBytes, typename Spreader>
char* PutUpTo(char* p, const uint64_t* v, size_t n) {
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = v[i];
    size_t length = 1;
    if constexpr (kBytes <= 4) {
      for (int k = 1; k < kBytes; ++k) length += x >= (uint64_t{1} << (7 * k));
    } else {
      // The top set bit (bsr; GCC's __bsrq is not in clang, the fuzz build's).
      length = kLengthByTop.length[63 - __builtin_clzll(x | 1)];
    }
    const uint64_t w = Spreader::template Spread<kBytes>(x) | kContinuation[length];
    std::memcpy(p, &w, 8);
    p += length;
  }
  return p;
}

#if defined(__x86_64__)
#define TRACER_SSSE3 __attribute__((target("ssse3")))

// Byte shuffles that pack the varints of a step's values, built in 16-bit
// (two-byte columns, 8 values a step) or 32-bit lanes (three- and four-byte
// columns, 4 values a step), by the lengths of the step's values: value k's
// bytes first, at its lane, then the next's.
struct ShuffleTables {
  struct Step {
    uint8_t shuffle[16];
  };
  Step two[256];            // by a bit per value: two bytes
  uint8_t two_length[256];  // bytes of the step
  Step three[256];          // by bits 0-3: two bytes or more, bits 4-7: three
  uint8_t three_length[256];
  Step four[256];  // by bits 0-3 and 4-7: the low and high bit of the value's length - 1
  uint8_t four_length[256];
};
constexpr ShuffleTables kShuffles = [] {
  ShuffleTables t{};
  for (int m = 0; m < 256; ++m) {
    int at = 0;
    for (int k = 0; k < 8; ++k) {
      for (int b = 0; b < 1 + (m >> k & 1); ++b)
        t.two[m].shuffle[at++] = static_cast<uint8_t>(2 * k + b);
    }
    t.two_length[m] = static_cast<uint8_t>(at);
    for (int b = at; b < 16; ++b) t.two[m].shuffle[b] = 0x80;
    at = 0;
    for (int k = 0; k < 4; ++k) {
      const int length = 1 + (m >> k & 1) + (m >> (k + 4) & 1);
      for (int b = 0; b < length; ++b) t.three[m].shuffle[at++] = static_cast<uint8_t>(4 * k + b);
    }
    t.three_length[m] = static_cast<uint8_t>(at);
    for (int b = at; b < 16; ++b) t.three[m].shuffle[b] = 0x80;
    at = 0;
    for (int k = 0; k < 4; ++k) {
      const int length = 1 + (m >> k & 1) + 2 * (m >> (k + 4) & 1);
      for (int b = 0; b < length; ++b) t.four[m].shuffle[at++] = static_cast<uint8_t>(4 * k + b);
    }
    t.four_length[m] = static_cast<uint8_t>(at);
    for (int b = at; b < 16; ++b) t.four[m].shuffle[b] = 0x80;
  }
  return t;
}();

// Stores w's bytes packed by one of the tables' shuffles (16 bytes written,
// `length` of them the step's varints) and returns the end of the step.
TRACER_SSSE3 inline char* StoreShuffled(char* p, __m128i w, const ShuffleTables::Step& step,
                                        uint8_t length) {
  _mm_storeu_si128(
      reinterpret_cast<__m128i*>(p),
      _mm_shuffle_epi8(w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(step.shuffle))));
  return p + length;
}

// v[0..n), each below 2^14: 8 values a step in 16-bit lanes, each lane
// its varint's two bytes (the second 0 for a one-byte value), packed by a
// shuffle and stored as 16 bytes, the pointer moved by their length: no
// branch or store per value.
TRACER_SSSE3 char* PutTwoShuffled(char* p, const uint64_t* v, size_t n) {
  const auto* q = reinterpret_cast<const __m128i*>(v);
  size_t i = 0;
  for (; i + 8 <= n; i += 8, q += 4) {
    // The 64-bit lanes' low halves, twice packed to 16 bits (their high
    // halves are 0 and the values fit, so each stays whole).
    const __m128i x =
        _mm_packs_epi32(_mm_packs_epi32(_mm_loadu_si128(q), _mm_loadu_si128(q + 1)),
                        _mm_packs_epi32(_mm_loadu_si128(q + 2), _mm_loadu_si128(q + 3)));
    const __m128i two = _mm_cmpgt_epi16(x, _mm_set1_epi16(0x7F));
    // x + (x & 0x3F80) moves bits 7-13 up to the second byte.
    const __m128i w = _mm_or_si128(_mm_add_epi16(x, _mm_and_si128(x, _mm_set1_epi16(0x3F80))),
                                   _mm_and_si128(two, _mm_set1_epi16(0x80)));
    const auto m = static_cast<unsigned>(_mm_movemask_epi8(_mm_packs_epi16(two, two))) & 0xFF;
    p = StoreShuffled(p, w, kShuffles.two[m], kShuffles.two_length[m]);
  }
  return PutUpTo<2, ByShifts>(p, v + i, n - i);
}

// The low halves of the four 64-bit lanes at q and q + 1.
TRACER_SSSE3 inline __m128i LowHalves(const __m128i* q) {
  return _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(_mm_loadu_si128(q)),
                                         _mm_castsi128_ps(_mm_loadu_si128(q + 1)),
                                         _MM_SHUFFLE(2, 0, 2, 0)));
}

// As ByShifts, in 32-bit lanes: bits 7-13 of x up by one, 14-20 by two.
TRACER_SSSE3 inline __m128i SpreadThree(__m128i x) {
  const __m128i w = _mm_add_epi32(x, _mm_and_si128(x, _mm_set1_epi32(~0x7F)));
  return _mm_add_epi32(w, _mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(~0x3FFF)), 1));
}

// v[0..n), each below 2^21 (kBytes 3) or 2^28 (kBytes 4): the same with 4
// values a step in 32-bit lanes; for four bytes the lengths (1 to 4) are
// two bits a value.
template <int kBytes>
TRACER_SSSE3 char* PutLanesShuffled(char* p, const uint64_t* v, size_t n) {
  static_assert(kBytes == 3 || kBytes == 4);
  const auto* q = reinterpret_cast<const __m128i*>(v);
  size_t i = 0;
  for (; i + 4 <= n; i += 4, q += 2) {
    const __m128i x = LowHalves(q);
    const __m128i two = _mm_cmpgt_epi32(x, _mm_set1_epi32(0x7F));
    const __m128i three = _mm_cmpgt_epi32(x, _mm_set1_epi32(0x3FFF));
    __m128i w = SpreadThree(x);
    __m128i continuation = _mm_or_si128(_mm_and_si128(two, _mm_set1_epi32(0x80)),
                                        _mm_and_si128(three, _mm_set1_epi32(0x8000)));
    unsigned m;
    if constexpr (kBytes == 3) {
      m = static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(two)) |
                                _mm_movemask_ps(_mm_castsi128_ps(three)) << 4);
    } else {
      const __m128i four = _mm_cmpgt_epi32(x, _mm_set1_epi32(0x1FFFFF));
      // Bits 21-27 up by three.
      w = _mm_add_epi32(w, _mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(~0x1FFFFF)), 2));
      continuation = _mm_or_si128(continuation, _mm_and_si128(four, _mm_set1_epi32(0x800000)));
      // Length - 1 (each compare is -1 where it holds), its bits to the mask.
      const __m128i extra =
          _mm_sub_epi32(_mm_setzero_si128(), _mm_add_epi32(_mm_add_epi32(two, three), four));
      m = static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_slli_epi32(extra, 31))) |
                                _mm_movemask_ps(_mm_castsi128_ps(_mm_slli_epi32(extra, 30))) << 4);
    }
    w = _mm_or_si128(w, continuation);
    if constexpr (kBytes == 3) {
      p = StoreShuffled(p, w, kShuffles.three[m], kShuffles.three_length[m]);
    } else {
      p = StoreShuffled(p, w, kShuffles.four[m], kShuffles.four_length[m]);
    }
  }
  return PutUpTo<kBytes, ByShifts>(p, v + i, n - i);
}

#undef TRACER_SSSE3
#endif  // __x86_64__

// v[0..n), whose bitwise or is `any`: the loop for its longest varint.
// With shuffled: columns of up to four bytes by byte shuffles.
template <typename Spreader, bool kShuffled>
char* PutByLength(char* p, const uint64_t* v, size_t n, uint64_t any) {
  if (any < 0x80) return PutBytes(p, v, n);
  switch ((63 - __builtin_clzll(any)) / 7 + 1) {
    case 2:
#if defined(__x86_64__)
      if constexpr (kShuffled) return PutTwoShuffled(p, v, n);
#endif
      return PutUpTo<2, Spreader>(p, v, n);
    case 3:
#if defined(__x86_64__)
      if constexpr (kShuffled) return PutLanesShuffled<3>(p, v, n);
#endif
      return PutUpTo<3, Spreader>(p, v, n);
    case 4:
#if defined(__x86_64__)
      if constexpr (kShuffled) return PutLanesShuffled<4>(p, v, n);
#endif
      return PutUpTo<4, Spreader>(p, v, n);
    case 5:
      return PutUpTo<5, Spreader>(p, v, n);
    case 6:
      return PutUpTo<6, Spreader>(p, v, n);
    case 7:
      return PutUpTo<7, Spreader>(p, v, n);
    case 8:
      return PutUpTo<8, Spreader>(p, v, n);
  }
  return PutEach(p, v, n);  // 9 or 10 bytes
}

char* EncodeScalar(char* p, const uint64_t* v, size_t n) {
  return PutByLength<ByShifts, false>(p, v, n, AnyBits(v, n));
}

char* EncodePortable(char* p, const uint64_t* v, size_t n) {
  if (TheCpu().ssse3) return PutByLength<ByShifts, true>(p, v, n, AnyBits(v, n));
  return EncodeScalar(p, v, n);
}

#if defined(__x86_64__)

char* EncodePdep(char* p, const uint64_t* v, size_t n) {
  return PutByLength<ByPdep, true>(p, v, n, AnyBits(v, n));
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
    case VarintCodec::kScalar:
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
  if (codec == VarintCodec::kScalar) return EncodeScalar(p, v, n);
  return EncodePortable(p, v, n);
}

}  // namespace tracer
