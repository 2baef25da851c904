#include "libtracer/analysis/reports/groups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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
  uint32_t process = 0;  // with GroupsOptions::by_process, else 0
  bool operator<(const RowKey& o) const {
    if (rule != o.rule) return rule < o.rule;
    if (group != o.group) return NaturalLess(group, o.group);
    for (size_t i = 0; i < by.size() && i < o.by.size(); ++i) {
      if (by[i] != o.by[i]) return NaturalLess(by[i], o.by[i]);
    }
    return process < o.process;
  }
};

struct Row {
  std::set<uint32_t> member_names;
  std::vector<uint32_t> instances;
};

// Distinct range names, each with its instances.
struct NameInstances {
  std::vector<uint32_t> names;
  std::vector<std::vector<uint32_t>> instances;
};

NameInstances CollectNames(const ReportModel& model) {
  const auto& ranges = model.ranges();
  NameInstances out;
  std::unordered_map<uint32_t, size_t> slot;
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    auto [it, inserted] = slot.emplace(ranges[r].name, out.names.size());
    if (inserted) {
      out.names.push_back(ranges[r].name);
      out.instances.emplace_back();
    }
    out.instances[it->second].push_back(r);
  }
  return out;
}

// One groups file serves several trainers: rules and terms that match
// nothing are reported, one line each kind, not errors.
struct Unmatched {
  std::vector<std::string> rules, terms;
};

Status Ambiguous(const GroupRule& rule, std::string_view name, const std::string& what,
                 const Binding& a, const Binding& b) {
  return Status::Error(rule.where + ": ambiguous rule: range '" + std::string(name) + "' matches " +
                       what + " as " + Describe(a) + " and as " + Describe(b));
}

Status TooCostly(const GroupRule& rule, std::string_view name, const NamePattern& term) {
  const std::string shown =
      name.size() > 80 ? std::string(name.substr(0, 77)) + "..." : std::string(name);
  return Status::Error(rule.where + ": matching range '" + shown + "' (" +
                       std::to_string(name.size()) + " characters) against '" + term.text() +
                       "' stopped after " + std::to_string(NamePattern::kMaxMatchSteps) +
                       " steps (too many ways to split it); use fewer placeholders or more "
                       "literal text between them");
}

// Characters of a pattern outside its placeholders: f_lora_A_{adapter} has
// 9, f_lora_{adapter} 7.
size_t LiteralLength(const NamePattern& p) {
  size_t n = 0;
  bool inside = false;
  for (char c : p.text()) {
    if (c == '{') inside = true;
    if (!inside) ++n;
    if (c == '}') inside = false;
  }
  return n;
}

// The row one range name falls into under a rule (none: *row stays empty),
// marking the terms it matched. When terms put the name in different rows,
// the most specific term (most literal characters) decides: with
// f_lora_{adapter} + f_lora_A_{adapter}, f_lora_A_chat is adapter chat, not
// A_chat. Equally specific terms that disagree are an ambiguity. Two bindings of
// one term are enough to call it ambiguous, so no more are searched for.
Status RowOfName(const GroupRule& rule, size_t rule_index, std::string_view name,
                 const GroupsOptions& options, std::vector<bool>* term_matched,
                 std::optional<RowKey>* row) {
  bool gave_up = false;
  for (const NamePattern& x : rule.excluded) {
    const bool excluded = !MatchTerm(x, name, 1, &gave_up).empty();
    if (gave_up) return TooCostly(rule, name, x);
    if (excluded) return Status();
  }
  struct Candidate {
    size_t term;
    RowKey key;
    Binding binding;
    size_t literal;
  };
  std::vector<Candidate> candidates;
  for (size_t ti = 0; ti < rule.terms.size(); ++ti) {
    const auto bindings = MatchTerm(rule.terms[ti], name, 2, &gave_up);
    if (gave_up) return TooCostly(rule, name, rule.terms[ti]);
    if (bindings.empty()) continue;
    if (bindings.size() > 1) {
      return Ambiguous(rule, name, "term '" + rule.terms[ti].text() + "'", bindings[0],
                       bindings[1]);
    }
    RowKey key{rule_index, rule.group.Substitute(bindings[0]), {}};
    for (const auto& b : options.by) {
      auto v = bindings[0].find(b);
      key.by.push_back(v == bindings[0].end() ? "" : v->second);
    }
    candidates.push_back({ti, std::move(key), bindings[0], LiteralLength(rule.terms[ti])});
  }
  if (candidates.empty()) return Status();
  const Candidate* best = &candidates.front();
  for (const Candidate& c : candidates) {
    if (c.literal > best->literal) best = &c;
  }
  for (const Candidate& c : candidates) {
    const bool same_row = !(c.key < best->key) && !(best->key < c.key);
    if (!same_row && c.literal == best->literal) {
      return Ambiguous(rule, name, "terms of '" + rule.group.text() + "'", best->binding,
                       c.binding);
    }
  }
  for (const Candidate& c : candidates) {
    if (!(c.key < best->key) && !(best->key < c.key)) (*term_matched)[c.term] = true;
  }
  *row = best->key;
  return Status();
}

