// TableScan (sqlite_table_scan.h), the reading of SQLite table b-trees
// straight from the file, against SQLite's own reading of the same rows, on
// databases each test writes through libsqlite3: integers of every width,
// reals, texts spilling to chains of overflow pages, NULLs, trees several
// levels deep at the smallest page size, rowid aliases, columns added by
// ALTER TABLE; then what it must refuse or give up on (WAL, UTF-16, reserved
// bytes, a journal beside the file, indexes, generated columns, values of
// another type, corrupt pages), PrefetchedRows resuming through SQL where
// the scan gives up, and the nsys importer reading directly or through SQL
// to the same bytes.
#include "libtracer/analysis/importers/sqlite_table_scan.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/prefetched_rows.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/stream_writer.h"
#include "tests/importers/nsys_test_schema.h"

namespace tracer::analysis::importers {
namespace {

// A database file removed (with its side files) at the end of the test.
class TempDb {
 public:
  TempDb() {
    path_ =
        (std::filesystem::temp_directory_path() /
         ("tracer_scan_" + std::to_string(getpid()) + "_" + std::to_string(counter_++) + ".sqlite"))
            .string();
    Remove();
  }
  ~TempDb() { Remove(); }
  const std::string& path() const { return path_; }
  // Runs sql on the file (created when absent).
  void Exec(const std::string& sql) const {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "") << "\n" << sql;
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::string Bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  void Remove() {
    for (const char* s : {"", "-journal", "-wal", "-shm"}) std::filesystem::remove(path_ + s);
  }
  static inline int counter_ = 0;
  std::string path_;
};

// A value as the reader sees it: NULL, an integer, a real or a text.
using Value = std::variant<std::monostate, int64_t, double, std::string>;
using Row = std::vector<Value>;

// The rows of SELECT columns FROM table through sqlite3, each value read as
// types says (sqlite3_column_int64 / _double / _text, NULL kept).
std::vector<Row> SqlRows(const std::string& path, const std::string& table,
                         const std::vector<std::string>& columns,
                         const std::vector<ScanType>& types) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string sql = "SELECT ";
  for (size_t i = 0; i < columns.size(); ++i) sql += (i ? ", \"" : "\"") + columns[i] + "\"";
  sql += " FROM \"" + table + "\"";
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  std::vector<Row> rows;
  while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
    Row row;
    for (size_t i = 0; i < columns.size(); ++i) {
      const int c = static_cast<int>(i);
      if (sqlite3_column_type(st, c) == SQLITE_NULL) {
        row.emplace_back();
      } else if (types[i] == ScanType::kText) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        row.emplace_back(std::string(p, static_cast<size_t>(sqlite3_column_bytes(st, c))));
      } else if (types[i] == ScanType::kDouble) {
        row.emplace_back(sqlite3_column_double(st, c));
      } else {
        row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(st, c)));
      }
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

struct ScanResult {
  bool planned = false, failed = false;
  std::string why;
  int64_t last_rowid = 0;
  std::vector<Row> rows;
};

Row CurrentRow(const TableScan& scan, const std::vector<ScanType>& types) {
  Row row;
  for (size_t i = 0; i < types.size(); ++i) {
    if (scan.IsNull(i)) {
      row.emplace_back();
    } else if (types[i] == ScanType::kText) {
      row.emplace_back(std::string(scan.Text(i)));
    } else if (types[i] == ScanType::kDouble) {
      row.emplace_back(scan.Double(i));
    } else {
      row.emplace_back(scan.Int(i));
    }
  }
  return row;
}

// Scans the file's image bytes (the schema read from path).
ScanResult ScanRows(const std::string& path, const std::string& table,
                    const std::vector<std::string>& columns, const std::vector<ScanType>& types,
                    const std::string* image = nullptr) {
  ScanResult r;
  SqliteDb db;
  std::string error;
  EXPECT_TRUE(db.Open(path, &error)) << error;
  ScanPlan plan;
  if (!PlanTableScan(&db, table, columns, types, &plan, &r.why)) return r;
  r.planned = true;
  SqliteFileMap file;
  const bool opened =
      image != nullptr
          ? file.OpenBytes(reinterpret_cast<const uint8_t*>(image->data()), image->size(), &r.why)
          : file.Open(path, &r.why);
  if (!opened) {
    r.failed = true;
    return r;
  }
  TableScan scan(&file, plan);
  // A scan of a damaged image may read each page once at most: never more
  // rows than cells in the file.
  const size_t bound = size_t{file.page_count()} * file.page_size();
  while (scan.Next()) {
    r.rows.push_back(CurrentRow(scan, types));
    if (r.rows.size() > bound) {
      ADD_FAILURE() << "more rows than the file can hold";
      break;
    }
  }
  r.failed = scan.failed();
  r.why = scan.why();
  r.last_rowid = scan.rowid();
  return r;
}

// SQLite's varint encoding (putVarint of sqlite3.c).
std::string EncodeVarint(uint64_t v) {
  if (v > (uint64_t{1} << 56) - 1) {
    std::string out(9, '\0');
    out[8] = static_cast<char>(v & 0xFF);
    v >>= 8;
    for (int i = 7; i >= 0; --i) {
      out[i] = static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    return out;
  }
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>((v & 0x7F) | (out.empty() ? 0 : 0x80)));
    v >>= 7;
  } while (v != 0);
  return out;
}

