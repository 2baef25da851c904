// A rendered-agnostic result table: every report (ranges, kernels, groups,
// diff, ...) builds one of these and the renderers (render.h) print it as
// aligned text, CSV, Markdown or JSON. Columns are stable so scripts can parse
// CSV/JSON; cells keep raw values (ns, counts, ratios) and the text renderer
// adds units.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tracer::analysis {

enum class ColumnKind {
  kText,      // std::string
  kCount,     // int64 count
  kDuration,  // int64 ns; text shows ns/us/ms/s, CSV/JSON the raw ns
  kPercent,   // double, 0..100
  kRatio,     // double (B/A)
  kNumber,    // double
  kBytes,     // int64 bytes
};

struct Column {
  std::string name;  // stable machine name, e.g. "total_ns"
  ColumnKind kind = ColumnKind::kText;
  std::string title;  // header for humans; defaults to name
  // A detail of a wide table: left out of text / md unless --columns names
  // it (CSV and JSON always have it), so the table reads at 80-120
  // characters.
  bool detail = false;
};

// std::monostate = empty cell (e.g. "no GPU projection", not zero).
using Cell = std::variant<std::monostate, std::string, int64_t, double>;

struct Table {
  std::string name;   // machine name: "ranges", "kernels", ...
  std::string title;  // shown above the text table
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  // Lines printed under the table (definitions, counts of inherited
  // attributions, warnings).
  std::vector<std::string> notes;
};

}  // namespace tracer::analysis
