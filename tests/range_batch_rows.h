// Test helper for readers that work on the generated protobuf classes
// (tests/capture, tests/cupti): the rows of a version-2 RangeBatch /
// MarkBatch as the version-1 Range / Mark messages they stand for, following
// proto/trace.proto (per-thread deltas, missing columns read as zeros),
// independently of the analysis library's reader.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "proto/trace.pb.h"

namespace tracer::testing {

template <typename Col>
uint64_t BatchCell(const Col& col, int i) {
  return i < col.size() ? static_cast<uint64_t>(col.Get(i)) : 0;
}

inline void SetBatchPayload(uint64_t kind, uint64_t bits, proto::Payload* p) {
  if (kind == proto::PAYLOAD_U64) p->set_u64(bits);
  if (kind == proto::PAYLOAD_I64) p->set_i64(static_cast<int64_t>(bits));
  if (kind == proto::PAYLOAD_F64) {
    double d;
    static_assert(sizeof d == sizeof bits);
    __builtin_memcpy(&d, &bits, 8);
    p->set_f64(d);
  }
}

inline std::vector<proto::Range> RangeBatchRows(const proto::RangeBatch& b) {
  std::vector<proto::Range> out;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> previous;  // thread -> start, id
  for (int i = 0; i < b.thread_size(); ++i) {
    proto::Range r;
    const uint32_t thread = b.thread(i);
    auto& [start, id] = previous[thread];
    start += BatchCell(b.start_delta(), i);
    id += BatchCell(b.id_delta(), i);
    r.set_id(id);
    const uint64_t offset = BatchCell(b.parent_offset(), i);
    r.set_parent_id(offset == 0 ? 0 : id - offset);
    for (uint32_t row : b.self_parent_rows()) {
      if (row == static_cast<uint32_t>(i)) r.set_parent_id(id);
    }
    r.set_thread(thread);
    r.set_name(static_cast<uint32_t>(BatchCell(b.name(), i)));
    r.set_domain(static_cast<uint32_t>(BatchCell(b.domain(), i)));
    r.set_category(static_cast<uint32_t>(BatchCell(b.category(), i)));
    r.set_start_ns(start);
    r.set_end_ns(start + BatchCell(b.duration(), i));
    r.set_kind(static_cast<proto::RangeKind>(BatchCell(b.kind(), i)));
    r.set_depth(static_cast<uint32_t>(BatchCell(b.depth(), i)));
    r.set_end_thread(static_cast<uint32_t>(thread + BatchCell(b.end_thread_delta(), i)));
    r.set_flags(static_cast<uint32_t>(BatchCell(b.flags(), i)));
    r.set_color(static_cast<uint32_t>(BatchCell(b.color(), i)));
    const uint64_t kind = BatchCell(b.payload_kind(), i);
    if (kind != proto::PAYLOAD_NONE) {
      SetBatchPayload(kind, BatchCell(b.payload(), i), r.mutable_payload());
    }
    out.push_back(std::move(r));
  }
  return out;
}

inline std::vector<proto::Mark> MarkBatchRows(const proto::MarkBatch& b) {
  std::vector<proto::Mark> out;
  std::map<uint64_t, uint64_t> previous;  // thread -> time
  for (int i = 0; i < b.thread_size(); ++i) {
    proto::Mark m;
    const uint32_t thread = b.thread(i);
    m.set_time_ns(previous[thread] += BatchCell(b.time_delta(), i));
    m.set_thread(thread);
    m.set_name(static_cast<uint32_t>(BatchCell(b.name(), i)));
    m.set_domain(static_cast<uint32_t>(BatchCell(b.domain(), i)));
    m.set_category(static_cast<uint32_t>(BatchCell(b.category(), i)));
    m.set_color(static_cast<uint32_t>(BatchCell(b.color(), i)));
    const uint64_t kind = BatchCell(b.payload_kind(), i);
    if (kind != proto::PAYLOAD_NONE) {
      SetBatchPayload(kind, BatchCell(b.payload(), i), m.mutable_payload());
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Version-1 rows of a chunk, then its version-2 batch rows.
inline std::vector<proto::Range> AllRanges(const proto::Chunk& c) {
  std::vector<proto::Range> out(c.ranges().begin(), c.ranges().end());
  for (auto& r : RangeBatchRows(c.range_batch())) out.push_back(std::move(r));
  return out;
}
inline std::vector<proto::Mark> AllMarks(const proto::Chunk& c) {
  std::vector<proto::Mark> out(c.marks().begin(), c.marks().end());
  for (auto& m : MarkBatchRows(c.mark_batch())) out.push_back(std::move(m));
  return out;
}

}  // namespace tracer::testing
