// Renders Tables (table.h) for people and for scripts:
//   text: aligned columns; durations in one unit per column, named in its
//         header ("Total (ms)"), numbers without unit in the cells (see
//         ColumnTimeUnit); percentages with 1 decimal,
//         empty cells as "-", columns empty in every row left out; title
//         above, notes below.
//   csv:  RFC 4180 (quoted when needed), header = column names, raw numbers
//         (durations as integer ns), empty cells empty; notes not included.
//   md:   GitHub table with the human formatting of text.
//   json: array of objects keyed by column name; numbers as numbers, null for
//         empty cells.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

enum class OutputFormat { kText, kCsv, kMarkdown, kJson };

// "text", "csv", "md" (or "markdown"), "json". False on anything else.
bool ParseOutputFormat(std::string_view s, OutputFormat* out);

// --timeunit (as nsys stats): kAuto picks a unit per column in text / md /
// html (ColumnTimeUnit) and prints ns in CSV; a fixed unit is used by every
// duration column (CSV: "total_ms", exact decimals). Text / md headers always
// carry the unit ("Total (ms)"). JSON always stays in integer ns under the
// "_ns" names (stable for scripts).
enum class TimeUnit { kAuto, kNs, kUs, kMs, kS };
// "ns"/"nsec", "us"/"usec", "ms"/"msec", "s"/"sec". False on anything else.
bool ParseTimeUnit(std::string_view s, TimeUnit* out);

struct RenderOptions {
  TimeUnit time_unit = TimeUnit::kAuto;
  // --columns: only these columns (machine name as in the CSV header, or the
  // header title, case-insensitive), in this order; a table keeps those it
  // has (the first column of a table that has none of them). Empty: all
  // columns, and text / md leave out those empty in every row.
  std::vector<std::string> columns;
};

// The names in o.columns no table of `tables` has (to reject a typo).
std::vector<std::string> UnknownColumns(const std::vector<Table>& tables, const RenderOptions& o);

std::string RenderTable(const Table& table, OutputFormat format, const RenderOptions& o = {});
// Several tables: text/md/csv separated by blank lines (csv: each preceded by
// a "# <name>" line); json: one object {"<name>": [rows...], ...} plus
// "<name>_notes" arrays when a table has notes.
std::string RenderTables(const std::vector<Table>& tables, OutputFormat format,
                         const RenderOptions& o = {});

// The unit each duration column of `t` is shown in (kAuto for the other
// columns): `forced` unless kAuto, else the smallest of ns, us, ms, s in
// which the largest magnitude among its first `max_rows` rows has at most
// four digits before the point. Four, not three: a column mixing a 5 ms step
// and a 3 us kernel then still shows the kernel to the ns (5000.000 / 3.000
// us) instead of 0.003 ms, and its widest cell ("9999.999") is narrower than
// a per-value "999.999 us"; nsys's fixed ns would print a 2.5 s step as
// 2500000000. A diff's "x_a" / "x_b" columns share one unit, so that A and B
// read side by side.
std::vector<TimeUnit> ColumnTimeUnits(const Table& t, TimeUnit forced = TimeUnit::kAuto,
                                      size_t max_rows = SIZE_MAX);
// "ns", "us", "ms", "s" (kAuto: "ns").
const char* TimeUnitName(TimeUnit u);
// A duration cell in unit u without the unit: ns whole, else 3 decimals
// ("-" when empty). u = kAuto: FormatDuration.
std::string FormatDurationIn(const Cell& cell, TimeUnit u);

// 1234 -> "1.234 us", 12 -> "12 ns", 1500000000 -> "1.500 s". Three
// decimals above ns. For a lone value (chart labels, messages); tables use
// one unit per column.
std::string FormatDuration(int64_t ns);
// One cell with its own unit ("-" when empty); durations as FormatDuration.
std::string FormatCell(const Cell& cell, ColumnKind kind);

}  // namespace tracer::analysis
