// A read-only reader of the rows of SQLite tables straight from the file
// (https://www.sqlite.org/fileformat2.html), for the nsys importer's large
// tables: it walks a table's b-tree over a mapping of the file and decodes
// only the columns asked for, by walking each record's header, where
// sqlite3_step runs the VDBE, builds a cursor and copies each value into a
// Mem (about two thirds of reading an nsys export's rows).
//
// It handles the files SQLite writes in rollback-journal mode, UTF-8, no
// reserved bytes per page, rowid tables; libsqlite3 still reads the schema
// (PlanTableScan: root page, column positions). Whatever it meets outside
// that (a WAL database, a hot journal, an index on the table, a generated
// column, a page or a record it cannot parse, a value of a type the column
// is not read as) makes it give up with a reason, before the first row or at
// a row; the caller then reads the rest through SQL (PrefetchedRows does,
// from the next rowid on). Every offset read is bounds-checked against the
// page or the file: a corrupt file gives up, never a read out of bounds, and
// every page of a b-tree is visited at most once, so a cycle cannot loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tracer::analysis::importers {

class SqliteDb;

// Read-only mapping of an SQLite database file and the facts of its header.
class SqliteFileMap {
 public:
  SqliteFileMap() = default;
  SqliteFileMap(const SqliteFileMap&) = delete;
  SqliteFileMap& operator=(const SqliteFileMap&) = delete;
  ~SqliteFileMap();

  // Maps path; false with *why when it is not a file this reader handles
  // (then nothing is mapped).
  bool Open(const std::string& path, std::string* why);
  // Checks a mapped image (tests, the fuzz target): the same checks as Open.
  bool OpenBytes(const uint8_t* data, size_t size, std::string* why);

  uint32_t page_count() const { return page_count_; }
  uint32_t page_size() const { return page_size_; }
  // Page n (1-based), page_size() bytes; nullptr when out of range.
  const uint8_t* Page(uint32_t n) const {
    return n >= 1 && n <= page_count_ ? data_ + size_t{n - 1} * page_size_ : nullptr;
  }
  // Gives the resident memory of pages first..last (1-based) back: a
  // mapped file's pages stay in the page cache and fault back in when read
  // again, but no longer count in the process's resident set, which a
  // reader of a table larger than its memory bound needs. Nothing for an
  // image given to OpenBytes.
  void Release(uint32_t first, uint32_t last) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  uint32_t page_size_ = 0, page_count_ = 0;
};

// How a result column is read.
enum class ScanType : uint8_t {
  kInt,     // an integer (a NULL reads as 0); any other stored type gives up
  kText,    // text (UTF-8); an integer, real or blob gives up
  kDouble,  // a real, or an integer read as one; text or blob gives up
};

struct ScanColumn {
  // The column's position in the table's records; kAbsent: a column the
  // table lacks, always NULL.
  static constexpr int kAbsent = -1;
  int record_index = kAbsent;
  ScanType type = ScanType::kInt;
  // The table's INTEGER PRIMARY KEY: stored as NULL, read as the rowid.
  bool rowid_alias = false;
  // The column has a non-NULL DEFAULT: a record written before an ALTER
  // TABLE ADD COLUMN that lacks it gives up (its value is that default).
  bool has_default = false;
};

// Where a table's rows are and how to read the result columns.
struct ScanPlan {
  uint32_t root_page = 0;
  std::vector<ScanColumn> columns;
};

// Fills *plan for reading `columns` of table (names; "" or a name the table
// lacks: kAbsent) from db's schema, the types as given. False with *why when
// the table is not one the scan reads (no such table, WITHOUT ROWID, an
// index on it, a virtual or generated column...).
bool PlanTableScan(SqliteDb* db, std::string_view table, const std::vector<std::string>& columns,
                   const std::vector<ScanType>& types, ScanPlan* plan, std::string* why);

// The rows of one table b-tree, in rowid order (the order of SQLite's own
// full scan of a table without index).
class TableScan {
 public:
  // file must outlive the scan.
  TableScan(const SqliteFileMap* file, ScanPlan plan);

  // Advances to the next row: false at the end or when the scan gave up
  // (failed(), why()).
  bool Next();
  bool failed() const { return failed_; }
  const std::string& why() const { return why_; }
  // The rowid of the current row, or of the last row read before giving up
  // (0 before the first): a reader resumes after it.
  int64_t rowid() const { return rowid_; }
  size_t rows() const { return rows_; }

  // Values of the current row, by result column.
  bool IsNull(size_t col) const { return ((nulls_ >> col) & 1) != 0; }
  int64_t Int(size_t col) const { return values_[col]; }
  double Double(size_t col) const;
  // Valid until the next Next().
  std::string_view Text(size_t col) const { return texts_[col]; }
  // The row at once: one bit per result column that is NULL; per column the
  // integer, or the bits of the double (kDouble), 0 for NULL and text.
  uint64_t nulls() const { return nulls_; }
  const int64_t* values() const { return values_.data(); }