// An image with 1 to max_flips random bytes past its 512-byte file header
// set to random values.
std::string Damaged(const std::string& image, std::mt19937& rng, int max_flips) {
  std::string out = image;
  const int flips = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_flips));
  for (int f = 0; f < flips; ++f) {
    const size_t at = 512 + rng() % (out.size() - 512);
    out[at] = static_cast<char>(rng());
  }
  return out;
}

TEST(SqliteVarintTest, DecodesEveryLengthAndRefusesTruncation) {
  const std::pair<uint64_t, size_t> cases[] = {{0, 1},
                                               {127, 1},
                                               {128, 2},
                                               {16383, 2},
                                               {16384, 3},
                                               {(uint64_t{1} << 49) - 1, 7},
                                               {uint64_t{1} << 49, 8},
                                               {(uint64_t{1} << 56) - 1, 8},
                                               {uint64_t{1} << 56, 9},
                                               {UINT64_MAX, 9},
                                               {0x8000000000000000ull, 9}};
  for (const auto& [value, length] : cases) {
    const std::string bytes = EncodeVarint(value);
    ASSERT_EQ(bytes.size(), length) << value;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    uint64_t v = 0;
    EXPECT_EQ(SqliteVarint(p, p + bytes.size(), &v), length) << value;
    EXPECT_EQ(v, value);
    for (size_t cut = 0; cut < length; ++cut) EXPECT_EQ(SqliteVarint(p, p + cut, &v), 0u) << cut;
  }
}

TEST(SqliteSerialTypeTest, SizesOfEveryKind) {
  const int64_t sizes[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1, 0, 0, 1, 1};
  for (uint64_t t = 0; t < 16; ++t) EXPECT_EQ(SqliteSerialSize(t), sizes[t]) << t;
  EXPECT_EQ(SqliteSerialSize(13 + 2 * 1000), 1000);
  EXPECT_EQ(SqliteSerialSize(12 + 2 * 77), 77);
}

// Rows with every integer width, reals, NULLs, texts short and long (up to
// several overflow pages at the smallest page size), enough rows for three
// levels of b-tree there.
std::string FillSql(int page_size, int rows) {
  return "PRAGMA page_size = " + std::to_string(page_size) +
         ";"
         "CREATE TABLE t (a INTEGER, b TEXT, c REAL, d INTEGER NOT NULL, e TEXT, f INTEGER);"
         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
         std::to_string(rows) +
         ") INSERT INTO t SELECT "
         // a: every serial type 1..9 (0 and 1 are types 8 and 9), signs.
         "CASE i % 12 WHEN 0 THEN 0 WHEN 1 THEN 1 WHEN 2 THEN -1 WHEN 3 THEN 127 "
         "WHEN 4 THEN -32768 WHEN 5 THEN 8388607 WHEN 6 THEN -2147483648 "
         "WHEN 7 THEN 140737488355327 WHEN 8 THEN -140737488355328 "
         "WHEN 9 THEN 9223372036854775807 WHEN 10 THEN -9223372036854775808 ELSE NULL END, "
         // b: text of varied length, a few spilling far.
         "CASE WHEN i % 97 = 0 THEN printf('%.*c', 20000 + i, 'x') WHEN i % 11 = 0 THEN NULL "
         "ELSE printf('row %d %.*c', i, i % 700, 'y') END, "
         "CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN i * 1.5 ELSE -i / 7.0 END, "
         "i * 1000003, "
         "CASE WHEN i % 3 = 0 THEN '' ELSE 'é' || i END, "
         "i - 500 FROM n;";
}

const std::vector<std::string> kColumns = {"a", "b", "c", "d", "e", "f"};
const std::vector<ScanType> kTypes = {ScanType::kInt, ScanType::kText, ScanType::kDouble,
                                      ScanType::kInt, ScanType::kText, ScanType::kInt};

TEST(TableScanTest, ReadsEveryValueAsSqliteDoesAtEveryPageSize) {
  for (int page_size : {512, 1024, 4096, 65536}) {
    SCOPED_TRACE(page_size);
    TempDb db;
    db.Exec(FillSql(page_size, 3000));
    const ScanResult scan = ScanRows(db.path(), "t", kColumns, kTypes);
    ASSERT_TRUE(scan.planned) << scan.why;
    EXPECT_FALSE(scan.failed) << scan.why;
    const std::vector<Row> sql = SqlRows(db.path(), "t", kColumns, kTypes);
    ASSERT_EQ(sql.size(), 3000u);
    ASSERT_EQ(scan.rows.size(), sql.size());
    for (size_t i = 0; i < sql.size(); ++i) ASSERT_EQ(scan.rows[i], sql[i]) << "row " << i;
    EXPECT_EQ(scan.last_rowid, 3000);
    // A subset in another order reads the same values.
    const ScanResult some = ScanRows(db.path(), "t", {"e", "a"}, {ScanType::kText, ScanType::kInt});
    ASSERT_EQ(some.rows.size(), sql.size());
    EXPECT_EQ(some.rows[1], (Row{sql[1][4], sql[1][0]}));
  }
}

