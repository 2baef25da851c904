// --filter, --sort and --top on a finished table, for the tables whose
// builders do not apply them themselves: tracer report's groups, timeline,
// phases, categories, gaps and top tables, and tracer diff's joined table.
// Generic over the columns: the row's name is its range / group / category /
// kernel column, "total" its first time column, and so on (RowSelection).
#pragma once

#include <cstddef>
#include <string_view>

#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis::reports {

struct RowSelection {
  // filter (checked with RangeFilter::Check first), top and sort; domain is
  // not used here (the builders see it).
  ReportOptions report;
  // Whether --sort was given: without it the builder's order stays (a
  // timeline in time order, phases by step).
  bool sort_given = false;
  // tracer diff's default: by the size of the change, |B-A| of the first
  // time value (its first *_delta column), largest first; rows found in one
  // run only (no B-A) after the others.
  bool by_change = false;
  // Whether top applies (the "top" table reads --top as kernels per range).
  bool trim = true;
};

// The column holding the row's name: range, group, kernel or name, the
// first present; npos when none (phases: rows are steps; kernels by
// category: not per range).
size_t NameColumn(const Table& t);

// Applies s to t in that order: filter on the name column (a note says when
// the table has none), sort, first N rows (with a note, as the core tables).
void SelectRows(const RowSelection& s, Table* t);

}  // namespace tracer::analysis::reports
