#include "libtracer/analysis/reports/groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "libtracer/analysis/reports/natural_order.h"

namespace tracer::analysis::reports {
namespace {

using Binding = std::map<std::string, std::string>;

std::string Describe(const Binding& b) {
  std::string s;
  for (const auto& [k, v] : b) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s.empty() ? "(no placeholders)" : s;
}

// "file:12" -> "12" and "file".
std::string LineOf(const std::string& where) { return where.substr(where.rfind(':') + 1); }
std::string FileOf(const std::string& where) { return where.substr(0, where.rfind(':')); }

struct RowKey {
  size_t rule = 0;
  std::string group;
  std::vector<std::string> by;
  bool operator<(const RowKey& o) const {
    if (rule != o.rule) return rule < o.rule;
    if (group != o.group) return NaturalLess(group, o.group);
    for (size_t i = 0; i < by.size() && i < o.by.size(); ++i) {
      if (by[i] != o.by[i]) return NaturalLess(by[i], o.by[i]);
    }
    return false;
  }
};

struct Row {
  std::set<uint32_t> member_names;
  std::vector<uint32_t> instances;
};

}  // namespace

Table GroupsTable(const ReportModel& model, const std::vector<GroupRule>& rules,
                  const GroupsOptions& options) {
  const auto& ranges = model.ranges();
  // Distinct range names and their instances.
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<uint32_t> names;
  std::vector<std::vector<uint32_t>> instances;
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    auto [it, inserted] = slot.emplace(ranges[r].name, names.size());
    if (inserted) {
      names.push_back(ranges[r].name);
      instances.emplace_back();
    }
    instances[it->second].push_back(r);
  }