// A table of 24 columns whose rows cycle through 7 shapes (the serial types
// of row i are those of row i + 7 but for the last column's; in 4 shapes of
// 7 a text takes a serial type of two bytes), read a few columns far apart: what the scan keeps of
// a header's layout (several headers at once) must read what SQLite reads,
// row after row, whichever shape came before.
std::string WideSql(int rows) {
  std::string create = "CREATE TABLE w (";
  std::string select;
  for (int c = 0; c < 23; ++c) {
    const bool text = c % 6 == 3;
    create += (c ? ", c" : "c") + std::to_string(c) + (text ? " TEXT" : "");
    const std::string k = "((i + " + std::to_string(c) + ") % 7)";
    // By k: NULL, then texts of k * 3 bytes and one of 70 (TEXT columns),
    // or 0, 1, a byte, 3 bytes, 6 bytes, a real.
    select += std::string(c ? ", " : "") + "CASE " + k + " WHEN 0 THEN NULL " +
              (text ? "WHEN 6 THEN printf('%070d', i) ELSE printf('%.*c', " + k + " * 3, 'x')"
                    : "WHEN 1 THEN 0 WHEN 2 THEN 1 WHEN 3 THEN 50 + i % 50 "
                      "WHEN 4 THEN 100000 + i WHEN 5 THEN 1099511627776 + i ELSE i / 4.0") +
              " END";
  }
  // The last column changes every 7 rows: headers that differ in their
  // last serial type alone.
  create += ", c23";
  select += ", CASE (i / 7) % 3 WHEN 0 THEN NULL WHEN 1 THEN 5 ELSE 1099511627776 + i END";
  return create + ");WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
         std::to_string(rows) + ") INSERT INTO w SELECT " + select + " FROM n;";
}

TEST(TableScanTest, WideRowsOfRepeatingShapesReadAsSqliteDoes) {
  TempDb db;
  db.Exec("PRAGMA page_size = 1024;" + WideSql(4000));
  const std::vector<std::vector<std::string>> reads = {
      {"c1", "c9", "c14", "c23"}, {"c23"}, {"c20", "c0"}, {"c12", "c13", "c21"}};
  const std::vector<std::vector<ScanType>> types = {
      {ScanType::kDouble, ScanType::kText, ScanType::kDouble, ScanType::kDouble},
      {ScanType::kDouble},
      {ScanType::kDouble, ScanType::kDouble},
      {ScanType::kDouble, ScanType::kDouble, ScanType::kText}};
  for (size_t r = 0; r < reads.size(); ++r) {
    SCOPED_TRACE(r);
    const ScanResult scan = ScanRows(db.path(), "w", reads[r], types[r]);
    ASSERT_TRUE(scan.planned) << scan.why;
    EXPECT_FALSE(scan.failed) << scan.why;
    const std::vector<Row> sql = SqlRows(db.path(), "w", reads[r], types[r]);
    ASSERT_EQ(sql.size(), 4000u);
    ASSERT_EQ(scan.rows.size(), sql.size());
    for (size_t i = 0; i < sql.size(); ++i) ASSERT_EQ(scan.rows[i], sql[i]) << "row " << i;
  }
  // A real in a column read as an integer: the scan gives up at the first
  // row that holds one, after reading the rows before it (whose shapes it
  // kept) as SQLite does.
  const ScanResult ints = ScanRows(db.path(), "w", {"c2", "c22"}, {ScanType::kInt, ScanType::kInt});
  EXPECT_TRUE(ints.failed);
  const std::vector<Row> sql =
      SqlRows(db.path(), "w", {"c2", "c22"}, {ScanType::kInt, ScanType::kInt});
  ASSERT_LT(ints.rows.size(), sql.size());
  for (size_t i = 0; i < ints.rows.size(); ++i) ASSERT_EQ(ints.rows[i], sql[i]) << "row " << i;
}

