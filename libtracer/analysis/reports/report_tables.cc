#include "libtracer/analysis/reports/report_tables.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "libtracer/analysis/reports/categories.h"
#include "libtracer/analysis/reports/comm_compute.h"
#include "libtracer/analysis/reports/cross_rank.h"
#include "libtracer/analysis/reports/gaps.h"
#include "libtracer/analysis/reports/group_metrics.h"
#include "libtracer/analysis/reports/groups.h"
#include "libtracer/analysis/reports/phases.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/timeline.h"
#include "libtracer/analysis/reports/top.h"
#include "libtracer/analysis/tables/metrics_table.h"

namespace tracer::analysis::reports {

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

const std::vector<std::string>& ExtraTableNames() {
  static const std::vector<std::string> kNames = {
      "groups", "timeline", "phases", "categories", "gaps", "top", "ranks", "comm", "metrics"};
  return kNames;
}

bool IsExtraTable(std::string_view name) {
  const auto& n = ExtraTableNames();
  return std::find(n.begin(), n.end(), name) != n.end();
}

namespace {

StatusOr<std::vector<GroupRule>> ReadGroupRules(const std::string& path) {
  const auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseGroupRules(*text, path);
}

StatusOr<Table> BuildGroupsTable(const ReportModel& model, const ExtraTableOptions& options) {
  if (options.groups_file.empty()) {
    return Status::Error("--table groups needs --groups FILE or a shipped name (mlora, peft)");
  }
  auto rules = ReadGroupRules(options.groups_file);
  if (!rules.ok()) return rules.status();
  GroupsOptions g;
  g.by = SplitComma(options.by);
  g.by_process = options.report.by_process;
  return GroupsTable(model, *rules, g);
}

// metrics: per range and per kernel, + per group with --groups.
StatusOr<std::vector<Table>> BuildMetricsTables(const AnalyzedTrace& analyzed,
                                                const ReportModel& model,
                                                const ExtraTableOptions& options) {
  std::vector<Table> out = MetricsTables(analyzed, options.report);
  if (options.groups_file.empty()) return out;
  auto rules = ReadGroupRules(options.groups_file);
  if (!rules.ok()) return rules.status();
  GroupsOptions g;
  g.by = SplitComma(options.by);
  auto groups = GroupMetricsTable(analyzed, model, *rules, g);
  if (!groups.ok()) return groups.status();
  out.push_back(std::move(groups).value());
  return out;
}

// phases: the user's rules (--phase-rules FILE) or the built-in ones.
StatusOr<Table> BuildPhasesTable(const ReportModel& model, const ExtraTableOptions& options) {
  StatusOr<std::string> text = std::string(DefaultPhaseRulesText());
  if (!options.phase_rules_file.empty()) text = ReadTextFile(options.phase_rules_file);
  if (!text.ok()) return text.status();
  const auto rules = ParseRegexRules(
      *text, options.phase_rules_file.empty() ? "built-in phases.rules" : options.phase_rules_file);
  if (!rules.ok()) return rules.status();
  return PhasesTable(model, *rules, {options.step_range});
}

// categories: range x category and kernels by category (--category-rules
// FILE tried first).
StatusOr<std::vector<Table>> BuildCategoryTables(const ReportModel& model,
                                                 const ExtraTableOptions& options) {
  KernelCategorizer categorizer;
  if (!options.category_rules_file.empty()) {
    const auto text = ReadTextFile(options.category_rules_file);
    if (!text.ok()) return text.status();
    if (Status s = categorizer.AddUserRules(*text, options.category_rules_file); !s.ok()) return s;
  }
  return std::vector<Table>{RangeCategoriesTable(model, categorizer, options.report.by_process),
                            KernelsByCategoryTable(model, categorizer)};
}

// The table(s) of one name.
StatusOr<std::vector<Table>> BuildExtraTable(const AnalyzedTrace& analyzed,
                                             const ReportModel& model, const std::string& name,
                                             const ExtraTableOptions& options) {
  auto one = [](StatusOr<Table> table) -> StatusOr<std::vector<Table>> {
    if (!table.ok()) return table.status();
    std::vector<Table> out;
    out.push_back(std::move(table).value());
    return out;
  };
  if (name == "groups") return one(BuildGroupsTable(model, options));
  if (name == "metrics") return BuildMetricsTables(analyzed, model, options);
  if (name == "timeline") return one(TimelineTable(model, {options.step_range, options.iteration}));
  if (name == "phases") return one(BuildPhasesTable(model, options));
  if (name == "categories") return BuildCategoryTables(model, options);
  if (name == "gaps") return one(GapsTable(model, options.report.by_process));
  if (name == "top") return one(TopKernelsTable(model, options.top, options.report.by_process));
  if (name == "comm") return one(CommComputeTable(model, {options.step_range, options.report}));
  if (name == "ranks") {
    return one(CrossRankTable(analyzed, model, {options.step_range, options.report}));
  }
  return Status::Error("unknown table '" + name + "'");
}

}  // namespace

StatusOr<std::vector<Table>> BuildExtraTables(const AnalyzedTrace& analyzed,
                                              const std::vector<std::string>& names,
                                              const ExtraTableOptions& options) {
  std::vector<Table> out;
  if (names.empty()) return out;
  const ReportModel model(analyzed);
  for (const std::string& name : names) {
    auto tables = BuildExtraTable(analyzed, model, name, options);
    if (!tables.ok()) return tables.status();
    for (Table& t : *tables) out.push_back(std::move(t));
  }
  return out;
}

std::string_view ExtraTablesHelp() {
  return R"(
More tables (--table groups,timeline,phases,categories,gaps,top,ranks,comm,metrics):
  groups         sums over range names from a groups file (--groups FILE, or
                 the name of a shipped one: mlora, peft (tracer.torch.annotate
                 names of a peft model), installed in share/tracer/groups; the
                 notation of mLoRA metric groups: f_lora_{adapter} = f_dropout_{adapter}
                 + f_lora_a_{adapter} + ...). --groups alone adds this table
                 after the default tables. A _<digits> suffix is the layer
                 ({layer_id}), summed unless --by layer_id; --by adapter,...
                 keeps placeholders apart; the most specific term binds a name.
                 Columns: CPU, GPU projected, GPU busy, kernel time (each
                 kernel once per group), defined under the table.
  timeline       the ranges of one step in order, with depth, start offset,
                 CPU and GPU time (--iteration N: the step numbered N, default
                 the first recorded; steps carry the program's own numbers
                 from 0, see Selections; --step-range NAME,
                 default: the repeated top-level range covering the most time;
                 numbered names such as ProfilerStep#3 count as one).
  phases         forward / backward / optimizer / other share of each step
                 from regex rules (--phase-rules FILE; default data/phases.rules);
                 shares add up to 100 % by construction.
  categories     range x kernel category (GEMM, attention, elementwise,
                 reduction/norm, softmax, memory/copy, communication, other)
                 and GPU time by category (--category-rules FILE adds rules
                 tried before data/kernel_categories.rules).
  gaps           per range: GPU idle inside its projected span, launches,
                 launch API time, average gap between launch calls.
  top            the --top N (default 5) most expensive kernels per range.
  ranks          across processes (ranks; one trace file each, or an export
                 holding several): for each step number, all steps, and
                 each range name, every process's CPU and GPU time reduced to
                 min / median / max, the slowest process and the spread
                 (max - min, % of the median): the straggler. --filter,
                 --domain and --top apply to the range rows.
  comm           communication vs computation per process, per step and per
                 range (Holistic Trace Analysis definitions): GPU span, busy,
                 idle, computation, communication (NCCL kernels), their
                 overlap, memcpy/memset time.
  metrics        PM sampling metrics (tracer run --pm-metrics): per range name
                 and metric, and per kernel name and metric (+ per group with
                 --groups, --by keys apart; --by rank per process): GPU span,
                 samples, time-weighted mean, min, max, coverage. Shown by
                 default when the trace holds PM samples. A sample holds one
                 metric's value over [start, end) for a whole device.
                 GPU span: per range instance and device, first op start to
                 last op end over its ops on that device's streams (streams
                 running at once are one span; children included), summed
                 over instances and devices; per kernel, its executions.
                 Mean: sum(value x overlap) / sum(overlap) over the samples of
                 the span's own device, so a sample straddling a span edge
                 counts by its overlap and a range shorter than one sample
                 takes that sample's value. Coverage: overlap / GPU span (a
                 device where the metric was not sampled counts as
                 uncovered). Samples: (span, sample) pairs that overlap.
                 Concurrent kernels on one device each take the sample's
                 full value (PM sampling does not split a device).
)";
}

}  // namespace tracer::analysis::reports