  std::map<RowKey, Row> rows;
  // One groups file serves several trainers: rules and terms that match
  // nothing are reported, one line each kind, not errors.
  std::vector<std::string> unmatched_rules, unmatched_terms;
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const GroupRule& rule = rules[ri];
    std::vector<bool> term_matched(rule.terms.size(), false);
    for (size_t ni = 0; ni < names.size(); ++ni) {
      const std::string_view name = model.Name(names[ni]);
      std::map<RowKey, Binding> keys;  // the rows this name falls into
      if (std::any_of(rule.excluded.begin(), rule.excluded.end(),
                      [&](const NamePattern& x) { return !MatchTerm(x, name).empty(); })) {
        continue;
      }
      for (size_t ti = 0; ti < rule.terms.size(); ++ti) {
        const auto bindings = MatchTerm(rule.terms[ti], name);
        if (bindings.empty()) continue;
        if (bindings.size() > 1) {
          throw std::runtime_error(rule.where + ": ambiguous rule: range '" + std::string(name) +
                                   "' matches term '" + rule.terms[ti].text() + "' as " +
                                   Describe(bindings[0]) + " and as " + Describe(bindings[1]));
        }
        term_matched[ti] = true;
        RowKey key{ri, rule.group.Substitute(bindings[0]), {}};
        for (const auto& b : options.by) {
          auto v = bindings[0].find(b);
          key.by.push_back(v == bindings[0].end() ? "" : v->second);
        }
        keys.emplace(key, bindings[0]);
      }
      if (keys.size() > 1) {
        auto first = keys.begin(), second = std::next(first);
        throw std::runtime_error(rule.where + ": ambiguous rule: range '" + std::string(name) +
                                 "' matches terms of '" + rule.group.text() + "' as " +
                                 Describe(first->second) + " and as " + Describe(second->second));
      }
      if (keys.empty()) continue;
      Row& row = rows[keys.begin()->first];
      row.member_names.insert(names[ni]);
      row.instances.insert(row.instances.end(), instances[ni].begin(), instances[ni].end());
    }
    if (std::none_of(term_matched.begin(), term_matched.end(), [](bool b) { return b; })) {
      unmatched_rules.push_back(rule.group.text() + " (line " + LineOf(rule.where) + ")");
    } else {
      std::string terms;
      for (size_t ti = 0; ti < rule.terms.size(); ++ti) {
        if (!term_matched[ti]) terms += (terms.empty() ? "" : ", ") + rule.terms[ti].text();
      }
      if (!terms.empty()) {
        unmatched_terms.push_back(rule.group.text() + " (line " + LineOf(rule.where) +
                                  "): " + terms);
      }
    }
  }

  uint64_t all_kernel_ns = 0;
  for (const auto& op : model.ops()) {
    if (op.kind == OpKind::kKernel) all_kernel_ns += op.duration();
  }

  Table t;
  t.name = "groups";
  t.title = "Groups";
  t.columns = {{"group", ColumnKind::kText, "Group"}};
  for (const auto& b : options.by) t.columns.push_back({b, ColumnKind::kText, b});
  for (Column c : std::vector<Column>{{"members", ColumnKind::kCount, "Members"},
                                      {"instances", ColumnKind::kCount, "Instances"},
                                      {"cpu_ns", ColumnKind::kDuration, "CPU"},
                                      {"gpu_proj_ns", ColumnKind::kDuration, "GPU projected"},
                                      {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
                                      {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                                      {"kernels", ColumnKind::kCount, "Kernels"},
                                      {"kernel_pct", ColumnKind::kPercent, "Kernel %"}}) {
    t.columns.push_back(c);
  }

  std::vector<uint32_t> member_stamp(ranges.size(), 0);
  std::vector<uint32_t> op_stamp(model.ops().size(), 0);
  uint32_t stamp = 0;
  for (auto& [key, row] : rows) {
    ++stamp;
    for (uint32_t r : row.instances) member_stamp[r] = stamp;
    int64_t counted = 0;
    uint64_t cpu = 0, proj = 0, busy = 0, kernel_ns = 0, kernels = 0;
    bool any_gpu = false;
    for (uint32_t r : row.instances) {
      bool nested = false;
      for (int32_t a = ranges[r].parent; a >= 0; a = ranges[a].parent) {
        if (member_stamp[a] == stamp) {
          nested = true;
          break;
        }
      }
      if (!nested) {
        ++counted;
        cpu += ranges[r].cpu_ns();
        if (ranges[r].has_gpu) {
          any_gpu = true;
          proj += ranges[r].gpu_span_ns();
          busy += ranges[r].busy_ns;
        }
      }
      for (uint32_t op : model.OpsOf(r)) {
        if (op_stamp[op] == stamp || model.ops()[op].kind != OpKind::kKernel) continue;
        op_stamp[op] = stamp;
        kernel_ns += model.ops()[op].duration();
        ++kernels;
      }
    }
    std::vector<Cell> cells = {key.group};
    for (const auto& v : key.by) cells.push_back(v);
    cells.push_back(static_cast<int64_t>(row.member_names.size()));
    cells.push_back(counted);
    cells.push_back(static_cast<int64_t>(cpu));
    cells.push_back(any_gpu ? Cell(static_cast<int64_t>(proj)) : Cell());
    cells.push_back(any_gpu ? Cell(static_cast<int64_t>(busy)) : Cell());
    cells.push_back(static_cast<int64_t>(kernel_ns));
    cells.push_back(static_cast<int64_t>(kernels));
    cells.push_back(all_kernel_ns ? Cell(100.0 * kernel_ns / all_kernel_ns) : Cell());
    t.rows.push_back(std::move(cells));
  }
  t.notes = {
      "CPU: sum of the member range instances' CPU durations; GPU projected: sum of their "
      "projected GPU spans (first op start to last op end); GPU busy: sum of their GPU busy "
      "times (union of op intervals); a member nested in another member of the same row "
      "counts once, through its ancestor.",
      "Kernel time: kernels attributed to any member, each kernel once per row; Kernel %: of "
      "all kernel time in the trace.",
      std::string("Layer suffixes (_<digits>) bind {layer_id} and are summed over") +
          (std::find(options.by.begin(), options.by.end(), kLayerId) != options.by.end()
               ? "; kept apart here (--by layer_id)."
               : " (--by layer_id keeps layers apart)."),
  };
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  const std::string file = rules.empty() ? "" : FileOf(rules.front().where);
  for (const auto& b : options.by) {
    const bool used =
        b == kLayerId || std::any_of(rules.begin(), rules.end(), [&](const GroupRule& r) {
          return std::any_of(r.terms.begin(), r.terms.end(),
                             [&](const NamePattern& p) { return p.Has(b); });
        });
    if (!used) t.notes.push_back("warning: --by " + b + ": no rule has a {" + b + "} placeholder");
  }
  if (!unmatched_rules.empty()) {
    t.notes.push_back("warning: " + std::to_string(unmatched_rules.size()) + " rule(s) of " + file +
                      " matched no range: " + join(unmatched_rules, ", "));
  }
  if (!unmatched_terms.empty()) {
    t.notes.push_back("warning: terms that matched no range in " + file + ": " +
                      join(unmatched_terms, "; "));
  }
  return t;
}

}  // namespace tracer::analysis::reports
