// Report tables in an SQLite database (`tracer export --format sqlite
// --groups ...`): table "groups" becomes TRACER_GROUPS, one SQL column per
// table column (its machine name), typed TEXT, INTEGER (counts, ns, bytes)
// or REAL (percent, ratio); empty cells are NULL. The notes go to
// TRACER_TABLE_NOTES (tableName, line, note).
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::exporters {

// "groups" -> "TRACER_GROUPS", "range-kernels" -> "TRACER_RANGE_KERNELS".
std::string SqliteTableName(const std::string& table_name);

// Adds the tables to the existing database at path (replacing tables of the
// same names). False with a one-line *error naming the file on failure.
bool AppendSqliteTables(const std::vector<Table>& tables, const std::string& path,
                        std::string* error);

}  // namespace tracer::analysis::exporters
