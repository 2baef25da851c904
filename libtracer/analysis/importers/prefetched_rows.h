// The rows of one table or SELECT, read the fastest way the caller can use:
//   * StartScan: straight from the file (sqlite_table_scan.h), each row as
//     Step asks, with no copy; where the scan gives up, the rest through SQL
//     on the caller's thread. The importers' large tables, when the export
//     allows it.
//   * StartOpen / Open + Start: stepped through SQLite on a thread of its
//     own and connection of its own, a few blocks ahead of the reader (or
//     the whole result ahead), so that SQLite's stepping and decoding run
//     beside the reader's work: the bounded nsys importer's tables read
//     through ORDER BY, the whole-trace importer's tables the scan does not
//     read.
//   * Open + StartInline, ReadNow: through SQLite on the caller's thread.
// Integer and NULL columns, and the columns named by TrackText /
// TrackDouble. Same reading interface as SqliteStatement (Column, Step,
// IsNull, Int, Double, Text, ok).
#pragma once

#include <bit>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"

namespace tracer::analysis::importers {

// What PrefetchedRows::StartScan reads.
struct ScanRead {
  // The mapped file and where the table's rows are.
  std::shared_ptr<const SqliteFileMap> file;
  ScanPlan plan;
  // The result columns' names, in the plan's order (those of sql).
  std::vector<std::string_view> names;
  // The same columns of the table alone (SELECT ... FROM "t", no WHERE, no
  // ORDER BY): it reads the rest, " WHERE rowid > N" appended, when the scan
  // gives up.
  std::string sql;
  // The connection that reads the rest: one of the thread that calls Step,
  // which outlives the reading; nullptr: one of its own, opened on path.
  SqliteDb* db = nullptr;
  std::string path;
  // The columns asked IsNull of, read as Text, read as Double.
  std::vector<std::string_view> nulls, texts, doubles;
  // 0: each row read as Step asks for it, on the caller's thread, with no
  // copy. Else the rows are decoded on a thread of their own into blocks,
  // at most this many ahead of the reader, and the rest after a give-up is
  // read there too, on a connection of the thread's own (db unused): for
  // a reader whose own work per row is as large as the decoding (the
  // bounded nsys importer, whose aggregation runs beside it), at the cost
  // of a copy of each row.
  size_t max_queued = 0;
};

class PrefetchedRows {
 public:
  PrefetchedRows() = default;
  PrefetchedRows(const PrefetchedRows&) = delete;
  PrefetchedRows& operator=(const PrefetchedRows&) = delete;
  ~PrefetchedRows();

  // Opens path and prepares sql; no row is read until Start. False with
  // *error when either fails. max_queued: blocks of rows read ahead before
  // the thread waits for the reader; 0 reads the whole result ahead (the
  // reader is busy with other tables meanwhile).
  bool Open(const std::string& path, const std::string& sql, std::string* error,
            size_t max_queued = kDefaultMaxQueued);
  bool valid() const { return cols_ > 0; }
  // Open, the Track calls and Start in one, the opening and preparing done
  // on the thread (a connection parses the export's whole schema: a tenth
  // of a small export's import). The columns to track are named. Call
  // WaitOpened before Column or Step.
  void StartOpen(const std::string& path, const std::string& sql, size_t max_queued,
                 const std::vector<std::string_view>& nulls,
                 const std::vector<std::string_view>& texts,
                 const std::vector<std::string_view>& doubles);
  // StartOpen's reading without a thread or a connection of its own: the
  // whole result read now through db, an open connection of this thread
  // (the caller's, which outlives the reading). For a small table, where a
  // connection's opening (it parses the export's schema) costs more than
  // the stepping it would move off this thread.
  void ReadNow(SqliteDb* db, const std::string& sql, const std::vector<std::string_view>& nulls,
               const std::vector<std::string_view>& texts,
               const std::vector<std::string_view>& doubles);
  // Reading the rows from the file itself (sqlite_table_scan.h): each row
  // as Step asks for it, or on a thread (read.max_queued). When the scan
  // gives up, the rest of the rows (rowid past the last one read) are read
  // through read.sql, a block at a time. False (nothing started) when
  // read.names and read.plan disagree or a reading was started already.
  bool StartScan(ScanRead read);
  // Rows read from the file itself (StartScan), and why the scan gave up
  // ("" when it did not): after the last Step.
  size_t scanned_rows() const { return scanned_rows_; }
  const std::string& scan_gave_up() const { return scan_why_; }
  // After StartOpen: waits until the statement is prepared; false with
  // *error (as Open's) when opening or preparing failed.
  bool WaitOpened(std::string* error);
  // Resolve columns before Start (the statement is the thread's after it).
  int Column(std::string_view name) const;
  // IsNull answers for the columns named here before Start, false for the
  // others (asking SQLite for every column's type costs a tenth of a scan).
  void TrackNulls(int col) {
    if (col >= 0 && col < 64) tracked_nulls_ |= uint64_t{1} << col;
  }
  // Columns read as text (Text) or as a floating-point value (Double); the
  // others are read as integers. NULL is tracked for both.
  void TrackText(int col) {
    if (col >= 0 && col < 64) text_cols_ |= uint64_t{1} << col;
    TrackNulls(col);
  }
  void TrackDouble(int col) {
    if (col >= 0 && col < 64) double_cols_ |= uint64_t{1} << col;
    TrackNulls(col);
  }
  void Start();
  // After Open, instead of Start: no thread; Step reads the next block of
  // rows on the calling thread when the last one is used up (memory: one
  // block), for a reader that has a thread of its own or nothing to do
  // beside the reading.
  void StartInline();

