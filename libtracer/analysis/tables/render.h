// Renders Tables (table.h) for people and for scripts:
//   text: aligned columns; durations with a unit chosen per value (ns, us, ms,
//         s) or one per column (--timeunit), percentages with 1 decimal,
//         empty cells as "-", columns empty in every row left out; title
//         above, notes below.
//   csv:  RFC 4180 (quoted when needed), header = column names, raw numbers
//         (durations as integer ns), empty cells empty; notes not included.
//   md:   GitHub table with the human formatting of text.
//   json: array of objects keyed by column name; numbers as numbers, null for
//         empty cells.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

enum class OutputFormat { kText, kCsv, kMarkdown, kJson };

// "text", "csv", "md" (or "markdown"), "json". False on anything else.
bool ParseOutputFormat(std::string_view s, OutputFormat* out);

// --timeunit (as nsys stats): kAuto picks a unit per value in text / md and
// prints ns in CSV; a fixed unit is used by every duration column, whose
// header carries it ("Total (ms)"; CSV: "total_ms", exact decimals). JSON
// always stays in integer ns under the "_ns" names (stable for scripts).
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

// 1234 -> "1.234 us", 12 -> "12 ns", 1500000000 -> "1.500 s". Three
// decimals above ns.
std::string FormatDuration(int64_t ns);
// One cell as the text renderer shows it ("-" when empty).
std::string FormatCell(const Cell& cell, ColumnKind kind);

}  // namespace tracer::analysis
