// CRC-32 of a frame payload (the zlib / IEEE 802.3 CRC, as crc32(0, ...)):
// the writer computes one per frame, and zlib's table-driven loop took about
// a fifth of the writer's encode time per range. On x86-64 CPUs with
// carry-less multiply (PCLMULQDQ) it folds 64 bytes per step (Intel,
// "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"); the
// head and tail that do not fill 16-byte blocks, and other CPUs, use zlib.
// The value is the same either way: the reader checks frames with zlib.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracer {

uint32_t FrameCrc32(const char* data, size_t size);

// Tests: the zlib path whatever the CPU, and whether FrameCrc32 folds.
uint32_t FrameCrc32Portable(const char* data, size_t size);
bool FrameCrc32UsesClmul();

}  // namespace tracer
