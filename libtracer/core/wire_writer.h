// Minimal protobuf wire-format writer (the encoding rules of
// developers.google.com/protocol-buffers/docs/encoding), so the injected
// library emits trace.proto without linking libprotobuf (docs/design.md section 3:
// a PyTorch process carries its own protobuf). Appends to a std::string whose
// capacity is reused between chunks.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tracer::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline void AppendVarint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

// The same encodings into a caller's buffer, for records encoded once per
// event on the writer thread (ranges, marks): one append per record instead
// of two per field. The caller sizes the buffer (kMaxUintField per field).
inline constexpr size_t kMaxUintField = 2 + 10;  // tag (fields < 2048) + varint

inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Proto3 omits zero scalars (as AppendUint).
inline char* PutUint(char* p, uint32_t field, uint64_t v) {
  if (v == 0) return p;
  p = PutVarint(p, (static_cast<uint64_t>(field) << 3) | kVarint);
  return PutVarint(p, v);
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline void AppendTag(std::string* out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

// Proto3 omits default (zero) scalars; so do we, to keep records small.
inline void AppendUint(std::string* out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  AppendTag(out, field, kVarint);
  AppendVarint(out, v);
}

inline void AppendSint(std::string* out, uint32_t field, int64_t v) {
  if (v == 0) return;
  AppendTag(out, field, kVarint);
  AppendVarint(out, ZigZag(v));
}

inline void AppendInt32(std::string* out, uint32_t field, int32_t v) {
  if (v == 0) return;
  AppendTag(out, field, kVarint);
  // int32 negatives are sign-extended to 10 bytes on the wire.
  AppendVarint(out, static_cast<uint64_t>(static_cast<int64_t>(v)));
}

inline void AppendDouble(std::string* out, uint32_t field, double v) {
  if (v == 0) return;
  AppendTag(out, field, kFixed64);
  char buf[8];
  std::memcpy(buf, &v, 8);  // little-endian hosts only (x86_64, aarch64)
  out->append(buf, 8);
}

inline void AppendBytes(std::string* out, uint32_t field, std::string_view bytes) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, bytes.size());
  out->append(bytes.data(), bytes.size());
}

// Like AppendBytes but keeps empty strings / messages out of the output.
inline void AppendNonEmptyBytes(std::string* out, uint32_t field, std::string_view bytes) {
  if (!bytes.empty()) AppendBytes(out, field, bytes);
}

inline void AppendFixed32LE(std::string* out, uint32_t v) {
  char buf[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                 static_cast<char>(v >> 24)};
  out->append(buf, 4);
}

}  // namespace tracer::wire
