// Thin read-only wrapper over the sqlite3 C API for the nsys importer (and
// the proof tests): open, check the schema, step through rows. Every failure
// becomes a one-line message naming the file, table or column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace tracer::analysis::importers {

class SqliteStatement {
 public:
  SqliteStatement() = default;
  SqliteStatement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  SqliteStatement(SqliteStatement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  bool valid() const { return stmt_ != nullptr; }
  // True while a row is available; false at the end or on error (see ok()).
  bool Step();
  bool ok() const { return ok_; }
  // Index of the result column called `name` (its AS alias where the SELECT
  // gives one), -1 when there is none. Look each column up once, before
  // stepping, and read the rows by that index: reading by position would tie
  // every reader to the order of its SELECT list.
  int Column(std::string_view name) const;
  int ColumnCount() const;
  // The result column's name ("" when there is none).
  std::string_view ColumnName(int col) const;
  bool IsNull(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string_view Text(int col) const;
  // Column col of the current row with a single lookup of the column (IsNull
  // then Int makes two, each entering and checking the connection: a quarter
  // of stepping a wide NVTX_EVENTS): false when it is NULL, else true with
  // *v. Same values as Int / Double / Text.
  bool IntValue(int col, int64_t* v) const;
  bool DoubleValue(int col, double* v) const;
  bool TextValue(int col, std::string_view* v) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool ok_ = true;
};

class SqliteDb {
 public:
  SqliteDb() = default;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  // Opens read-only. False with *error when the file cannot be opened.
  bool Open(const std::string& path, std::string* error);
  const std::string& path() const { return path_; }

  bool HasTable(std::string_view table);
  // Column names of a table, empty if the table does not exist. Cached.
  const std::vector<std::string>& Columns(std::string_view table);
  bool HasColumn(std::string_view table, std::string_view column);

  // Prepares sql; on failure returns an invalid statement and sets *error.
  SqliteStatement Prepare(const std::string& sql, std::string* error);
  // Runs sql (statements without results wanted); false when it fails.
  bool Exec(const std::string& sql);
  std::string LastError() const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::unordered_map<std::string, std::vector<std::string>> columns_;
};

}  // namespace tracer::analysis::importers