 private:
  struct Frame {
    const uint8_t* page;  // never page 1, whose header starts at 100
    uint32_t next;        // next cell (cell_count: the right-most child)
    uint32_t cells;
    uint32_t number;  // of the page
  };
  bool Fail(std::string why);
  // Pushes page n after checking it is a b-tree page not seen before.
  bool Enter(uint32_t n);
  // Decodes the leaf cell at offset off of page into the row's values.
  bool ReadCell(const uint8_t* page, uint32_t off);
  bool DecodeRecord(const uint8_t* p, size_t size, int64_t rowid);
  // The layout kept for a record of header size header_size whose first n
  // serial types are the bytes at h.
  static size_t LayoutOf(const uint8_t* h, size_t n, uint64_t header_size);
  // One value of serial type t (value_size bytes at v, in bounds) into
  // result column slot; false with *why when the column's type refuses it.
  bool DecodeValue(size_t slot, uint64_t t, const uint8_t* v, int64_t value_size, int64_t rowid,
                   uint64_t* nulls, const char** why);
  // Notes page n read; every kReleaseBytes of pages read, and at the end,
  // gives the span read since the last time back (SqliteFileMap::Release):
  // a scan's resident share of the file stays about that, whatever the
  // table's size.
  void Touch(uint32_t n);
  // Widens the span to give back to page n, read again.
  void Note(uint32_t n) {
    touched_first_ = n < touched_first_ ? n : touched_first_;
    touched_last_ = n > touched_last_ ? n : touched_last_;
  }
  void ReleaseTouched();
  static constexpr size_t kReleaseBytes = size_t{2} << 20;

  const SqliteFileMap* file_;
  ScanPlan plan_;
  uint32_t usable_ = 0, max_local_ = 0, min_local_ = 0;
  // record index -> result column, -1 when not read (up to the highest
  // one read).
  std::vector<int> slot_of_;
  // The record indexes read, ascending, and their result columns.
  struct Want {
    uint32_t index, slot;
  };
  std::vector<Want> wants_;
  // Where the values read lie in records of one header (the same serial
  // types up to the last column read): a table's rows repeat a few headers
  // (one per kernel, say), so their layouts are kept, kLayouts of them, by
  // a hash of the header (DecodeRecord).
  struct Place {
    uint32_t offset, size;
    uint8_t type;
  };
  static constexpr size_t kLayouts = 64;
  // Layouts are kept when at least this many columns are skipped (walking
  // a header of a few columns costs less than finding its layout).
  static constexpr size_t kLayoutSkipped = 8;
  bool use_layouts_ = false;
  struct Layout {
    uint64_t header_size = 0;  // 0: none kept here (a header is 1 byte at least)
    uint64_t end = 0;          // the end of the last value read
  };
  std::vector<Layout> layouts_;
  std::vector<uint8_t> layout_types_;  // kLayouts x slot_of_.size() (+1: never empty)
  std::vector<Place> layout_places_;   // kLayouts x wants_.size()
  uint64_t all_columns_ = 0;           // one bit per result column
  std::vector<Frame> stack_;
  std::vector<uint64_t> seen_;  // one bit per page: visited in this scan
  uint32_t touched_first_ = UINT32_MAX, touched_last_ = 0, touched_ = 0, release_every_ = 1;
  bool started_ = false, failed_ = false;
  std::string why_;
  int64_t rowid_ = 0;
  size_t rows_ = 0;
  uint64_t nulls_ = 0;
  std::vector<int64_t> values_;
  std::vector<std::string_view> texts_;
  std::string overflow_;  // a payload spilled to overflow pages, reassembled
};

// Reads a SQLite varint from [p, end): its value in *v and its length (1..9),
// or 0 when it does not end before end.
inline size_t SqliteVarint(const uint8_t* p, const uint8_t* end, uint64_t* v) {
  uint64_t x = 0;
  for (size_t i = 0; i < 8; ++i) {
    if (p + i >= end) return 0;
    x = (x << 7) | (p[i] & 0x7F);
    if ((p[i] & 0x80) == 0) {
      *v = x;
      return i + 1;
    }
  }
  if (p + 8 >= end) return 0;
  *v = (x << 8) | p[8];
  return 9;
}

// Bytes of a record value of serial type t; -1 for the reserved types 10, 11.
inline int64_t SqliteSerialSize(uint64_t t) {
  static constexpr int8_t kSmall[12] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1};
  if (t < 12) return kSmall[t];
  return static_cast<int64_t>((t - 12) / 2);
}

}  // namespace tracer::analysis::importers
