// PM metrics per group (`tracer report --table metrics --groups FILE`): the
// groups table's rows (groups.h, --by keys included), each metric averaged
// over the member instances it counts, with the definitions of
// tables/metrics_table.h (a member nested in another member of the same row
// counts once, through its ancestor's span).
#pragma once

#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/group_rules.h"
#include "libtracer/analysis/reports/groups.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

// Table "group-metrics": group, the --by keys, metric, instances, GPU span,
// samples, mean, min, max, coverage.
StatusOr<Table> GroupMetricsTable(const AnalyzedTrace& analyzed, const ReportModel& model,
                                  const std::vector<GroupRule>& rules,
                                  const GroupsOptions& options = {});

}  // namespace tracer::analysis::reports
