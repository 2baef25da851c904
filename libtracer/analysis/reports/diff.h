// Two runs side by side (`tracer diff A B`): rows of the same table computed
// on each trace are joined by key columns; for each value column the output
// has A, B, B-A and B/A. Rows present on one side only are kept and marked
// ("A only" / "B only") after the matched ones.
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct DiffSpec {
  std::vector<std::string> keys;    // column names identifying a row
  std::vector<std::string> values;  // numeric columns to compare
  // Key columns shown after the values (long names, e.g. a kernel's full
  // name: the numbers stay on screen); rows are matched on them too.
  std::vector<std::string> tail_keys = {};
};

// An error when a named column is missing from a or b. B/A is empty when A
// is 0 or either side is missing.
StatusOr<Table> DiffTables(const Table& a, const Table& b, const DiffSpec& spec);

}  // namespace tracer::analysis::reports
