#include "libtracer/analysis/importers/sqlite_db.h"

#include <sqlite3.h>

#include <algorithm>

namespace tracer::analysis::importers {

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    ok_ = other.ok_;
    other.stmt_ = nullptr;
  }
  return *this;
}

SqliteStatement::~SqliteStatement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

bool SqliteStatement::Step() {
  if (stmt_ == nullptr) return false;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) ok_ = false;
  return false;
}

int SqliteStatement::Column(std::string_view name) const {
  if (stmt_ == nullptr) return -1;
  const int n = sqlite3_column_count(stmt_);
  for (int i = 0; i < n; ++i) {
    const char* c = sqlite3_column_name(stmt_, i);
    if (c != nullptr && name == c) return i;
  }
  return -1;
}

int SqliteStatement::ColumnCount() const {
  return stmt_ == nullptr ? 0 : sqlite3_column_count(stmt_);
}

std::string_view SqliteStatement::ColumnName(int col) const {
  const char* c = stmt_ == nullptr ? nullptr : sqlite3_column_name(stmt_, col);
  return c == nullptr ? std::string_view() : std::string_view(c);
}

bool SqliteStatement::IsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

int64_t SqliteStatement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }

double SqliteStatement::Double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string_view SqliteStatement::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
}

bool SqliteStatement::IntValue(int col, int64_t* v) const {
  sqlite3_value* value = sqlite3_column_value(stmt_, col);
  if (sqlite3_value_type(value) == SQLITE_NULL) return false;
  *v = sqlite3_value_int64(value);
  return true;
}

bool SqliteStatement::DoubleValue(int col, double* v) const {
  sqlite3_value* value = sqlite3_column_value(stmt_, col);
  if (sqlite3_value_type(value) == SQLITE_NULL) return false;
  *v = sqlite3_value_double(value);
  return true;
}

bool SqliteStatement::TextValue(int col, std::string_view* v) const {
  // The value belongs to this statement's connection, used by one thread
  // only (SqliteDb::Open), so reading it outside the column API is safe.
  sqlite3_value* value = sqlite3_column_value(stmt_, col);
  if (sqlite3_value_type(value) == SQLITE_NULL) return false;
  const unsigned char* p = sqlite3_value_text(value);
  *v = p == nullptr ? std::string_view()
                    : std::string_view(reinterpret_cast<const char*>(p),
                                       static_cast<size_t>(sqlite3_value_bytes(value)));
  return true;
}

SqliteDb::~SqliteDb() {
  // close_v2: a statement still held by a reader destroyed after this
  // connection (PrefetchedRows reading through SQL) keeps the connection
  // alive until it is finalized, instead of sqlite3_close failing with
  // SQLITE_BUSY and leaking it.
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

bool SqliteDb::Open(const std::string& path, std::string* error) {
  path_ = path;
  // NOMUTEX: a connection is used by one thread only; SQLite's per-call
  // mutexes cost ~10% of an import.
  const int rc =
      sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    *error = path + ": cannot open as SQLite: " +
             (db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    if (db_ != nullptr) sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  // Pages read straight from a mapping of the file: no page-cache buffer
  // allocated and copied per page read, on each of the import's
  // connections (a tenth of a name-heavy export's import).
  sqlite3_exec(db_, "PRAGMA mmap_size = 1099511627776", nullptr, nullptr, nullptr);
  return true;
}

const std::vector<std::string>& SqliteDb::Columns(std::string_view table) {
  auto it = columns_.find(std::string(table));
  if (it != columns_.end()) return it->second;
  std::vector<std::string> cols;
  std::string err;
  // table_info never fails for a missing table; it returns no rows.
  SqliteStatement st = Prepare("PRAGMA table_info(\"" + std::string(table) + "\")", &err);
  const int name = st.Column("name");
  while (st.Step()) cols.emplace_back(st.Text(name));
  return columns_.emplace(std::string(table), std::move(cols)).first->second;
}

bool SqliteDb::HasTable(std::string_view table) { return !Columns(table).empty(); }

bool SqliteDb::HasColumn(std::string_view table, std::string_view column) {
  const auto& cols = Columns(table);
  return std::find(cols.begin(), cols.end(), column) != cols.end();
}

SqliteStatement SqliteDb::Prepare(const std::string& sql, std::string* error) {
  sqlite3_stmt* stmt = nullptr;
  if (db_ == nullptr || sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    *error = path_ + ": SQL error: " + LastError();
    if (stmt != nullptr) sqlite3_finalize(stmt);
    return SqliteStatement();
  }
  return SqliteStatement(stmt);
}

bool SqliteDb::Exec(const std::string& sql) {
  return db_ != nullptr && sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
}

std::string SqliteDb::LastError() const {
  return db_ != nullptr ? sqlite3_errmsg(db_) : "database not open";
}

}  // namespace tracer::analysis::importers
