#include "libtracer/analysis/export/sqlite_tables.h"

#include <sqlite3.h>

#include <cctype>

namespace tracer::analysis::exporters {
namespace {

const char* SqlType(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kText:
      return "TEXT";
    case ColumnKind::kCount:
    case ColumnKind::kDuration:
    case ColumnKind::kBytes:
      return "INTEGER";
    case ColumnKind::kPercent:
    case ColumnKind::kRatio:
    case ColumnKind::kNumber:
      return "REAL";
  }
  return "";
}

// Double quotes around an identifier (column names are machine names, but a
// --by key is whatever the user typed).
std::string Quote(const std::string& id) {
  std::string q = "\"";
  for (char c : id) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

class Db {
 public:
  explicit Db(sqlite3* db) : db_(db) {}
  bool Exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      error_ = msg ? msg : "unknown error";
      sqlite3_free(msg);
      return false;
    }
    return true;
  }
  // Inserts rows of cells (monostate = NULL) with one prepared statement.
  bool Insert(const std::string& sql, const std::vector<std::vector<Cell>>& rows) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      error_ = sqlite3_errmsg(db_);
      return false;
    }
    bool ok = true;
    for (size_t r = 0; ok && r < rows.size(); ++r) {
      for (size_t i = 0; i < rows[r].size(); ++i) {
        const int at = static_cast<int>(i) + 1;
        const Cell& c = rows[r][i];
        if (const auto* text = std::get_if<std::string>(&c)) {
          sqlite3_bind_text(s, at, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
        } else if (const auto* n = std::get_if<int64_t>(&c)) {
          sqlite3_bind_int64(s, at, *n);
        } else if (const auto* d = std::get_if<double>(&c)) {
          sqlite3_bind_double(s, at, *d);
        } else {
          sqlite3_bind_null(s, at);
        }
      }
      if (sqlite3_step(s) != SQLITE_DONE) {
        error_ = sqlite3_errmsg(db_);
        ok = false;
      }
      sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return ok;
  }
  const std::string& error() const { return error_; }

 private:
  sqlite3* db_;
  std::string error_;
};

bool WriteTable(Db& db, const Table& t) {
  const std::string name = Quote(SqliteTableName(t.name));
  std::string create = "DROP TABLE IF EXISTS " + name + "; CREATE TABLE " + name + " (";
  std::string insert = "INSERT INTO " + name + " VALUES (";
  for (size_t i = 0; i < t.columns.size(); ++i) {
    create += (i ? ", " : "") + Quote(t.columns[i].name) + " " + SqlType(t.columns[i].kind);
    insert += i ? ", ?" : "?";
  }
  if (!db.Exec(create + ");") || !db.Insert(insert + ")", t.rows)) return false;
  std::vector<std::vector<Cell>> notes;
  for (size_t i = 0; i < t.notes.size(); ++i) {
    notes.push_back({t.name, static_cast<int64_t>(i), t.notes[i]});
  }
  return db.Exec("DELETE FROM TRACER_TABLE_NOTES WHERE tableName = '" + t.name + "';") &&
         db.Insert("INSERT INTO TRACER_TABLE_NOTES VALUES (?, ?, ?)", notes);
}

}  // namespace

std::string SqliteTableName(const std::string& table_name) {
  std::string out = "TRACER_";
  for (char c : table_name) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  return out;
}

bool AppendSqliteTables(const std::vector<Table>& tables, const std::string& path,
                        std::string* error) {
  if (tables.empty()) return true;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    *error = "cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return false;
  }
  Db d(db);
  bool ok = d.Exec(
      "BEGIN; CREATE TABLE IF NOT EXISTS TRACER_TABLE_NOTES (tableName TEXT NOT NULL, "
      "line INTEGER NOT NULL, note TEXT NOT NULL);");
  for (size_t i = 0; ok && i < tables.size(); ++i) ok = WriteTable(d, tables[i]);
  ok = ok && d.Exec("COMMIT;");
  if (!ok) *error = "cannot write " + path + ": " + d.error();
  if (sqlite3_close(db) != SQLITE_OK && ok) {
    *error = "cannot close " + path;
    ok = false;
  }
  return ok;
}

}  // namespace tracer::analysis::exporters
