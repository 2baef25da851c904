#include "libtracer/analysis/reports/categories.h"

#include <algorithm>
#include <unordered_map>

#include "libtracer/analysis/reports/by_name.h"
#include "libtracer/analysis/tables/demangle.h"

namespace tracer::analysis::reports {
namespace {

const std::vector<std::string>& StandardCategories() {
  static const std::vector<std::string> kStandard = {"GEMM",           "attention", "elementwise",
                                                     "reduction/norm", "softmax",   "memory/copy",
                                                     "communication"};
  return kStandard;
}

// "reduction/norm" -> "reduction_norm": a stable machine column name.
std::string ColumnSlug(std::string_view category) {
  std::string s;
  for (char c : category) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c >= 'A' && c <= 'Z') {
      s += static_cast<char>(c - 'A' + 'a');
    } else {
      s += keep ? c : '_';
    }
  }
  return s;
}

// Category index of every model name, computed once per distinct name.
std::vector<uint16_t> ClassifyNames(const ReportModel& model, const KernelCategorizer& c) {
  std::vector<uint16_t> out(model.name_count(), 0);
  std::vector<bool> done(model.name_count(), false);
  for (const auto& op : model.ops()) {
    if (!done[op.name]) {
      out[op.name] = static_cast<uint16_t>(c.Index(model.Name(op.name)));
      done[op.name] = true;
    }
  }
  return out;
}

uint64_t Dur(const OpFact& op) { return op.duration(); }

}  // namespace

KernelCategorizer::KernelCategorizer() {
  // The built-in rules are part of the program: value() of an error aborts,
  // and categories_test parses them.
  rules_ = ParseRegexRules(DefaultCategoryRulesText(), "built-in kernel_categories.rules").value();
  RebuildCategories();
}

Status KernelCategorizer::AddUserRules(std::string_view text, std::string_view source) {
  auto parsed = ParseRegexRules(text, source);
  if (!parsed.ok()) return parsed.status();
  std::vector<RegexRule> user = std::move(parsed).value();
  user.insert(user.end(), std::make_move_iterator(rules_.begin()),
              std::make_move_iterator(rules_.end()));
  rules_ = std::move(user);
  RebuildCategories();
  return Status();
}

void KernelCategorizer::RebuildCategories() {
  categories_ = StandardCategories();
  for (const auto& r : rules_) {
    if (r.target != "other" &&
        std::find(categories_.begin(), categories_.end(), r.target) == categories_.end()) {
      categories_.push_back(r.target);
    }
  }
  categories_.push_back("other");
  rule_category_.clear();
  for (const auto& r : rules_) {
    rule_category_.push_back(std::find(categories_.begin(), categories_.end(), r.target) -
                             categories_.begin());
  }
}

size_t KernelCategorizer::Index(std::string_view name) const {
  auto m = FirstMatch(rules_, name);
  return m ? rule_category_[*m] : categories_.size() - 1;
}

const std::string& KernelCategorizer::Classify(std::string_view name) const {
  return categories_[Index(name)];
}

Table KernelsByCategoryTable(const ReportModel& model, const KernelCategorizer& categorizer) {
  const auto cat_of = ClassifyNames(model, categorizer);
  const size_t n = categorizer.categories().size();
  std::vector<uint64_t> ops(n, 0), total(n, 0);
  std::vector<std::unordered_map<uint32_t, uint64_t>> by_name(n);
  uint64_t all = 0;
  for (const auto& op : model.ops()) {
    const size_t c = cat_of[op.name];
    ++ops[c];
    total[c] += Dur(op);
    by_name[c][op.name] += Dur(op);
    all += Dur(op);
  }
  Table t;
  t.name = "kernel_categories";
  t.title = "GPU time by kernel category";
  t.columns = {{"category", ColumnKind::kText, "Category"},
               {"ops", ColumnKind::kCount, "Ops"},
               {"names", ColumnKind::kCount, "Names"},
               {"total_ns", ColumnKind::kDuration, "Total"},
               {"share_pct", ColumnKind::kPercent, "Share"},
               {"top_name", ColumnKind::kText, "Most expensive"}};
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return total[a] > total[b]; });
  for (size_t c : order) {
    if (ops[c] == 0) continue;
    uint32_t top = 0;
    uint64_t top_ns = 0;
    for (const auto& [name, ns] : by_name[c]) {
      if (ns > top_ns || (ns == top_ns && model.Name(name) < model.Name(top))) {
        top = name;
        top_ns = ns;
      }
    }
    t.rows.push_back({categorizer.categories()[c], static_cast<int64_t>(ops[c]),
                      static_cast<int64_t>(by_name[c].size()), static_cast<int64_t>(total[c]),
                      all ? 100.0 * total[c] / all : 0.0, ShortKernelName(model.Name(top))});
  }
  t.notes.push_back(
      "Kernels, memcpys and memsets; first matching rule of the category rules wins "
      "(--category-rules FILE adds rules tried first).");
  return t;
}

Table RangeCategoriesTable(const ReportModel& model, const KernelCategorizer& categorizer,
                           bool by_process) {
  const auto cat_of = ClassifyNames(model, categorizer);
  const auto& cats = categorizer.categories();
  // Range instances by name (by process and name with by_process), names in
  // first-seen order.
  const std::vector<NameInstances> names = GroupByName(model, by_process);
  struct Row {
    uint32_t name;
    uint32_t process;
    size_t instances;
    uint64_t total = 0;
    std::vector<uint64_t> by_cat;
  };
  std::vector<Row> rows;
  // stamp[op] = row + 1 once counted for that row: an op inside two nested
  // instances of one name counts once.
  std::vector<uint32_t> stamp(model.ops().size(), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    Row row{names[i].name, names[i].process, names[i].instances.size(), 0,
            std::vector<uint64_t>(cats.size(), 0)};
    ForEachOpOnce(model, names[i].instances, &stamp, static_cast<uint32_t>(i + 1),
                  [&](uint32_t op) {
                    const uint64_t d = Dur(model.ops()[op]);
                    row.by_cat[cat_of[model.ops()[op].name]] += d;
                    row.total += d;
                  });
    if (row.total > 0) rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.total > b.total; });
  Table t;
  t.name = "range_categories";
  t.title = "Range x kernel category (share of the range's GPU op time)";
  t.columns = {{"range", ColumnKind::kText, "Range"},
               {"instances", ColumnKind::kCount, "Instances"},
               {"gpu_op_ns", ColumnKind::kDuration, "GPU op time"}};
  for (const auto& c : cats) t.columns.push_back({ColumnSlug(c) + "_pct", ColumnKind::kPercent, c});
  AddProcessColumn(by_process, &t);
  for (const auto& row : rows) {
    std::vector<Cell> cells;
    if (by_process) cells.push_back(ProcessCell(model, row.process));
    cells.insert(cells.end(),
                 {std::string(model.Name(row.name)), static_cast<int64_t>(row.instances),
                  static_cast<int64_t>(row.total)});
    for (uint64_t v : row.by_cat)
      cells.emplace_back(std::in_place_type<double>, 100.0 * v / row.total);
    t.rows.push_back(std::move(cells));
  }
  t.notes.push_back(
      "GPU op time: kernels, memcpys and memsets attributed to the range (its own, its "
      "children's, inherited worker-thread launches), each op once per range name. Ranges "
      "without GPU work are omitted.");
  return t;
}

}  // namespace tracer::analysis::reports
