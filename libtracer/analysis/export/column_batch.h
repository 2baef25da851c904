// Rows of one table, column by column, written to a pipe in a small framing of
// our own (docs/parquet.md "Batch framing") that python/tracer/parquet_writer.py
// turns into Parquet with pyarrow. The framing mirrors Arrow's buffers (little
// endian values, a validity bitmap, int32 string offsets) so the reader wraps
// them without a per-row step; it is neither Arrow IPC nor Parquet: encoding
// Parquet is left to a maintained writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tracer::analysis::exporters {

class ColumnBatch {
 public:
  enum class Type : uint8_t { kInt64 = 1, kFloat64 = 2, kString = 3, kBool = 4 };
  // The rank of a table written once for the dataset (no rank=R folder).
  static constexpr int64_t kUnpartitioned = INT64_MIN;

  // table: the dataset folder; rank: the hive partition; process: the
  // process's index in the export (one file per table and process).
  ColumnBatch(std::string table, int64_t rank, uint32_t process);

  // Declares the columns, in order, before the first row; nullable columns
  // carry a validity bitmap.
  size_t AddColumn(std::string name, Type type, bool nullable = false);

  void Int(size_t column, int64_t v);
  void Float(size_t column, double v);
  void Str(size_t column, std::string_view v);
  void Bool(size_t column, bool v);
  void Null(size_t column);

  // Every column got one value: one row more.
  void EndRow() { ++rows_; }
  size_t rows() const { return rows_; }
  const std::string& table() const { return table_; }

  // Writes the batch and clears its rows (columns stay). False on a write
  // error (the writer process went away).
  bool Flush(std::FILE* out);

 private:
  struct Column {
    std::string name;
    Type type;
    bool nullable;
    std::vector<uint8_t> valid;  // bitmap, LSB first
    std::string data;            // values; strings: their bytes
    std::vector<int32_t> offsets;
  };
  void MarkValid(Column& c, bool valid);

  std::string table_;
  int64_t rank_;
  uint32_t process_;
  std::vector<Column> columns_;
  size_t rows_ = 0;
};

// The end of the stream: the writer closes its files and exits.
bool WriteEndOfBatches(std::FILE* out);

}  // namespace tracer::analysis::exporters