  // True while a row is available; false at the end or on error (ok()).
  bool Step();
  bool ok() const { return ok_; }
  // The SQLite message of a read error.
  const std::string& error() const { return error_; }
  bool IsNull(int col) const { return ((row_nulls_ >> col) & 1) != 0; }
  int64_t Int(int col) const { return row_values_[col]; }
  double Double(int col) const { return std::bit_cast<double>(row_values_[col]); }
  // Valid until the next Step.
  std::string_view Text(int col) const {
    if (direct_) return scan_->Text(static_cast<size_t>(col));
    const uint64_t v = static_cast<uint64_t>(row_values_[col]);
    return std::string_view(current_.text).substr(v >> 32, v & 0xFFFFFFFFu);
  }

 private:
  struct Block {
    std::vector<int64_t> values;  // rows x cols
    std::vector<uint64_t> nulls;  // one bit per column, per row
    std::string text;             // text columns: value = offset << 32 | size
    size_t rows = 0;
  };
  static constexpr size_t kBlockRows = 2048;
  static constexpr size_t kDefaultMaxQueued = 4;
  void Produce();
  bool FillBlock(Block* b);
  // StartOpen's part on the thread; false when it failed (said to WaitOpened).
  bool OpenOnThread();
  // StartScan's: the column masks from the names; never fails.
  void TrackNamed();
  // Step's reading straight from the scan (StartScan).
  bool StepScan();
  // StartInline's: reads the next block into current_; false at the end or
  // on error (ok_, error_ set).
  bool NextInlineBlock();
  // Copies the scan's current row into the next row of *b (a thread's
  // reading of a scan).
  void CopyScanned(Block* b);
  // The scan gave up: prepares sql for the rows after the last one it read;
  // false (resume_error_) when that fails.
  bool ResumeWithSql();

  SqliteDb db_;
  // The connection st_ reads: &db_, or ReadNow's.
  SqliteDb* reading_db_ = nullptr;
  SqliteStatement st_;
  int cols_ = 0;
  uint64_t tracked_nulls_ = 0, text_cols_ = 0, double_cols_ = 0;
  size_t max_queued_ = kDefaultMaxQueued;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Block> full_;
  std::vector<Block> spare_;
  bool done_ = false, stop_ = false, failed_ = false;
  // StartOpen: what the thread opens, then the result columns' names.
  bool async_ = false, opened_ = false;
  std::string path_, sql_, open_error_;
  std::vector<std::string> names_, track_nulls_, track_texts_, track_doubles_;
  std::string thread_error_;
  // StartScan: the file, the scan, what it read; resume_error_: the SQL
  // reading of the rest could not start.
  std::shared_ptr<const SqliteFileMap> file_;
  std::unique_ptr<TableScan> scan_;
  size_t scanned_rows_ = 0;
  bool direct_ = false;  // rows come from scan_ at each Step
  bool inline_ = false;  // Step reads blocks from st_ on its own thread
  std::string scan_why_, resume_error_;
  // The reader's side.
  Block current_;
  size_t next_row_ = 0;
  const int64_t* row_values_ = nullptr;
  uint64_t row_nulls_ = 0;
  bool ok_ = true;
  std::string error_;
};

}  // namespace tracer::analysis::importers
