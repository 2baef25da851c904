// Kernel categories (docs/design.md section 5): GEMM, attention, elementwise,
// reduction/norm, softmax, memory/copy, communication, other, from ordered
// regex rules (data/kernel_categories.rules is the built-in set; users add
// or override rules with --category-rules). Tables: kernels by category, and
// range x category shares.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

// Text of the built-in rules; identical to data/kernel_categories.rules.
std::string_view DefaultCategoryRulesText();

class KernelCategorizer {
 public:
  KernelCategorizer();  // built-in rules only
  // Rules tried before every rule added earlier (and the built-in ones), so
  // a user file overrides. An error "file:line: ..." on a bad line leaves
  // the rules as they were.
  Status AddUserRules(std::string_view text, std::string_view source);

  // Category of a kernel (or memory op) name; "other" when no rule matches.
  const std::string& Classify(std::string_view name) const;
  size_t Index(std::string_view name) const;
  // Every category, in column order: the eight standard ones, then new
  // names from user rules, "other" last.
  const std::vector<std::string>& categories() const { return categories_; }

 private:
  void RebuildCategories();
  std::vector<RegexRule> rules_;
  std::vector<size_t> rule_category_;
  std::vector<std::string> categories_;
};

// Per category: GPU ops, distinct names, total time, share of all GPU op
// time, the most expensive name.
Table KernelsByCategoryTable(const ReportModel& model, const KernelCategorizer& categorizer);
// Per range name: GPU op time attributed to it (each op once per name) and
// the share of each category in it; shares add up to 100 %. by_process
// (--by rank): per (process, range name), process first.
Table RangeCategoriesTable(const ReportModel& model, const KernelCategorizer& categorizer,
                           bool by_process = false);

}  // namespace tracer::analysis::reports