TEST(TableScanTest, DamagedWideRowsGiveUpAndNeverReadOutOfBounds) {
  // The kept layouts meet records whose header matches one kept but whose
  // values do not all fit: random damage to the pages of wide rows.
  TempDb db;
  db.Exec("PRAGMA page_size = 512;" + WideSql(1500));
  const std::string bytes = db.Bytes();
  SqliteDb sdb;
  std::string error;
  ASSERT_TRUE(sdb.Open(db.path(), &error)) << error;
  ScanPlan plan;
  ASSERT_TRUE(PlanTableScan(&sdb, "w", {"c1", "c9", "c23"},
                            {ScanType::kDouble, ScanType::kText, ScanType::kDouble}, &plan, &error))
      << error;
  auto scan_image = [&](const std::string& image) {
    SqliteFileMap file;
    std::string why;
    if (!file.OpenBytes(reinterpret_cast<const uint8_t*>(image.data()), image.size(), &why))
      return size_t{0};
    TableScan scan(&file, plan);
    size_t rows = 0;
    while (scan.Next()) ++rows;
    return rows;
  };
  ASSERT_EQ(scan_image(bytes), 1500u);
  std::mt19937 rng(54321);
  for (int i = 0; i < 2000; ++i) {
    const std::string image = Damaged(bytes, rng, 4);
    EXPECT_LE(scan_image(image), 1500u + 200u);
  }
  // A record cut short: its header (and so its shape) the same as rows
  // read before it, its payload 10 bytes smaller than its values need. The
  // scan reads the rows before it and gives up there.
  const size_t pages = bytes.size() / 512;
  int cut = 0;
  for (size_t n = 2; n <= pages && cut == 0; ++n) {
    const size_t at = (n - 1) * 512;
    if (static_cast<uint8_t>(bytes[at]) != 0x0D) continue;
    const auto* page = reinterpret_cast<const uint8_t*>(bytes.data() + at);
    const uint32_t cells = (uint32_t{page[3]} << 8) | page[4];
    for (uint32_t c = 0; c < cells; ++c) {
      const uint32_t off = (uint32_t{page[8 + 2 * c]} << 8) | page[9 + 2 * c];
      uint64_t payload = 0, rowid = 0;
      const size_t k = SqliteVarint(page + off, page + 512, &payload);
      SqliteVarint(page + off + k, page + 512, &rowid);
      // A row past the first few hundred, stored whole on its page (its
      // size written back in as many bytes: SQLite reads a varint of any
      // length), of a shape whose serial types are all one byte (no text
      // of 70 bytes: rowid % 7 of 0, 1 or 2).
      if (rowid < 700 || rowid % 7 > 2 || k > 2 || payload > 512 - 35) continue;
      std::string image = bytes;
      const uint64_t less = payload - 10;
      if (k == 1) {
        image[at + off] = static_cast<char>(less);
      } else {
        image[at + off] = static_cast<char>(0x80 | (less >> 7));
        image[at + off + 1] = static_cast<char>(less & 0x7F);
      }
      SqliteFileMap file;
      std::string why;
      ASSERT_TRUE(
          file.OpenBytes(reinterpret_cast<const uint8_t*>(image.data()), image.size(), &why));
      TableScan scan(&file, plan);
      size_t rows = 0;
      while (scan.Next()) ++rows;
      EXPECT_TRUE(scan.failed());
      EXPECT_EQ(rows, rowid - 1);
      cut = static_cast<int>(rowid);
      break;
    }
  }
  EXPECT_GT(cut, 0) << "no row to cut";
}

TEST(TableScanTest, SmallPagesMakeADeepTreeWithOverflowChains) {
  TempDb db;
  db.Exec(FillSql(512, 3000));
  const std::string bytes = db.Bytes();
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.path().c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT rootpage FROM sqlite_master WHERE name = 't'", -1, &st,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  const int64_t root = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
  // The root and its first child are interior pages: at least three levels.
  auto page = [&](int64_t n) { return bytes.data() + (n - 1) * 512; };
  ASSERT_EQ(static_cast<uint8_t>(page(root)[0]), 0x05);
  const uint8_t* cell_ptr = reinterpret_cast<const uint8_t*>(page(root)) + 12;
  const uint32_t off = (uint32_t{cell_ptr[0]} << 8) | cell_ptr[1];
  const uint8_t* cell = reinterpret_cast<const uint8_t*>(page(root)) + off;
  const uint32_t child =
      (uint32_t{cell[0]} << 24) | (uint32_t{cell[1]} << 16) | (uint32_t{cell[2]} << 8) | cell[3];
  EXPECT_EQ(static_cast<uint8_t>(page(child)[0]), 0x05);
  // And the long texts were read whole (above: equal to SQLite's).
  const ScanResult scan = ScanRows(db.path(), "t", {"b"}, {ScanType::kText});
  ASSERT_EQ(scan.rows.size(), 3000u);
  EXPECT_EQ(std::get<std::string>(scan.rows[96][0]).size(), 20097u);
}

TEST(TableScanTest, RowidAliasAndColumnsAddedLater) {
  TempDb db;
  db.Exec(
      "CREATE TABLE s (id INTEGER NOT NULL PRIMARY KEY, v TEXT NOT NULL);"
      "INSERT INTO s VALUES (5, 'five'), (10, 'ten'), (3436172, 'far'), (-4, 'negative');"
      "ALTER TABLE s ADD COLUMN extra INTEGER;"
      "INSERT INTO s VALUES (20, 'twenty', 77);");
  const std::vector<std::string> cols = {"id", "v", "extra"};
  const std::vector<ScanType> types = {ScanType::kInt, ScanType::kText, ScanType::kInt};
  const ScanResult scan = ScanRows(db.path(), "s", cols, types);
  ASSERT_TRUE(scan.planned) << scan.why;
  EXPECT_FALSE(scan.failed) << scan.why;
  EXPECT_EQ(scan.rows, SqlRows(db.path(), "s", cols, types));
  ASSERT_EQ(scan.rows.size(), 5u);
  EXPECT_EQ(scan.rows[0][0], Value(int64_t{-4}));
  EXPECT_EQ(scan.rows[4][0], Value(int64_t{3436172}));
  EXPECT_EQ(scan.rows[0][2], Value());  // written before the column existed

  // A column added with a DEFAULT: the old records hold no value, and the
  // default is SQLite's to apply.
  db.Exec("ALTER TABLE s ADD COLUMN d INTEGER DEFAULT 9;");
  const ScanResult with_default =
      ScanRows(db.path(), "s", {"v", "d"}, {ScanType::kText, ScanType::kInt});
  EXPECT_TRUE(with_default.failed);
  EXPECT_TRUE(with_default.rows.empty());
  EXPECT_FALSE(with_default.why.empty());
  // Without asking for it, the rest reads on.
  EXPECT_EQ(ScanRows(db.path(), "s", {"v"}, {ScanType::kText}).rows.size(), 5u);
}

