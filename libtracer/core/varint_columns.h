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

#include "libtracer/core/wire_writer.h"

namespace tracer {

class VarintColumns {
 public:
  // keep_first_column: column 0 is written even when all zero, so a batch of
  // all-zero rows still says how many rows it has.
  VarintColumns(size_t columns, bool keep_first_column);

  // Appends v to column c (the caller puts every column of a row, in any
  // order, then calls EndRow).
  void Put(size_t c, uint64_t v) {
    Column& col = columns_[c];
    // A column that is all zeros so far holds nothing: most rows leave most
    // optional fields 0, and a skipped column is a compare instead of a
    // write. Its zeros are written when its first other value comes.
    if (!col.any) {
      if (v == 0) return;
      Materialize(&col);
      col.any = true;
    }
    if (__builtin_expect(col.end - col.at < 10, 0)) Grow(&col);
    col.at = wire::PutVarint(col.at, v);
  }
  void EndRow() { ++rows_; }

  size_t rows() const { return rows_; }
  size_t bytes() const;
  // Appends column c as packed field c + 1, leaving out all-zero columns
  // (the reader reads a missing column as zeros) but the first one when
  // keep_first_column, and clears the batch.
  void SerializeAndClear(std::string* out);

 private:
  struct Column {
    std::unique_ptr<char[]> data;
    char* at = nullptr;
    char* end = nullptr;
    bool any = false;  // a value other than 0 so far; else nothing is written
  };
  void Grow(Column* col);
  // Writes the zeros of the rows before this one into an all-zero column.
  void Materialize(Column* col);

  std::unique_ptr<Column[]> columns_;
  size_t count_;
  bool keep_first_;
  size_t rows_ = 0;
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
