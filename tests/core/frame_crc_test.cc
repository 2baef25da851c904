// FrameCrc32 (the writer's frame checksum) equals zlib's crc32, which the
// reader checks frames with, for every length and alignment around the
// folding path's edges (64 bytes, 16-byte blocks, tails) and large frames.
#include "libtracer/core/frame_crc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>

namespace tracer {
namespace {

uint32_t Zlib(const char* p, size_t n) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

TEST(FrameCrcTest, EqualsZlibForEveryLengthAndAlignment) {
  std::mt19937_64 rng(13);
  std::string buf(4096 + 64, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 17; ++offset) {
    for (size_t n = 0; n <= 600; ++n) {
      ASSERT_EQ(FrameCrc32(buf.data() + offset, n), Zlib(buf.data() + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
  for (size_t n : {1023u, 1024u, 1040u, 4095u, 4096u}) {
    EXPECT_EQ(FrameCrc32(buf.data() + 3, n), Zlib(buf.data() + 3, n)) << n;
  }
  EXPECT_EQ(FrameCrc32Portable(buf.data(), 777), Zlib(buf.data(), 777));
}

TEST(FrameCrcTest, KnownValuesAndLargeFrames) {
  // The check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(FrameCrc32("123456789", 9), 0xCBF43926u);
  const std::string zeros(1 << 20, '\0');
  EXPECT_EQ(FrameCrc32(zeros.data(), zeros.size()), Zlib(zeros.data(), zeros.size()));
  std::string ones(3 << 20, '\xff');
  ones[12345] = 7;
  EXPECT_EQ(FrameCrc32(ones.data(), ones.size()), Zlib(ones.data(), ones.size()));
  // A single flipped bit anywhere changes it.
  std::string a(5000, 'a'), b = a;
  b[4321] ^= 0x10;
  EXPECT_NE(FrameCrc32(a.data(), a.size()), FrameCrc32(b.data(), b.size()));
}

TEST(FrameCrcTest, SaysWhichPathItTakes) {
#if defined(__x86_64__)
  // The build machines have PCLMULQDQ; a CPU without it takes the zlib path,
  // which the test above covers either way.
  if (!FrameCrc32UsesClmul()) GTEST_SKIP() << "no PCLMULQDQ on this CPU";
  EXPECT_TRUE(FrameCrc32UsesClmul());
#else
  EXPECT_FALSE(FrameCrc32UsesClmul());
#endif
}

}  // namespace
}  // namespace tracer