TEST(TableScanTest, AbsentColumnsReadAsNull) {
  TempDb db;
  db.Exec("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);");
  const ScanResult scan = ScanRows(db.path(), "t", {"", "a", "nope"},
                                   {ScanType::kInt, ScanType::kInt, ScanType::kText});
  ASSERT_TRUE(scan.planned) << scan.why;
  ASSERT_EQ(scan.rows.size(), 2u);
  EXPECT_EQ(scan.rows[1], (Row{Value(), Value(int64_t{2}), Value()}));
}

TEST(TableScanTest, GivesUpAtAValueOfAnotherTypeAfterTheRowsBefore) {
  TempDb db;
  db.Exec(
      "CREATE TABLE t (a INTEGER, b TEXT);"
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "
      "INSERT INTO t SELECT i, 'n' || i FROM n;"
      "UPDATE t SET a = 'not a number' WHERE rowid = 40;"
      "UPDATE t SET b = x'00ff' WHERE rowid = 60;"  // TEXT affinity keeps a blob
      "UPDATE t SET a = 2.5 WHERE rowid = 80;");
  ScanResult scan = ScanRows(db.path(), "t", {"a"}, {ScanType::kInt});
  EXPECT_TRUE(scan.failed);
  EXPECT_EQ(scan.rows.size(), 39u);
  EXPECT_EQ(scan.last_rowid, 39);
  scan = ScanRows(db.path(), "t", {"b"}, {ScanType::kText});
  EXPECT_TRUE(scan.failed);
  EXPECT_EQ(scan.last_rowid, 59);
  // A real in a column read as a double is a value like any other.
  db.Exec("UPDATE t SET a = 1 WHERE rowid = 40;");
  scan = ScanRows(db.path(), "t", {"a"}, {ScanType::kDouble});
  EXPECT_FALSE(scan.failed) << scan.why;
  EXPECT_EQ(scan.rows, SqlRows(db.path(), "t", {"a"}, {ScanType::kDouble}));
}

// Resident KiB of this process's mapping that holds address p
// (/proc/self/smaps); -1 when not found.
long ResidentKibOfMapping(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  const auto a = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') < 30) {
      in = a >= lo && a < hi;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::strtol(line.c_str() + 4, nullptr, 10);
    }
  }
  return -1;
}

// A table larger than the scan's bound on what it keeps resident: the
// mapping's resident pages stay about that bound while it is read, and
// are given back at the end (a bounded reader of a 1 GB export).
TEST(TableScanTest, GivesTheFilesPagesBackAsItReads) {
  TempDb db;
  db.Exec(
      "CREATE TABLE t (a INTEGER, b TEXT);"
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000) "
      "INSERT INTO t SELECT i, printf('%.*c', 200, 'z') FROM n;");
  std::string error;
  SqliteDb sdb;
  ASSERT_TRUE(sdb.Open(db.path(), &error)) << error;
  SqliteFileMap file;
  ASSERT_TRUE(file.Open(db.path(), &error)) << error;
  const long file_kib = static_cast<long>(file.page_count()) * file.page_size() / 1024;
  ASSERT_GT(file_kib, 10 * 1024);
  ScanPlan plan;
  ASSERT_TRUE(
      PlanTableScan(&sdb, "t", {"a", "b"}, {ScanType::kInt, ScanType::kText}, &plan, &error))
      << error;
  TableScan scan(&file, plan);
  long most = 0;
  int64_t sum = 0;
  while (scan.Next()) {
    sum += scan.Int(0) + static_cast<int64_t>(scan.Text(1).size());
    if (scan.rows() % 5000 == 0) most = std::max(most, ResidentKibOfMapping(file.Page(1)));
  }
  EXPECT_TRUE(scan.why().empty()) << scan.why();
  EXPECT_EQ(sum, int64_t{60000} * 60001 / 2 + 200 * 60000);
  // 2 MiB of pages read between two give-backs, and the interior pages.
  EXPECT_GT(most, 0);
  EXPECT_LT(most, 4 * 1024) << "of " << file_kib << " KiB";
  EXPECT_LT(ResidentKibOfMapping(file.Page(1)), 256);
}

