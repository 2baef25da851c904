#include "libtracer/core/varint_columns.h"

#include <algorithm>
#include <cstring>

namespace tracer {

VarintColumns::VarintColumns(size_t columns, bool keep_first_column)
    : columns_(new Column[columns]), count_(columns), keep_first_(keep_first_column) {}

void VarintColumns::Grow(Column* col) {
  const size_t used = static_cast<size_t>(col->at - col->data.get());
  const size_t capacity = static_cast<size_t>(col->end - col->data.get());
  const size_t grown = std::max<size_t>(capacity * 2, 4096);
  std::unique_ptr<char[]> data(new char[grown]);
  if (used > 0) std::memcpy(data.get(), col->data.get(), used);
  col->data = std::move(data);
  col->at = col->data.get() + used;
  col->end = col->data.get() + grown;
}

void VarintColumns::Materialize(Column* col) {
  // One varint 0 (one byte) per earlier row, then room for this value.
  while (static_cast<size_t>(col->end - col->at) < rows_ + 10) Grow(col);
  std::memset(col->at, 0, rows_);
  col->at += rows_;
}

size_t VarintColumns::bytes() const {
  size_t n = 0;
  for (size_t c = 0; c < count_; ++c)
    n += static_cast<size_t>(columns_[c].at - columns_[c].data.get());
  return n;
}

void VarintColumns::SerializeAndClear(std::string* out) {
  for (size_t c = 0; c < count_; ++c) {
    Column& col = columns_[c];
    if (!col.any && c == 0 && keep_first_ && rows_ > 0) Materialize(&col);
    if (col.at != col.data.get()) {
      wire::AppendBytes(
          out, static_cast<uint32_t>(c + 1),
          std::string_view(col.data.get(), static_cast<size_t>(col.at - col.data.get())));
    }
    col.at = col.data.get();
    col.any = false;
  }
  rows_ = 0;
}

}  // namespace tracer
