// Reads cells of a report Table (table.h) by column name, for the proof
// tests that compare our tables with the reference tools' numbers.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::importers::testing {

inline int ColumnIndex(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "table " << t.name << " has no column " << name;
  return -1;
}

inline std::string CellText(const Table& t, size_t row, const std::string& column) {
  const int c = ColumnIndex(t, column);
  if (c < 0) return {};
  const Cell& cell = t.rows[row][c];
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  if (const auto* i = std::get_if<int64_t>(&cell)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell)) return std::to_string(*d);
  return {};
}

// -1 for an empty cell.
inline int64_t CellInt(const Table& t, size_t row, const std::string& column) {
  const int c = ColumnIndex(t, column);
  if (c < 0) return -1;
  const Cell& cell = t.rows[row][c];
  if (const auto* i = std::get_if<int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell)) return static_cast<int64_t>(*d);
  return -1;
}

// Row index by the concatenation of key columns joined with '|'.
inline std::map<std::string, size_t> RowsByKey(const Table& t,
                                               const std::vector<std::string>& key_columns) {
  std::map<std::string, size_t> rows;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::string key;
    for (size_t k = 0; k < key_columns.size(); ++k) {
      if (k != 0) key += "|";
      key += CellText(t, r, key_columns[k]);
    }
    rows[key] = r;
  }
  return rows;
}

}  // namespace tracer::analysis::importers::testing
