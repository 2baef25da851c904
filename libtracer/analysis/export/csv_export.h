// `tracer export --format csv`: every report table as one CSV file in a
// directory (<dir>/<table name>.csv, render.h's CSV: raw ns, stable column
// names), for spreadsheets and scripts.
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::exporters {

// The tables of `tracer report --table all` plus the issue-4 tables that
// need no extra input: categories, gaps, top, and phases / timeline
// (iteration 0) when the trace has a step range.
std::vector<Table> AllTables(const Trace& trace);

// Creates dir if needed and writes one <name>.csv per table. False with a
// one-line *error naming the path on failure.
bool WriteCsvTables(const std::vector<Table>& tables, const std::string& dir, std::string* error);

// Both of the above, plus `extra` (tables the command built from its
// options, e.g. groups.csv for --groups): the `--format csv` writer.
bool WriteCsv(const Trace& trace, const std::string& dir, std::string* error,
              const std::vector<Table>& extra = {});

}  // namespace tracer::analysis::exporters