void NoteUnmatched(const GroupRule& rule, const std::vector<bool>& term_matched,
                   Unmatched* unmatched) {
  if (std::none_of(term_matched.begin(), term_matched.end(), [](bool b) { return b; })) {
    unmatched->rules.push_back(rule.group.text() + " (line " + LineOf(rule.where) + ")");
    return;
  }
  std::string terms;
  for (size_t ti = 0; ti < rule.terms.size(); ++ti) {
    if (!term_matched[ti]) terms += (terms.empty() ? "" : ", ") + rule.terms[ti].text();
  }
  if (!terms.empty()) {
    unmatched->terms.push_back(rule.group.text() + " (line " + LineOf(rule.where) + "): " + terms);
  }
}

// Every range name into the row of each rule it matches.
Status AssignRows(const ReportModel& model, const std::vector<GroupRule>& rules,
                  const GroupsOptions& options, const NameInstances& names,
                  std::map<RowKey, Row>* rows, Unmatched* unmatched) {
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const GroupRule& rule = rules[ri];
    std::vector<bool> term_matched(rule.terms.size(), false);
    for (size_t ni = 0; ni < names.names.size(); ++ni) {
      std::optional<RowKey> key;
      Status s = RowOfName(rule, ri, model.Name(names.names[ni]), options, &term_matched, &key);
      if (!s.ok()) return s;
      if (!key) continue;
      if (!options.by_process) {
        Row& row = (*rows)[*key];
        row.member_names.insert(names.names[ni]);
        row.instances.insert(row.instances.end(), names.instances[ni].begin(),
                             names.instances[ni].end());
        continue;
      }
      for (uint32_t r : names.instances[ni]) {
        key->process = model.ranges()[r].process;
        Row& row = (*rows)[*key];
        row.member_names.insert(names.names[ni]);
        row.instances.push_back(r);
      }
    }
    NoteUnmatched(rule, term_matched, unmatched);
  }
  return Status();
}

Table EmptyGroupsTable(const GroupsOptions& options) {
  Table t;
  t.name = "groups";
  t.title = "Groups";
  t.columns = {{"group", ColumnKind::kText, "Group"}};
  if (options.by_process) {
    t.columns.insert(t.columns.begin(), Column{"process", ColumnKind::kText, "Process"});
  }
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
  return t;
}

// Sums one row. Stamps mark the row's member instances and the kernels
// already counted, so that neither needs clearing between rows.
class RowSummer {
 public:
  explicit RowSummer(const ReportModel& model)
      : model_(model), member_stamp_(model.ranges().size(), 0), op_stamp_(model.ops().size(), 0) {
    for (const auto& op : model.ops()) {
      if (op.kind == OpKind::kKernel) all_kernel_ns_ += op.duration();
    }
  }

