#include "libtracer/analysis/reports/report_tables.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "libtracer/analysis/reports/categories.h"
#include "libtracer/analysis/reports/gaps.h"
#include "libtracer/analysis/reports/groups.h"
#include "libtracer/analysis/reports/phases.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/timeline.h"
#include "libtracer/analysis/reports/top.h"

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
  static const std::vector<std::string> kNames = {"groups",     "timeline", "phases",
                                                  "categories", "gaps",     "top"};
  return kNames;
}

bool IsExtraTable(std::string_view name) {
  const auto& n = ExtraTableNames();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::vector<Table> BuildExtraTables(const AnalyzedTrace& analyzed,
                                    const std::vector<std::string>& names,
                                    const ExtraTableOptions& options) {
  std::vector<Table> out;
  if (names.empty()) return out;
  const ReportModel model(analyzed);
  for (const std::string& name : names) {
    if (name == "groups") {
      if (options.groups_file.empty()) {
        throw std::runtime_error(
            "--table groups needs --groups FILE (e.g. data/groups/mlora.groups)");
      }
      const auto rules = ParseGroupRules(ReadTextFile(options.groups_file), options.groups_file);
      GroupsOptions g;
      g.by = SplitComma(options.by);
      out.push_back(GroupsTable(model, rules, g));
    } else if (name == "timeline") {
      out.push_back(TimelineTable(model, {options.step_range, options.iteration}));
    } else if (name == "phases") {
      const std::string text = options.phase_rules_file.empty()
                                   ? std::string(DefaultPhaseRulesText())
                                   : ReadTextFile(options.phase_rules_file);
      const auto rules =
          ParseRegexRules(text, options.phase_rules_file.empty() ? "built-in phases.rules"
                                                                 : options.phase_rules_file);
      out.push_back(PhasesTable(model, rules, {options.step_range}));
    } else if (name == "categories") {
      KernelCategorizer categorizer;
      if (!options.category_rules_file.empty()) {
        categorizer.AddUserRules(ReadTextFile(options.category_rules_file),
                                 options.category_rules_file);
      }
      out.push_back(RangeCategoriesTable(model, categorizer));
      out.push_back(KernelsByCategoryTable(model, categorizer));
    } else if (name == "gaps") {
      out.push_back(GapsTable(model));
    } else if (name == "top") {
      out.push_back(TopKernelsTable(model, options.top));
    } else {
      throw std::runtime_error("unknown table '" + name + "'");
    }
  }
  return out;
}

std::string_view ExtraTablesHelp() {
  return R"(
More tables (--table groups,timeline,phases,categories,gaps,top):
  groups         sums over range names from a groups file (--groups FILE; the
                 notation of seeds/000: f_lora_{adapter} = f_dropout_{adapter}
                 + f_lora_a_{adapter} + ...; see data/groups/*.groups). A
                 _<digits> suffix is the layer ({layer_id}), summed unless
                 --by layer_id; --by adapter,... keeps placeholders apart.
                 Columns: CPU, GPU projected, GPU busy, kernel time (each
                 kernel once per group), defined under the table.
  timeline       the ranges of one step in order, with depth, start offset,
                 CPU and GPU time (--iteration N, 0-based; --step-range NAME,
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
)";
}

}  // namespace tracer::analysis::reports
