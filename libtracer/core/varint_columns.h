// Column store of a batch message whose columns are all packed varints
// (RangeBatch, MarkBatch of proto/trace.proto): each value is encoded into
// its column's buffer as it is added, so a row costs one short varint loop
// per column and serializing is one copy per column. Buffers keep their
// capacity across batches: a steady-state writer does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "libtracer/core/varint_encode.h"
#include "libtracer/core/wire_writer.h"

namespace tracer {

class VarintColumns {
 public:
  static constexpr size_t kMaxColumns = 16;
  // columns <= kMaxColumns (RangeBatch has 15). keep_first_column: column 0 is written even when
  // all zero, so a batch of all-zero rows still says how many rows it has. dense_columns: bit c set
  // = column c is usually non-zero (PutDense); the others are usually zero
  // (Put).
  VarintColumns(size_t columns, bool keep_first_column, uint64_t dense_columns = 0);

  // Appends v to dense column c. The value is only stored: the dense
  // columns are varint-encoded kStageRows rows at a time, a column at a
  // time, which costs less per value than encoding each as it comes (a
  // column of small values is a byte copy; one of two-byte values has no
  // branch per value; range_encode_bench). An all-zero dense column is
  // found, and left out, when serialized.
  void PutDense(size_t c, uint64_t v) { stage_[c * kStageRows + staged_] = v; }
  // Appends v to sparse column c (the caller puts every column of a row, in
  // any order, then calls EndRow).
  void Put(size_t c, uint64_t v) {
    Column& col = columns_[c];
    // A sparse column that is all zeros so far holds nothing: a skipped
    // column is a compare instead of a write. Its zeros are written when its
    // first other value comes.
    if (!col.any) {
      if (v == 0) return;
      Materialize(&col);
    }
    col.at = wire::PutVarint(col.at, v);
  }
  // Whether the sparse columns may all be left out of this row when its
  // values there are all 0: none of them holds anything yet.
  bool sparse_all_empty() const { return sparse_in_use_ == 0; }
  void EndRow() {
    ++rows_;
    // No room check in Put: every sparse column in use has room for the
    // rows up to the next EncodeStaged, which runs once per kStageRows rows.
    if (__builtin_expect(++staged_ == kStageRows, 0)) EncodeStaged();
  }

  size_t rows() const { return rows_; }
  // Bytes so far (the rows not yet encoded estimated).
  size_t bytes() const;
  // Bytes SerializeAndClear appends now (so a caller can write the
  // enclosing length first and serialize in place).
  size_t SerializedSize();
  // Appends column c as packed field c + 1, leaving out all-zero columns
  // (the reader reads a missing column as zeros) but the first one when
  // keep_first_column, and clears the batch.
  void SerializeAndClear(std::string* out);

  // The dense columns' encoder: BestVarintCodec() unless a test or bench
  // picks another this CPU runs (the bytes are the same).
  void set_codec(VarintCodec codec) { codec_ = codec; }
  VarintCodec codec() const { return codec_; }

 private:
  struct Column {
    char* at = nullptr;
    char* end = nullptr;
    std::unique_ptr<char[]> data;
    bool any = false;  // holds its rows' values (dense columns always)
    bool dense = false;
  };
  static constexpr size_t kStageRows = 64;
  static constexpr size_t kRoomBytes = kStageRows * 10;
  // Grows col until it has `room` bytes free.
  static void Reserve(Column* col, size_t room) {
    if (static_cast<size_t>(col->end - col->at) < room) Grow(col, room);
  }
  static void Grow(Column* col, size_t room);
  // Whether SerializeAndClear writes column c (see there).
  bool Writes(size_t c) const;
  // Encodes the staged rows into their dense columns and gives every
  // sparse column in use kRoomBytes free.
  void EncodeStaged();
  // Writes the zeros of the rows before this one into an all-zero sparse
  // column, with room for the rows up to the next EncodeStaged.
  void Materialize(Column* col);

  // In the object, not behind a pointer: a Put's write through char* could
  // alias a pointer member, which the compiler would then reload per value.
  Column columns_[kMaxColumns];
  // Dense values of the rows not yet encoded, column-major: kStageRows
  // slots per column. A 32-bit count, so that a store of a uint64_t value
  // cannot alias it and PutDense does not read it again after each.
  uint64_t stage_[kMaxColumns * kStageRows];
  uint32_t staged_ = 0;
  size_t count_;
  bool keep_first_;
  VarintCodec codec_;
  size_t rows_ = 0;
  size_t sparse_in_use_ = 0;  // sparse columns holding values in this batch
};

// Delta state per thread id for the `*_delta` columns of RangeBatch and
// MarkBatch: the previous row's values of the same thread in this batch, 0
// for a thread's first row. Shared by the writer and the reader so both
// apply the same rule. Small ids (the writer hands them out from 1) index a
// table; others (a foreign or broken writer) go to a map.
class PerThreadPrevious {
 public:
  static constexpr size_t kValues = 2;
  // The previous values of thread's rows in the current batch, to update.
  uint64_t* Of(uint64_t thread) {
    if (thread == last_thread_) return last_->values;
    Slot* s = thread < kDirect ? &direct_[thread] : &others_[thread];
    if (s->generation != generation_) {
      s->generation = generation_;
      for (auto& v : s->values) v = 0;
    }
    last_thread_ = thread;
    last_ = s;
    return s->values;
  }
  // Starts a new batch: every thread's previous values are 0 again.
  void NewBatch() {
    ++generation_;
    last_thread_ = ~uint64_t{0};
    others_.clear();
  }

 private:
  struct Slot {
    uint64_t generation = 0;
    uint64_t values[kValues] = {};
  };
  static constexpr size_t kDirect = 1024;
  std::unique_ptr<Slot[]> direct_{new Slot[kDirect]};
  std::unordered_map<uint64_t, Slot> others_;
  uint64_t generation_ = 1;
  uint64_t last_thread_ = ~uint64_t{0};
  Slot* last_ = nullptr;
};

}  // namespace tracer
