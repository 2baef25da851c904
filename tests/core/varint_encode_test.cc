// EncodeVarints (the dense range and mark columns' encoder) writes what
// the one-value-at-a-time protobuf encoder writes, with every codec this
// CPU runs: at every varint length boundary, for every column length
// around the codecs' steps (8 and 16 values) and tails, for columns whose
// values pick each of its loops (all one byte, up to each length from two
// to eight bytes, beyond), and never past 10 bytes a value plus kVarintEncodeSlack.
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
    case VarintCodec::kScalar:
      return "scalar";
  }
  return "?";
}

std::vector<VarintCodec> Supported() {
  std::vector<VarintCodec> codecs;
  for (VarintCodec c :
       {VarintCodec::kPortable, VarintCodec::kPdep, VarintCodec::kAvx512, VarintCodec::kScalar}) {
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
  // Largest value of a column: one byte, each length from two to eight
  // bytes (the portable and pdep loops by longest length; AVX-512 below
  // 2^56), any (the byte loop for all).
  std::vector<uint64_t> limits = {0, ~uint64_t{0}};
  for (int bits = 7; bits <= 56; bits += 7) limits.push_back((uint64_t{1} << bits) - 1);
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

// The byte-shuffle loops pack a step of 8 values of up to two bytes, or 4
// of up to three or four, by a table entry per mix of lengths in the step: a column
// with every mix, at every offset of the steps (a tail of scalar values).
TEST(VarintEncodeTest, EveryMixOfLengthsInAStepMatchesTheReference) {
  std::vector<uint64_t> two, three, four;
  for (unsigned mix = 0; mix < 256; ++mix) {
    for (unsigned k = 0; k < 8; ++k) two.push_back((mix >> k & 1) != 0 ? 0x80 + 37 * k : k);
  }
  const uint64_t by_length[] = {0x45, 0x1234, 0x12345};
  for (unsigned mix = 0; mix < 81; ++mix) {
    for (unsigned k = 0, m = mix; k < 4; ++k, m /= 3) three.push_back(by_length[m % 3] + k);
  }
  const uint64_t by_length_four[] = {0x45, 0x1234, 0x12345, 0x1234567};
  for (unsigned mix = 0; mix < 256; ++mix) {
    for (unsigned k = 0; k < 4; ++k) four.push_back(by_length_four[mix >> (2 * k) & 3] + k);
  }
  for (VarintCodec codec : Supported()) {
    SCOPED_TRACE(Name(codec));
    for (const std::vector<uint64_t>* column : {&two, &three, &four}) {
      for (size_t skip = 0; skip < 8; ++skip) {
        const std::vector<uint64_t> v(column->begin() + static_cast<long>(skip), column->end());
        ASSERT_EQ(Encode(codec, v), Reference(v)) << "skip " << skip;
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
