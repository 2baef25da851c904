// EncodeVarints (the dense range and mark columns' encoder) writes what
// the one-value-at-a-time protobuf encoder writes, with every codec this
// CPU runs: at every varint length boundary, for every column length
// around the codecs' steps (8 and 16 values) and tails, for columns whose
// values pick each of its loops (all one byte, up to two bytes, up to 2^56,
// beyond), and never past 10 bytes a value plus kVarintEncodeSlack.
#include "libtracer/core/varint_encode.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "libtracer/core/wire_writer.h"

namespace tracer {
namespace {

const char* Name(VarintCodec codec) {
  switch (codec) {
    case VarintCodec::kPortable:
      return "portable";
    case VarintCodec::kPdep:
      return "pdep";
    case VarintCodec::kAvx512:
      return "avx512";
  }
  return "?";
}

std::vector<VarintCodec> Supported() {
  std::vector<VarintCodec> codecs;
  for (VarintCodec c : {VarintCodec::kPortable, VarintCodec::kPdep, VarintCodec::kAvx512}) {
    if (VarintCodecSupported(c)) codecs.push_back(c);
  }
  return codecs;
}

std::string Reference(const std::vector<uint64_t>& v) {
  std::string out;
  for (uint64_t x : v) wire::AppendVarint(&out, x);
  return out;
}

// The codec's bytes for v, checked not to write past its room: the buffer
// beyond 10 * n + kVarintEncodeSlack is a guard that must stay as filled.
std::string Encode(VarintCodec codec, const std::vector<uint64_t>& v) {
  const size_t room = 10 * v.size() + kVarintEncodeSlack;
  std::string buffer(room + 64, '\x5a');
  char* end = EncodeVarints(codec, buffer.data(), v.data(), v.size());
  EXPECT_EQ(buffer.substr(room), std::string(64, '\x5a')) << "wrote past its room";
  return std::string(buffer.data(), static_cast<size_t>(end - buffer.data()));
}

TEST(VarintEncodeTest, EveryLengthBoundaryWithEveryCodec) {
  std::vector<uint64_t> v = {0, 1, ~uint64_t{0}, uint64_t{1} << 63};
  for (int bits = 7; bits < 64; bits += 7) {
    v.push_back((uint64_t{1} << bits) - 1);
    v.push_back(uint64_t{1} << bits);
  }
  for (VarintCodec codec : Supported()) {
    SCOPED_TRACE(Name(codec));
    for (uint64_t x : v) EXPECT_EQ(Encode(codec, {x}), Reference({x})) << x;
    EXPECT_EQ(Encode(codec, v), Reference(v));
  }
}

TEST(VarintEncodeTest, ColumnsOfEachKindAndLengthMatchTheReference) {
  std::mt19937_64 rng(13);
  // Largest value of a column: one byte, two (the portable branch-free
  // loop), below 2^56 (pdep, AVX-512), any (the byte loop for all).
  const uint64_t limits[] = {0, 0x7F, 0x3FFF, (uint64_t{1} << 56) - 1, ~uint64_t{0}};
  for (VarintCodec codec : Supported()) {
    SCOPED_TRACE(Name(codec));
    for (uint64_t limit : limits) {
      for (size_t n = 0; n <= 80; ++n) {
        std::vector<uint64_t> v(n);
        for (uint64_t& x : v) {
          // Values of every length up to the limit, not only long ones.
          const int shift = static_cast<int>(rng() % 64);
          x = (rng() >> shift) & limit;
        }
        if (n > 0 && limit != 0) v[rng() % n] = limit;  // the limit itself somewhere
        ASSERT_EQ(Encode(codec, v), Reference(v)) << "limit " << limit << " n " << n;
      }
    }
  }
}

TEST(VarintEncodeTest, PortableAlwaysRunsAndTheBestIsSupported) {
  EXPECT_TRUE(VarintCodecSupported(VarintCodec::kPortable));
  EXPECT_TRUE(VarintCodecSupported(BestVarintCodec()));
  // Which one the writer uses here, for whoever reads the test log.
  std::printf("best varint codec on this CPU: %s\n", Name(BestVarintCodec()));
}

}  // namespace
}  // namespace tracer
