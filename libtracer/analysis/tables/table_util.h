// Helpers shared by the table builders (tables.h): duration statistics, row
// grouping keys, the range-name filter, and sort + top.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/analysis/aggregate/duration_stats.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/core/status.h"

namespace tracer::analysis {

struct RangeRow;  // table_rows.h

// An empty table; with o.by_process its first column is "process".
Table NewTable(std::string_view name, std::string_view title, const ReportOptions& o);

enum class WithStddev { kNo, kYes };
// Appends the duration-statistics columns total, avg, med, min, max (and
// stddev): names "<name_prefix>total_ns", ...; titles "Total", ... without a
// title prefix, else "<title_prefix> total", ....
void AddStatColumns(Table* table, std::string_view name_prefix, std::string_view title_prefix,
                    WithStddev stddev);
// Appends the cells of AddStatColumns for s; empty cells when !present ("no
// value", not zero).
void AddStatCells(std::vector<Cell>* row, const DurationStats& s, WithStddev stddev,
                  bool present = true);

// Selects ranges by --filter and --domain.
class RangeFilter {
 public:
  // Why o.filter is not a valid regular expression (ok when it is); a filter
  // that is not accepts no range, so callers check first.
  static Status Check(const ReportOptions& o);
  explicit RangeFilter(const ReportOptions& o);
  ~RangeFilter();
  bool Accepts(const AnalyzedTrace& t, size_t process, const RangeRecord& r) const;
  // The same rule on names (the streaming path knows names only at the end).
  bool AcceptsName(std::string_view domain, std::string_view name) const;

 private:
  struct Regex;  // keeps <regex> out of this header
  std::string domain_;
  std::unique_ptr<Regex> regex_;
  bool reject_all_ = false;  // an invalid filter
};

// Sorts rows by a column (total / count / avg / name chosen by the caller
// through column indexes; largest first for numbers, A-Z for names), then
// keeps the first o.top rows. Columns given as -1 are not used.
void SortAndTrim(Table* table, const ReportOptions& o, int total_col, int count_col, int avg_col,
                 int name_col);

inline Cell Int(int64_t v) { return Cell(v); }
inline Cell Int(uint64_t v) { return Cell(static_cast<int64_t>(v)); }
inline Cell Text(std::string_view s) { return Cell(std::string(s)); }
// v when present, else an empty cell ("no value", not zero). Out of line:
// GCC 12 warns falsely about a variant built in a conditional expression.
Cell IntOrEmpty(bool present, int64_t v);
Cell DoubleOrEmpty(bool present, double v);

// 100 * part / whole, empty when whole is 0.
Cell SharePercent(int64_t part, int64_t whole);
// nsys's "Style" of a range row: "PushPop", "StartEnd" or both.
std::string RangeStyle(const RangeRow& row);
// A kernel's short demangled name, "(unnamed)" when it has none.
std::string KernelLabel(std::string_view raw);
// Labels of the kernels (string ids) one table shows: short names made
// unique among them (demangle.h UniqueShortNames).
std::unordered_map<uint32_t, std::string> KernelLabels(const StringTable& strings,
                                                       std::vector<uint32_t> ids);

// "123" or "123 (name)" for a thread of a process.
std::string ThreadLabel(const Trace& trace, const ProcessTrace& p, uint32_t thread);

}  // namespace tracer::analysis
