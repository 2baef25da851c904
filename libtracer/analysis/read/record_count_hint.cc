#include "libtracer/analysis/read/record_count_hint.h"

#include <algorithm>
#include <cstdint>

#include "libtracer/core/trace_fields.h"

namespace tracer::analysis {
namespace {

bool ReadVarint(std::string_view s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Walks the fields of a message; calls f(field, wire_type, bytes) for
// length-delimited fields and f(field, wire_type, {}) for the others.
template <typename F>
void ForEachField(std::string_view s, F&& f) {
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t key, v;
    if (!ReadVarint(s, &pos, &key)) return;
    const uint32_t field = static_cast<uint32_t>(key >> 3);
    switch (key & 7) {
      case 0:
        if (!ReadVarint(s, &pos, &v)) return;
        f(field, 0, std::string_view());
        break;
      case 1:
        pos += 8;
        f(field, 1, std::string_view());
        break;
      case 2:
        if (!ReadVarint(s, &pos, &v) || v > s.size() - std::min(pos, s.size())) return;
        f(field, 2, s.substr(pos, v));
        pos += v;
        break;
      case 5:
        pos += 4;
        f(field, 5, std::string_view());
        break;
      default:
        return;
    }
  }
}

// Rows of a column batch: the longest packed column (all non-empty columns
// have the same length; an all-zero column is left out).
size_t BatchRows(std::string_view batch) {
  size_t rows = 0;
  ForEachField(batch, [&](uint32_t field, int wire, std::string_view bytes) {
    if (wire != 2) return;
    size_t n = 0;
    for (char c : bytes) n += (static_cast<uint8_t>(c) & 0x80) == 0;
    rows = std::max(rows, n);
  });
  return rows;
}

}  // namespace

void AddRecordCountHint(std::string_view payload, RecordCountHint* hint) {
  ForEachField(payload, [&](uint32_t field, int wire, std::string_view bytes) {
    if (wire != 2) return;
    using C = fields::Chunk;
    switch (field) {
      case C::kRanges:
        ++hint->ranges;
        break;
      case C::kRangeBatch:
        hint->ranges += BatchRows(bytes);
        break;
      case C::kKernels:
        hint->kernels += BatchRows(bytes);
        break;
      case C::kMemcpys:
        hint->memcpys += BatchRows(bytes);
        break;
      case C::kMemsets:
        hint->memsets += BatchRows(bytes);
        break;
      case C::kApiCalls:
        hint->api_calls += BatchRows(bytes);
        break;
      case C::kLaunches:
        hint->launches += BatchRows(bytes);
        break;
      default:
        break;
    }
  });
}

}  // namespace tracer::analysis