  std::vector<Cell> Cells(const RowKey& key, const Row& row, bool by_process) {
    const auto& ranges = model_.ranges();
    ++stamp_;
    for (uint32_t r : row.instances) member_stamp_[r] = stamp_;
    int64_t counted = 0;
    uint64_t cpu = 0, proj = 0, busy = 0, kernel_ns = 0, kernels = 0;
    bool any_gpu = false;
    for (uint32_t r : row.instances) {
      if (!NestedInMember(r)) {
        ++counted;
        cpu += ranges[r].cpu_ns();
        if (ranges[r].has_gpu) {
          any_gpu = true;
          proj += ranges[r].gpu_span_ns();
          busy += ranges[r].busy_ns;
        }
      }
      for (uint32_t op : model_.OpsOf(r)) {
        if (op_stamp_[op] == stamp_ || model_.ops()[op].kind != OpKind::kKernel) continue;
        op_stamp_[op] = stamp_;
        kernel_ns += model_.ops()[op].duration();
        ++kernels;
      }
    }
    std::vector<Cell> cells;
    if (by_process) cells.push_back(ProcessLabelOf(model_.trace().processes[key.process]));
    cells.push_back(key.group);
    for (const auto& v : key.by) cells.push_back(v);
    cells.push_back(static_cast<int64_t>(row.member_names.size()));
    cells.push_back(counted);
    cells.push_back(static_cast<int64_t>(cpu));
    cells.push_back(any_gpu ? Cell(static_cast<int64_t>(proj)) : Cell());
    cells.push_back(any_gpu ? Cell(static_cast<int64_t>(busy)) : Cell());
    cells.push_back(static_cast<int64_t>(kernel_ns));
    cells.push_back(static_cast<int64_t>(kernels));
    cells.push_back(all_kernel_ns_ ? Cell(100.0 * kernel_ns / all_kernel_ns_) : Cell());
    return cells;
  }

 private:
  bool NestedInMember(uint32_t r) const {
    const auto& ranges = model_.ranges();
    for (int32_t a = ranges[r].parent; a >= 0; a = ranges[a].parent) {
      if (member_stamp_[a] == stamp_) return true;
    }
    return false;
  }

  const ReportModel& model_;
  uint64_t all_kernel_ns_ = 0;
  std::vector<uint32_t> member_stamp_;
  std::vector<uint32_t> op_stamp_;
  uint32_t stamp_ = 0;
};

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void AddNotes(const std::vector<GroupRule>& rules, const GroupsOptions& options,
              const Unmatched& unmatched, Table* t) {
  t->notes = {
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
  const std::string file = rules.empty() ? "" : FileOf(rules.front().where);
  for (const auto& b : options.by) {
    const bool used =
        b == kLayerId || std::any_of(rules.begin(), rules.end(), [&](const GroupRule& r) {
          return std::any_of(r.terms.begin(), r.terms.end(),
                             [&](const NamePattern& p) { return p.Has(b); });
        });
    if (!used) t->notes.push_back("warning: --by " + b + ": no rule has a {" + b + "} placeholder");
  }
  if (!unmatched.rules.empty()) {
    t->notes.push_back("warning: " + std::to_string(unmatched.rules.size()) + " rule(s) of " +
                       file + " matched no range: " + Join(unmatched.rules, ", "));
  }
  if (!unmatched.terms.empty()) {
    t->notes.push_back("warning: terms that matched no range in " + file + ": " +
                       Join(unmatched.terms, "; "));
  }
}

}  // namespace

StatusOr<Table> GroupsTable(const ReportModel& model, const std::vector<GroupRule>& rules,
                            const GroupsOptions& options) {
  std::map<RowKey, Row> rows;
  Unmatched unmatched;
  if (Status s = AssignRows(model, rules, options, CollectNames(model), &rows, &unmatched);
      !s.ok()) {
    return s;
  }
  Table t = EmptyGroupsTable(options);
  RowSummer summer(model);
  for (const auto& [key, row] : rows) t.rows.push_back(summer.Cells(key, row, options.by_process));
  AddNotes(rules, options, unmatched, &t);
  return t;
}

StatusOr<std::vector<GroupMembers>> GroupRowMembers(const ReportModel& model,
                                                    const std::vector<GroupRule>& rules,
                                                    const GroupsOptions& options) {
  std::map<RowKey, Row> rows;
  Unmatched unmatched;
  if (Status s = AssignRows(model, rules, options, CollectNames(model), &rows, &unmatched);
      !s.ok()) {
    return s;
  }
  const auto& ranges = model.ranges();
  std::vector<uint32_t> stamp(ranges.size(), 0);
  uint32_t current = 0;
  std::vector<GroupMembers> out;
  for (const auto& [key, row] : rows) {
    ++current;
    for (uint32_t r : row.instances) stamp[r] = current;
    GroupMembers m{key.group, key.by, {}};
    for (uint32_t r : row.instances) {
      bool nested = false;
      for (int32_t a = ranges[r].parent; a >= 0 && !nested; a = ranges[a].parent) {
        nested = stamp[a] == current;
      }
      if (!nested) m.instances.push_back(r);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tracer::analysis::reports
