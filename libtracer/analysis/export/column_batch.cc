#include "libtracer/analysis/export/column_batch.h"

#include <cstring>
#include <limits>
#include <utility>

namespace tracer::analysis::exporters {
namespace {

constexpr char kBatchMagic[4] = {'T', 'P', 'Q', 'B'};
constexpr char kEndMagic[4] = {'T', 'P', 'Q', 'E'};
constexpr uint32_t kFramingVersion = 1;

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // the host is little endian (x86-64, aarch64)
  out->append(bytes, sizeof(T));
}

void PutName(std::string* out, std::string_view s) {
  Put<uint16_t>(out, static_cast<uint16_t>(s.size()));
  out->append(s);
}

}  // namespace

ColumnBatch::ColumnBatch(std::string table, int64_t rank, uint32_t process)
    : table_(std::move(table)), rank_(rank), process_(process) {}

size_t ColumnBatch::AddColumn(std::string name, Type type, bool nullable) {
  columns_.push_back({std::move(name), type, nullable, {}, {}, {}});
  if (type == Type::kString) columns_.back().offsets.push_back(0);
  return columns_.size() - 1;
}

void ColumnBatch::MarkValid(Column& c, bool valid) {
  if (!c.nullable) return;
  const size_t row = rows_;
  if (row / 8 >= c.valid.size()) c.valid.push_back(0);
  if (valid) c.valid[row / 8] |= static_cast<uint8_t>(1u << (row % 8));
}

void ColumnBatch::Int(size_t column, int64_t v) {
  Column& c = columns_[column];
  MarkValid(c, true);
  Put(&c.data, v);
}

void ColumnBatch::Float(size_t column, double v) {
  Column& c = columns_[column];
  MarkValid(c, true);
  Put(&c.data, v);
}

void ColumnBatch::Bool(size_t column, bool v) {
  Column& c = columns_[column];
  MarkValid(c, true);
  c.data.push_back(v ? 1 : 0);
}

void ColumnBatch::Str(size_t column, std::string_view v) {
  Column& c = columns_[column];
  MarkValid(c, true);
  c.data.append(v);
  c.offsets.push_back(static_cast<int32_t>(c.data.size()));
}

void ColumnBatch::Null(size_t column) {
  Column& c = columns_[column];
  MarkValid(c, false);
  switch (c.type) {
    case Type::kString:
      c.offsets.push_back(static_cast<int32_t>(c.data.size()));
      break;
    case Type::kBool:
      c.data.push_back(0);
      break;
    default:
      c.data.append(8, '\0');
  }
}

bool ColumnBatch::Flush(std::FILE* out) {
  if (rows_ == 0) return true;
  std::string frame;
  frame.append(kBatchMagic, 4);
  Put<uint32_t>(&frame, kFramingVersion);
  PutName(&frame, table_);
  Put<int64_t>(&frame, rank_);
  Put<uint32_t>(&frame, process_);
  Put<uint32_t>(&frame, static_cast<uint32_t>(columns_.size()));
  Put<uint64_t>(&frame, rows_);
  bool ok = std::fwrite(frame.data(), 1, frame.size(), out) == frame.size();
  for (Column& c : columns_) {
    std::string head;
    Put<uint8_t>(&head, static_cast<uint8_t>(c.type));
    Put<uint8_t>(&head, c.nullable ? 1 : 0);
    PutName(&head, c.name);
    if (c.type == Type::kString) Put<uint64_t>(&head, c.data.size());
    ok = ok && std::fwrite(head.data(), 1, head.size(), out) == head.size();
    if (c.nullable) {
      c.valid.resize((rows_ + 7) / 8, 0);
      ok = ok && std::fwrite(c.valid.data(), 1, c.valid.size(), out) == c.valid.size();
    }
    if (c.type == Type::kString) {
      const size_t bytes = c.offsets.size() * sizeof(int32_t);
      ok = ok && std::fwrite(c.offsets.data(), 1, bytes, out) == bytes;
    }
    ok = ok && std::fwrite(c.data.data(), 1, c.data.size(), out) == c.data.size();
    c.valid.clear();
    c.data.clear();
    if (c.type == Type::kString) c.offsets.assign(1, 0);
  }
  rows_ = 0;
  return ok;
}

bool WriteEndOfBatches(std::FILE* out) {
  return std::fwrite(kEndMagic, 1, 4, out) == 4 && std::fflush(out) == 0;
}

}  // namespace tracer::analysis::exporters
