// Accumulates records and serializes them as one framed `Chunk` of
// proto/trace.proto (see the FILE LAYOUT comment there). Used by the capture
// writer thread and by `tracer import`; never on an application thread.
// Buffers keep their capacity across chunks, so a steady-state writer does not
// allocate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/core/records.h"
#include "libtracer/core/varint_columns.h"
#include "libtracer/core/wire_writer.h"

namespace tracer {

// File magic, "TRACER\0\1".
inline constexpr char kTraceMagic[8] = {'T', 'R', 'A', 'C', 'E', 'R', '\0', '\1'};
inline constexpr uint32_t kMaxFramePayload = 64u << 20;
// The capture writer cuts a frame once ApproximateBytes() reaches this, so a
// reader never needs huge frames and a crash loses at most this much of what
// was drained.
inline constexpr size_t kWriterFrameBytes = size_t{1} << 20;

// One column-batch message (KernelBatch, ApiBatch, ...): columns of integers
// that are either plain varints or zigzag deltas against the previous row.
class ColumnBatch {
 public:
  enum class Encoding : uint8_t { kPlain, kDelta };
  explicit ColumnBatch(std::vector<Encoding> encodings);

  // values must have one entry per column.
  void AddRow(const uint64_t* values);
  size_t rows() const { return rows_; }
  // Appends the batch's fields (not the enclosing tag) to out and clears it.
  void SerializeAndClear(std::string* out);

 private:
  std::vector<Encoding> encodings_;
  // Row-major cells (rows_ x columns): one contiguous append per row; the
  // columns are gathered when serialized. Its size is the capacity in use
  // (rows_ x columns are valid), kept across chunks.
  std::vector<uint64_t> cells_;
  std::vector<uint64_t> previous_;
  std::string scratch_;
  size_t rows_ = 0;
};

class ChunkBuilder {
 public:
  ChunkBuilder();

  void SetHeader(const HeaderInfo& header);
  void SetFooter(const FooterInfo& footer);

  void AddString(uint32_t id, std::string_view value);
  void AddThread(const ThreadDefRecord& r);
  void AddStream(const StreamDefRecord& r);
  void AddLaunchConfig(const LaunchConfigRecord& r);
  void AddDomain(const DomainDefRecord& r);
  void AddCategory(const CategoryDefRecord& r);

  // Inline: the capture writer adds one per NVTX range, and the call's
  // register saves and restores were a tenth of its cost
  // (range_encode_bench). The usual row is nine stores into the dense
  // columns' stage; the rest is out of line.
  __attribute__((always_inline)) void AddRange(const RangeRecord& r) {
    const uint64_t id = Scalar(r.id), parent_id = Scalar(r.parent_id);
    const uint64_t start = Scalar(r.start_ns), end = Scalar(r.end_ns);
    const uint32_t thread = r.thread;
    uint64_t* previous = range_previous_.Of(thread);
    const uint64_t parent_offset = id - parent_id;
    if (__builtin_expect(parent_offset == 0, 0) && parent_id != 0) AddSelfParentRow();
    ranges_.PutDense(kRangeThread, thread);
    ranges_.PutDense(kRangeStartDelta, wire::ZigZag(static_cast<int64_t>(start - previous[0])));
    ranges_.PutDense(kRangeDuration, end - start);
    ranges_.PutDense(kRangeIdDelta, wire::ZigZag(static_cast<int64_t>(id - previous[1])));
    ranges_.PutDense(kRangeParentOffset, parent_id != 0 ? parent_offset : 0);
    ranges_.PutDense(kRangeName, r.name);
    ranges_.PutDense(kRangeDomain, r.domain);
    ranges_.PutDense(kRangeDepth, r.depth);
    ranges_.PutDense(kRangeColor, r.color);
    previous[0] = start;
    previous[1] = id;
    // The rarely set fields: one test for the row when they are all 0 and
    // none of their columns holds anything yet (push/pop ranges, mostly).
    // A push/pop range with end_thread 0 (as the capture decoder leaves
    // it) ends on its own thread: AddRareRangeFields.
    const bool own_end_thread =
        r.end_thread == thread || (r.end_thread == 0 && r.kind == RangeKind::kPushPop);
    if (__builtin_expect((r.category | static_cast<uint32_t>(r.kind) | r.flags |
                          static_cast<uint32_t>(r.payload.type)) != 0 ||
                             !own_end_thread || !ranges_.sparse_all_empty(),
                         0)) {
      AddRareRangeFields(r);
    }
    ranges_.EndRow();
    ++items_;
  }
  void AddMark(const MarkRecord& r);
  void AddKernel(const KernelRecord& r);
  void AddMemcpy(const MemcpyRecord& r);
  void AddMemset(const MemsetRecord& r);
  void AddApi(const ApiRecord& r);
  void AddLaunch(const LaunchRecord& r);
  void AddSync(const SyncRecord& r);
  void AddOverhead(const OverheadRecord& r);
  void AddGraphNode(const GraphNodeSnapshotRecord& r);
  void AddGraphLaunch(const GraphLaunchRecord& r);
  void AddPmSample(const PmSampleRecord& r);
  void AddCounterDelta(std::string_view name, uint64_t delta);

