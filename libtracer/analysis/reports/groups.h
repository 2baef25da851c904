// The groups table: user-defined sums over range names (group_rules.h for
// the notation). One row per group instance (the group name with its
// placeholders bound, e.g. f_lora_alpaca), plus one per value of each --by
// key (e.g. --by layer_id keeps layers apart). Columns are defined in the
// table's notes and in GroupsTable below.
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/reports/group_rules.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct GroupsOptions {
  // Placeholders kept apart as extra key columns ("layer_id", "adapter").
  std::vector<std::string> by;
  // --by rank: each row split by process, a leading "process" column
  // (GroupsTable only; kernel % stays a share of the whole trace's kernels).
  bool by_process = false;
};

// Per row:
//   members      distinct range names that matched a term
//   instances    member range instances counted (see below)
//   cpu          sum of their CPU durations
//   gpu_proj     sum of their projected GPU spans (empty: no GPU work)
//   gpu_busy     sum of their GPU busy times
//   kernel time  sum of the kernels attributed to any member, each kernel
//                once per row even when nested members both contain it
//   kernel %     kernel time / all kernel time of the trace
// A member instance nested inside another member instance of the same row
// is not counted again (its time is already inside its ancestor's).
// An error "file:line: ambiguous ..." when a range name matches a rule in
// more than one way (a term with two splits, or equally specific terms
// giving different rows; see group_rules.h). A rule that matches no range is not
// an error (one groups file serves several trainers): it is listed in the
// notes.
StatusOr<Table> GroupsTable(const ReportModel& model, const std::vector<GroupRule>& rules,
                            const GroupsOptions& options = {});

// The rows of GroupsTable in its order, each with the member instances it
// counts (ReportModel indexes; a member nested in another member of the same
// row is left out: its time is inside its ancestor's). The same errors.
struct GroupMembers {
  std::string group;
  std::vector<std::string> by;  // values of GroupsOptions::by
  std::vector<uint32_t> instances;
};
StatusOr<std::vector<GroupMembers>> GroupRowMembers(const ReportModel& model,
                                                    const std::vector<GroupRule>& rules,
                                                    const GroupsOptions& options = {});

}  // namespace tracer::analysis::reports