TEST(PlanTableScanTest, RefusesTablesItDoesNotRead) {
  TempDb db;
  db.Exec(
      "CREATE TABLE plain (a INTEGER);"
      "CREATE TABLE nr (a INTEGER PRIMARY KEY, b TEXT) WITHOUT ROWID;"
      "CREATE TABLE indexed (a INTEGER, b INTEGER); CREATE INDEX i ON indexed(b);"
      "CREATE TABLE gen (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, c INTEGER);"
      "CREATE TABLE named (\"rowid\" INTEGER, a INTEGER);"
      "CREATE TABLE descending (id INTEGER PRIMARY KEY DESC, a INTEGER);");
  SqliteDb sdb;
  std::string error;
  ASSERT_TRUE(sdb.Open(db.path(), &error)) << error;
  ScanPlan plan;
  std::string why;
  EXPECT_TRUE(PlanTableScan(&sdb, "plain", {"a"}, {ScanType::kInt}, &plan, &why)) << why;
  for (const std::string table : {"nr", "indexed", "gen", "named", "descending", "missing"}) {
    why.clear();
    // "INTEGER PRIMARY KEY DESC" is no rowid alias: refused where read.
    const std::string column = table == "descending" ? "id" : "a";
    EXPECT_FALSE(PlanTableScan(&sdb, table, {column}, {ScanType::kInt}, &plan, &why)) << table;
    EXPECT_FALSE(why.empty()) << table;
  }
  // More result columns than the null bits hold.
  EXPECT_FALSE(PlanTableScan(&sdb, "plain", std::vector<std::string>(65, "a"),
                             std::vector<ScanType>(65, ScanType::kInt), &plan, &why));
}

TEST(SqliteFileMapTest, RefusesFilesItDoesNotHandle) {
  TempDb plain;
  plain.Exec("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);");
  const std::string bytes = plain.Bytes();
  std::string why;
  {
    SqliteFileMap file;
    EXPECT_TRUE(file.Open(plain.path(), &why)) << why;
    EXPECT_EQ(file.page_size(), 4096u);
  }
  auto refused = [&](std::string image, const char* what) {
    SqliteFileMap file;
    why.clear();
    EXPECT_FALSE(file.OpenBytes(reinterpret_cast<const uint8_t*>(image.data()), image.size(), &why))
        << what;
    EXPECT_FALSE(why.empty()) << what;
  };
  std::string reserved = bytes;
  reserved[20] = 8;  // 8 bytes reserved at the end of each page
  refused(reserved, "reserved bytes");
  std::string wal = bytes;
  wal[18] = wal[19] = 2;
  refused(wal, "WAL versions");
  std::string bad_size = bytes;
  bad_size[16] = 0x03;  // 0x0300: not a power of two
  refused(bad_size, "page size");
  refused(bytes.substr(0, 4096), "shorter than its header's page count");
  refused(std::string(4096, 'x'), "no header");
  refused(bytes.substr(0, 50), "shorter than a header");

  TempDb utf16;
  utf16.Exec("PRAGMA encoding = 'UTF-16le'; CREATE TABLE t (a TEXT); INSERT INTO t VALUES ('x');");
  SqliteFileMap u;
  EXPECT_FALSE(u.Open(utf16.path(), &why));

  TempDb in_wal;
  in_wal.Exec("PRAGMA journal_mode = WAL; CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);");
  SqliteFileMap w;
  EXPECT_FALSE(w.Open(in_wal.path(), &why));

  // A non-empty journal beside the file may hold pages SQLite would roll
  // back.
  std::ofstream(plain.path() + "-journal", std::ios::binary) << std::string(512, 'j');
  SqliteFileMap j;
  EXPECT_FALSE(j.Open(plain.path(), &why));
  std::filesystem::remove(plain.path() + "-journal");
}

// Reads a big-endian page number at offset off of page n of image.
void PutBe32(std::string* image, size_t at, uint32_t v) {
  (*image)[at] = static_cast<char>(v >> 24);
  (*image)[at + 1] = static_cast<char>(v >> 16);
  (*image)[at + 2] = static_cast<char>(v >> 8);
  (*image)[at + 3] = static_cast<char>(v);
}