  // Records added since the last frame (definitions and counters included).
  size_t pending_items() const { return items_; }
  // Rough payload size so far, to decide when to cut a chunk.
  size_t ApproximateBytes() const;

  // Test and bench hook: the range and mark columns' varint encoder
  // (VarintColumns::set_codec; this CPU must run it).
  void set_varint_codec(VarintCodec codec) {
    ranges_.set_codec(codec);
    marks_.set_codec(codec);
  }

  // Appends magic-less frame bytes (length, CRC-32, payload) to out and
  // resets the builder for the next chunk. Does nothing when empty.
  void FinishFrame(std::string* out);

 private:
  // A record's field read on its own. The capture decoder has just written
  // the record field by field (end_ns last, at the pop); GCC otherwise reads
  // start_ns and end_ns (and id, parent_id) as one 16-byte load, which
  // cannot be forwarded from the two 8-byte stores and waits for them to
  // reach the cache: a fifth of Writer::Range (writer_drain_bench).
  static uint64_t Scalar(const uint64_t& field) {
    uint64_t v = field;
    asm("" : "+r"(v));
    return v;
  }
  // RangeBatch columns (field number - 1; checked in chunk_builder.cc).
  enum RangeColumn : size_t {
    kRangeThread = 0,
    kRangeStartDelta = 1,
    kRangeDuration = 2,
    kRangeIdDelta = 3,
    kRangeParentOffset = 4,
    kRangeName = 5,
    kRangeDomain = 6,
    kRangeDepth = 9,
    kRangeColor = 12,
  };
  // AddRange's rare parts: a row whose parent id is its own id, and the
  // sparse columns of a row.
  void AddSelfParentRow();
  void AddRareRangeFields(const RangeRecord& r);
  // Appends a GraphRef (field `field` of its batch) when the row has ids.
  void AppendGraphRef(std::string* out, uint32_t field, size_t row, uint64_t graph_id,
                      uint64_t graph_node_id);

  // Row-based repeated messages, one buffer per Chunk field, already holding
  // their own tag+length framing.
  std::string header_, footer_;
  std::string defs_[8];   // index = Chunk field number (2..7)
  std::string rows_[32];  // index = Chunk field number (10..30)
  ColumnBatch kernels_, memcpys_, memsets_, apis_, launches_;
  // RangeBatch / MarkBatch: encoded as added (the writer adds one per NVTX
  // event), deltas per thread.
  VarintColumns ranges_, marks_;
  PerThreadPrevious range_previous_, mark_previous_;
  std::string self_parent_rows_;  // RangeBatch.self_parent_rows, packed
  std::vector<uint32_t> kernel_graph_rows_;
  std::string kernel_graph_refs_, memcpy_graph_refs_, memset_graph_refs_;
  std::string scratch_, payload_;
  size_t items_ = 0;
};

// Appends the 8-byte file magic.
void AppendFileMagic(std::string* out);

}  // namespace tracer
