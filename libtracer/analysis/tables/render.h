// Renders Tables (table.h) for people and for scripts:
//   text: aligned columns; durations with a unit chosen per value (ns, us, ms,
//         s), percentages with 1 decimal, empty cells as "-"; title above,
//         notes below.
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

std::string RenderTable(const Table& table, OutputFormat format);
// Several tables: text/md/csv separated by blank lines (csv: each preceded by
// a "# <name>" line); json: one object {"<name>": [rows...], ...} plus
// "<name>_notes" arrays when a table has notes.
std::string RenderTables(const std::vector<Table>& tables, OutputFormat format);

// 1234 -> "1.234 us", 12 -> "12 ns", 1500000000 -> "1.500 s". Three
// decimals above ns.
std::string FormatDuration(int64_t ns);
// One cell as the text renderer shows it ("-" when empty).
std::string FormatCell(const Cell& cell, ColumnKind kind);

}  // namespace tracer::analysis