TEST(TableScanTest, CorruptPagesGiveUpAndNeverReadOutOfBounds) {
  TempDb db;
  db.Exec(FillSql(512, 1500));
  const std::string bytes = db.Bytes();
  const size_t pages = bytes.size() / 512;
  SqliteDb sdb;
  std::string error;
  ASSERT_TRUE(sdb.Open(db.path(), &error)) << error;
  ScanPlan plan;
  ASSERT_TRUE(PlanTableScan(&sdb, "t", kColumns, kTypes, &plan, &error)) << error;
  auto scan_image = [&](const std::string& image) {
    SqliteFileMap file;
    std::string why;
    if (!file.OpenBytes(reinterpret_cast<const uint8_t*>(image.data()), image.size(), &why))
      return std::make_pair(true, size_t{0});
    TableScan scan(&file, plan);
    size_t rows = 0;
    while (scan.Next()) ++rows;
    return std::make_pair(scan.failed(), rows);
  };
  ASSERT_EQ(scan_image(bytes), std::make_pair(false, size_t{1500}));
  const size_t root = plan.root_page;
  const size_t root_at = (root - 1) * 512;
  {
    // The root's right-most child is the root itself: a cycle.
    std::string image = bytes;
    PutBe32(&image, root_at + 8, static_cast<uint32_t>(root));
    EXPECT_TRUE(scan_image(image).first);
  }
  {
    // A child past the end of the file, and page 1.
    for (uint32_t child : {static_cast<uint32_t>(pages + 5), 1u, 0u}) {
      std::string image = bytes;
      PutBe32(&image, root_at + 8, child);
      EXPECT_TRUE(scan_image(image).first) << child;
    }
  }
  {
    // A page that is no b-tree page, a cell count past the page.
    std::string image = bytes;
    image[root_at] = 0x0A;
    EXPECT_TRUE(scan_image(image).first);
    image = bytes;
    image[root_at + 3] = static_cast<char>(0xFF);
    EXPECT_TRUE(scan_image(image).first);
  }
  {
    // Every overflow chain pointing out of the file: find the cells that
    // spill by scanning leaf pages for payloads longer than the page.
    std::string image = bytes;
    int changed = 0;
    for (size_t n = 2; n <= pages; ++n) {
      const size_t at = (n - 1) * 512;
      if (static_cast<uint8_t>(image[at]) != 0x0D) continue;
      const auto* page = reinterpret_cast<const uint8_t*>(image.data() + at);
      const uint32_t cells = (uint32_t{page[3]} << 8) | page[4];
      for (uint32_t c = 0; c < cells; ++c) {
        const uint32_t off = (uint32_t{page[8 + 2 * c]} << 8) | page[9 + 2 * c];
        uint64_t payload = 0, rowid = 0;
        size_t k = SqliteVarint(page + off, page + 512, &payload);
        k += SqliteVarint(page + off + k, page + 512, &rowid);
        if (payload <= 512 - 35) continue;
        const uint64_t min_local = (512 - 12) * 32 / 255 - 23;
        const uint64_t kk = min_local + (payload - min_local) % (512 - 4);
        const uint64_t local = kk <= 512 - 35 ? kk : min_local;
        PutBe32(&image, at + off + k + local, static_cast<uint32_t>(pages + 100));
        ++changed;
      }
    }
    ASSERT_GT(changed, 0);
    EXPECT_TRUE(scan_image(image).first);
  }
  // Random damage anywhere past the header: give up or read on, never read
  // out of bounds (the sanitizer build checks) or loop.
  std::mt19937 rng(12345);
  for (int i = 0; i < 3000; ++i) {
    const std::string image = Damaged(bytes, rng, 8);
    scan_image(image);
  }
}

// Every row of a PrefetchedRows reading, by column type.
std::vector<Row> PrefetchedAll(PrefetchedRows* rows, const std::vector<std::string>& columns,
                               const std::vector<ScanType>& types) {
  std::string error;
  EXPECT_TRUE(rows->WaitOpened(&error)) << error;
  std::vector<int> cols;
  for (const std::string& c : columns) cols.push_back(rows->Column(c));
  std::vector<Row> out;
  while (rows->Step()) {
    Row row;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (rows->IsNull(cols[i])) {
        row.emplace_back();
      } else if (types[i] == ScanType::kText) {
        row.emplace_back(std::string(rows->Text(cols[i])));
      } else if (types[i] == ScanType::kDouble) {
        row.emplace_back(rows->Double(cols[i]));
      } else {
        row.emplace_back(rows->Int(cols[i]));
      }
    }
    out.push_back(std::move(row));
  }
  EXPECT_TRUE(rows->ok()) << rows->error();
  return out;
}

