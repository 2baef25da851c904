#include "libtracer/core/varint_columns.h"

#include <algorithm>
#include <cstring>

namespace tracer {

VarintColumns::VarintColumns(size_t columns, bool keep_first_column, uint64_t dense_columns)
    : stage_(), count_(std::min(columns, kMaxColumns)), keep_first_(keep_first_column) {
  static const VarintCodec best = BestVarintCodec();
  codec_ = best;
  for (size_t c = 0; c < count_; ++c) {
    const bool dense = c < 64 && (dense_columns >> c & 1) != 0;
    columns_[c].dense = dense;
    columns_[c].any = dense;
    if (!dense) Reserve(&columns_[c], kRoomBytes);
  }
}

void VarintColumns::Grow(Column* col, size_t room) {
  const size_t used = static_cast<size_t>(col->at - col->data.get());
  const size_t capacity = static_cast<size_t>(col->end - col->data.get());
  const size_t grown = std::max<size_t>({capacity * 2, used + room, 4096});
  std::unique_ptr<char[]> data(new char[grown]);
  if (used > 0) std::memcpy(data.get(), col->data.get(), used);
  col->data = std::move(data);
  col->at = col->data.get() + used;
  col->end = col->data.get() + grown;
}

void VarintColumns::EncodeStaged() {
  const size_t n = staged_;
  for (size_t c = 0; c < count_; ++c) {
    Column& col = columns_[c];
    if (col.dense) {
      if (n == 0) continue;
      Reserve(&col, n * 10 + kVarintEncodeSlack);
      col.at = EncodeVarints(codec_, col.at, &stage_[c * kStageRows], n);
    } else if (col.any) {
      Reserve(&col, kRoomBytes);
    }
  }
  staged_ = 0;
}

void VarintColumns::Materialize(Column* col) {
  // One varint 0 (one byte) per earlier row.
  Reserve(col, rows_ + kRoomBytes);
  std::memset(col->at, 0, rows_);
  col->at += rows_;
  col->any = true;
  ++sparse_in_use_;
}

size_t VarintColumns::bytes() const {
  size_t n = 0;
  for (size_t c = 0; c < count_; ++c)
    n += static_cast<size_t>(columns_[c].at - columns_[c].data.get());
  // The staged rows as many bytes each as the encoded ones so far.
  const size_t encoded = rows_ - staged_;
  if (staged_ > 0) n += encoded > 0 ? n / encoded * staged_ : 16 * staged_;
  return n;
}

namespace {

// Whether a column of `rows` values holds only zeros: then it is `rows`
// one-byte varints 0.
bool AllZero(const char* data, size_t size, size_t rows) {
  if (size != rows) return false;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {  // a word at a time: once per column per batch
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    if (w != 0) return false;
  }
  for (; i < size; ++i) {
    if (data[i] != 0) return false;
  }
  return true;
}

}  // namespace

bool VarintColumns::Writes(size_t c) const {
  const Column& col = columns_[c];
  const size_t size = static_cast<size_t>(col.at - col.data.get());
  // The reader reads a missing column as zeros; the first one stays when
  // asked (written as zeros if need be), so that a batch of all-zero rows
  // still says how many it has.
  if (c == 0 && keep_first_ && rows_ > 0) return true;
  return size > 0 && (!col.dense || !AllZero(col.data.get(), size, rows_));
}

size_t VarintColumns::SerializedSize() {
  EncodeStaged();
  size_t n = 0;
  for (size_t c = 0; c < count_; ++c) {
    if (!Writes(c)) continue;
    const Column& col = columns_[c];
    const size_t size = col.any ? static_cast<size_t>(col.at - col.data.get()) : rows_;
    n += wire::VarintSize((static_cast<uint64_t>(c + 1) << 3) | wire::kLengthDelimited) +
         wire::VarintSize(size) + size;
  }
  return n;
}

void VarintColumns::SerializeAndClear(std::string* out) {
  EncodeStaged();
  for (size_t c = 0; c < count_; ++c) {
    Column& col = columns_[c];
    if (Writes(c)) {
      if (!col.any) Materialize(&col);  // the kept first column, all zero
      const size_t size = static_cast<size_t>(col.at - col.data.get());
      wire::AppendBytes(out, static_cast<uint32_t>(c + 1), std::string_view(col.data.get(), size));
    }
    col.at = col.data.get();
    col.any = col.dense;
  }
  rows_ = 0;
  sparse_in_use_ = 0;
}

}  // namespace tracer
