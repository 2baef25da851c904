// Range instances grouped by range name, and "each op once per name"
// iteration: the common shape of the per-range-name tables.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::reports {

struct NameInstances {
  uint32_t name = 0;
  uint32_t process = 0;             // the instances' process when split by process
  std::vector<uint32_t> instances;  // range indexes
};

// Every range name with its instances, in order of first appearance; with
// by_process (--by rank), one entry per (process, name) instead.
std::vector<NameInstances> GroupByName(const ReportModel& model, bool by_process = false);

// With by_process: a leading "process" column (as the core tables have it)
// and its cell for each row.
void AddProcessColumn(bool by_process, Table* t);
std::string ProcessCell(const ReportModel& model, uint32_t process);

// Calls fn(op index) for every op attributed to any of the instances, each
// op once even when nested instances of the name both contain it. stamp is
// scratch space of model.ops().size() entries, and key a value distinct for
// every call made with the same stamp (e.g. the row number + 1).
void ForEachOpOnce(const ReportModel& model, const std::vector<uint32_t>& instances,
                   std::vector<uint32_t>* stamp, uint32_t key,
                   const std::function<void(uint32_t)>& fn);

}  // namespace tracer::analysis::reports