TEST(PrefetchedRowsTest, ScanResumesThroughSqlWhereItGivesUp) {
  TempDb db;
  db.Exec(FillSql(1024, 5000) + "UPDATE t SET d = 'text' WHERE rowid = 3210;");
  const std::string sql =
      "SELECT \"a\" AS \"a\", \"b\" AS \"b\", \"c\" AS \"c\", \"d\" AS \"d\", "
      "\"e\" AS \"e\", \"f\" AS \"f\" FROM \"t\"";
  const std::vector<std::string_view> names = {"a", "b", "c", "d", "e", "f"};
  const std::vector<std::string_view> nulls = {"a", "b", "c", "d", "e", "f"};
  std::string error;
  SqliteDb sdb;
  ASSERT_TRUE(sdb.Open(db.path(), &error));
  PrefetchedRows reference;  // after sdb: its statement is finalized first
  reference.ReadNow(&sdb, sql, nulls, {"b", "e"}, {"c"});
  const std::vector<Row> expected = PrefetchedAll(&reference, kColumns, kTypes);
  ASSERT_EQ(expected.size(), 5000u);
  auto file = std::make_shared<SqliteFileMap>();
  ASSERT_TRUE(file->Open(db.path(), &error)) << error;
  // Read as Step asks, the rest resumed on the caller's connection or on one
  // of the reader's own (db nullptr); or decoded on a thread, two blocks
  // ahead, the rest resumed there.
  struct Way {
    SqliteDb* resume;
    size_t max_queued;
    const char* name;
  };
  for (const Way& way : {Way{&sdb, 0, "caller's connection"}, Way{nullptr, 0, "own connection"},
                         Way{&sdb, 2, "on a thread"}}) {
    SCOPED_TRACE(way.name);
    SqliteDb* resume = way.resume;
    ScanPlan plan;
    ASSERT_TRUE(PlanTableScan(&sdb, "t", kColumns, kTypes, &plan, &error)) << error;
    PrefetchedRows rows;
    ASSERT_TRUE(rows.StartScan({.file = file,
                                .plan = plan,
                                .names = names,
                                .sql = sql,
                                .db = resume,
                                .path = db.path(),
                                .nulls = nulls,
                                .texts = {"b", "e"},
                                .doubles = {"c"},
                                .max_queued = way.max_queued}));
    EXPECT_EQ(PrefetchedAll(&rows, kColumns, kTypes), expected);
    EXPECT_EQ(rows.scanned_rows(), 3209u);
    EXPECT_FALSE(rows.scan_gave_up().empty());
  }
  // A whole scan gives up nowhere.
  db.Exec("UPDATE t SET d = 1 WHERE rowid = 3210;");
  ScanPlan plan;
  ASSERT_TRUE(PlanTableScan(&sdb, "t", kColumns, kTypes, &plan, &error)) << error;
  const ScanRead read = {.file = file,
                         .plan = plan,
                         .names = names,
                         .sql = sql,
                         .db = &sdb,
                         .path = {},
                         .nulls = nulls,
                         .texts = {"b", "e"},
                         .doubles = {"c"}};
  PrefetchedRows rows;
  ASSERT_TRUE(rows.StartScan(read));
  // Started once only; names that do not match the plan start nothing.
  EXPECT_FALSE(rows.StartScan(read));
  ScanRead other = read;
  other.names = {"a"};
  PrefetchedRows mismatched;
  EXPECT_FALSE(mismatched.StartScan(other));
  EXPECT_EQ(PrefetchedAll(&rows, kColumns, kTypes).size(), 5000u);
  EXPECT_EQ(rows.scanned_rows(), 5000u);
  EXPECT_TRUE(rows.scan_gave_up().empty());
}

// An nsys export of the test schema with enough rows for several pages per
// table, names inline and by id, NULLs where exports have them.
void WriteNsysExport(const TempDb& db) {
  db.Exec(std::string(kNsysSchema) +
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60) "
          "INSERT INTO StringIds SELECT i, printf('name %d %.*c', i, i * 7, 'k') FROM n;"
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000) "
          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 100 * i, 100 * i + 40, i % 2, "
          "(7 << 24) | (7 + i % 3), i, 1 + i % 5, 0 FROM n;"
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000) "
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
          "correlationId, globalPid, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, "
          "staticSharedMemory, dynamicSharedMemory, registersPerThread) SELECT 100 * i + 50, "
          "100 * i + 90, 0, 1, 7 + i % 2, i, 7 << 24, 10 + i % 40, i % 9, 1, 1, 128, 1, 1, 0, 0, "
          "32 FROM n;"
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
          "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId, "
          "color) SELECT 100 * i, CASE WHEN i = 3000 THEN NULL ELSE 100 * i + 60 + (i % 4) * 50 "
          "END, CASE WHEN i % 50 = 0 THEN 34 ELSE 59 END, CASE WHEN i % 3 = 0 THEN NULL ELSE "
          "printf('aten::op%d, seq = %d, op_id = %d', i % 13, i, i * 3) END, (7 << 24) | 7, "
          "CASE WHEN i % 3 = 0 THEN 1 + i % 60 ELSE NULL END, 0, i FROM n;"
          "INSERT INTO ThreadNames VALUES (2, 0, (7 << 24) | 7);");
}

TEST(NsysImporterTest, DirectReadingGivesTheSameTraceAsSql) {
  // The plain export, then exports the direct reading refuses whole (WAL,
  // an index on a table) or gives up on at a row (a real in an integer
  // column, read on through SQL): the same trace every time.
  const char* variants[] = {
      "",
      "PRAGMA journal_mode = WAL;",
      "CREATE INDEX by_start ON NVTX_EVENTS(start);",
      ("UPDATE NVTX_EVENTS SET domainId = 0.5 WHERE rowid = 1500;"
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = '7' || 'x' WHERE rowid = 2500;"),
  };
  for (const char* variant : variants) {
    SCOPED_TRACE(variant);
    TempDb db;
    WriteNsysExport(db);
    db.Exec(variant);
    for (ImportFields fields : {ImportFields::kAll, ImportFields::kReported}) {
      Trace direct, sql;
      std::string error;
      ASSERT_TRUE(ImportNsysSqlite(db.path(), &direct, &error, fields, NsysRowReader::kDirect))
          << error;
      ASSERT_TRUE(ImportNsysSqlite(db.path(), &sql, &error, fields, NsysRowReader::kSql)) << error;
      ASSERT_EQ(direct.processes.size(), 1u);
      ASSERT_EQ(sql.processes.size(), 1u);
      EXPECT_EQ(direct.processes[0].ranges.size(), 2940u);
      EXPECT_EQ(direct.processes[0].kernels.size(), 4000u);
      // Same strings in the same order, same records: the same stream bytes.
      EXPECT_EQ(EncodeProcessStream(direct, 0), EncodeProcessStream(sql, 0));
    }
  }
}

}  // namespace
}  // namespace tracer::analysis::importers
