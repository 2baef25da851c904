// Test helper: reads a cell of a Table by row key and column name, so golden
// tests say which value they check.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::testing {

inline int ColumnIndex(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "table " << t.name << " has no column " << name;
  return -1;
}

// The row whose text columns named in keys hold the given values.
inline const std::vector<Cell>* FindRow(
    const Table& t, const std::vector<std::pair<std::string, std::string>>& keys) {
  for (const auto& row : t.rows) {
    bool match = true;
    for (const auto& [col, value] : keys) {
      const int c = ColumnIndex(t, col);
      const auto* s = c >= 0 ? std::get_if<std::string>(&row[c]) : nullptr;
      if (s == nullptr || *s != value) match = false;
    }
    if (match) return &row;
  }
  return nullptr;
}

// Integer cell; -1 when empty (tests of "no projection" check IsEmpty).
inline int64_t IntAt(const Table& t, const std::vector<Cell>& row, const std::string& col) {
  const int c = ColumnIndex(t, col);
  if (c < 0) return -2;
  if (const auto* i = std::get_if<int64_t>(&row[c])) return *i;
  return -1;
}

inline double DoubleAt(const Table& t, const std::vector<Cell>& row, const std::string& col) {
  const int c = ColumnIndex(t, col);
  if (const auto* d = c >= 0 ? std::get_if<double>(&row[c]) : nullptr) return *d;
  return -1;
}

inline std::string TextAt(const Table& t, const std::vector<Cell>& row, const std::string& col) {
  const int c = ColumnIndex(t, col);
  if (const auto* s = c >= 0 ? std::get_if<std::string>(&row[c]) : nullptr) return *s;
  return "<not text>";
}

inline bool IsEmpty(const Table& t, const std::vector<Cell>& row, const std::string& col) {
  const int c = ColumnIndex(t, col);
  return c >= 0 && std::holds_alternative<std::monostate>(row[c]);
}

}  // namespace tracer::analysis::testing
