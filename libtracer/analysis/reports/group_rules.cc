#include "libtracer/analysis/reports/group_rules.h"

#include <algorithm>
#include <set>

#include "libtracer/analysis/reports/regex_rules.h"

namespace tracer::analysis::reports {
namespace {

bool IsPlaceholderChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "12. f_linear" -> "f_linear": lets users paste numbered lists of group names.
std::string_view StripListNumber(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i > 0 && i + 1 < s.size() && s[i] == '.' && (s[i + 1] == ' ' || s[i + 1] == '\t')) {
    return Trim(s.substr(i + 1));
  }
  return s;
}

// Next '+', or '-' preceded by a blank (so names may contain '-').
size_t FindOperator(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') return i;
    if (s[i] == '-' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) return i;
  }
  return std::string_view::npos;
}

}  // namespace

StatusOr<NamePattern> NamePattern::Parse(std::string_view text) {
  NamePattern p;
  p.text_ = std::string(text);
  if (text.empty()) return Status::Error("empty name");
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '}') return Status::Error("'}' without '{' in '" + p.text_ + "'");
    if (c == ' ' || c == '\t') return Status::Error("space inside name '" + p.text_ + "'");
    if (c == '{') {
      const size_t close = text.find('}', i);
      if (close == std::string_view::npos) {
        return Status::Error("'{' without '}' in '" + p.text_ + "'");
      }
      const std::string name(text.substr(i + 1, close - i - 1));
      if (name.empty()) return Status::Error("empty placeholder '{}' in '" + p.text_ + "'");
      if (!std::all_of(name.begin(), name.end(), IsPlaceholderChar)) {
        return Status::Error("invalid placeholder '{" + name + "}' in '" + p.text_ +
                             "' (letters, digits, '_')");
      }
      if (!p.segments_.empty() && p.segments_.back().placeholder) {
        return Status::Error("adjacent placeholders in '" + p.text_ +
                             "' cannot be told apart; separate them with text");
      }
      p.segments_.push_back({true, name});
      if (std::find(p.placeholders_.begin(), p.placeholders_.end(), name) ==
          p.placeholders_.end()) {
        p.placeholders_.push_back(name);
      }
      i = close + 1;
    } else {
      if (p.segments_.empty() || p.segments_.back().placeholder) p.segments_.push_back({false, ""});
      p.segments_.back().text += c;
      ++i;
    }
  }
  p.memoizable_.assign(p.segments_.size() + 1, true);
  for (size_t i = 0; i < p.segments_.size(); ++i) {
    if (!p.segments_[i].placeholder) continue;
    for (size_t j = i + 1; j < p.segments_.size(); ++j) {
      // Segment i's placeholder is bound from i + 1 on: memoizable up to its
      // last use.
      if (p.segments_[j].placeholder && p.segments_[j].text == p.segments_[i].text) {
        for (size_t k = i + 1; k <= j; ++k) p.memoizable_[k] = false;
      }
    }
  }
  return p;
}

bool NamePattern::Has(std::string_view placeholder) const {
  return std::find(placeholders_.begin(), placeholders_.end(), placeholder) != placeholders_.end();
}

struct NamePattern::Search {
  std::map<std::string, std::string> binding;
  std::vector<std::map<std::string, std::string>>* out;
  size_t limit;
  uint64_t steps = 0;
  bool gave_up = false;
  std::set<std::pair<size_t, size_t>> no_match;  // (segment, characters left)
};

void NamePattern::MatchFrom(size_t seg, std::string_view rest, Search* search) const {
  if (search->out->size() >= search->limit || search->gave_up) return;
  if (++search->steps > kMaxMatchSteps) {
    search->gave_up = true;
    return;
  }
  if (seg == segments_.size()) {
    if (rest.empty()) search->out->push_back(search->binding);
    return;
  }
  const std::pair<size_t, size_t> state(seg, rest.size());
  if (memoizable_[seg] && search->no_match.count(state) > 0) return;
  const size_t found = search->out->size();
  const Segment& s = segments_[seg];
  if (!s.placeholder) {
    if (rest.substr(0, s.text.size()) == s.text)
      MatchFrom(seg + 1, rest.substr(s.text.size()), search);
  } else if (auto bound = search->binding.find(s.text); bound != search->binding.end()) {
    const std::string v = bound->second;
    if (rest.substr(0, v.size()) == v) MatchFrom(seg + 1, rest.substr(v.size()), search);
  } else {
    // Every non-empty length that the next segment can follow, so that
    // ambiguity is detected rather than resolved by greediness. Placeholders
    // are never adjacent: the next segment is literal text, or the end.
    const bool last = seg + 1 == segments_.size();
    const std::string_view next = last ? std::string_view() : segments_[seg + 1].text;
    for (size_t len = last ? rest.size() : rest.find(next, 1);
         len != std::string_view::npos && len >= 1 && len <= rest.size() && !search->gave_up;
         len = last ? std::string_view::npos : rest.find(next, len + 1)) {
      search->binding[s.text] = std::string(rest.substr(0, len));
      MatchFrom(seg + 1, rest.substr(len), search);
      if (search->out->size() >= search->limit) break;
    }
    search->binding.erase(s.text);
  }
  if (memoizable_[seg] && !search->gave_up && search->out->size() == found) {
    search->no_match.insert(state);
  }
}

std::vector<std::map<std::string, std::string>> NamePattern::MatchAll(std::string_view name) const {
  bool gave_up = false;
  return MatchAll(name, SIZE_MAX, &gave_up);
}

std::vector<std::map<std::string, std::string>> NamePattern::MatchAll(std::string_view name,
                                                                      size_t limit,
                                                                      bool* gave_up) const {
  std::vector<std::map<std::string, std::string>> out;
  Search search;
  search.out = &out;
  search.limit = limit;
  MatchFrom(0, name, &search);
  *gave_up = search.gave_up;
  return out;
}

std::string NamePattern::Substitute(const std::map<std::string, std::string>& binding) const {
  std::string s;
  for (const auto& seg : segments_) {
    if (!seg.placeholder) {
      s += seg.text;
      continue;
    }
    auto it = binding.find(seg.text);
    s += it != binding.end() ? it->second : "{" + seg.text + "}";
  }
  return s;
}

bool SplitLayerSuffix(std::string_view name, std::string_view* base, std::string_view* layer) {
  size_t i = name.size();
  while (i > 0 && IsDigit(name[i - 1])) --i;
  if (i == name.size() || i < 2 || name[i - 1] != '_') return false;
  *base = name.substr(0, i - 1);
  *layer = name.substr(i);
  return true;
}

std::vector<std::map<std::string, std::string>> MatchTerm(const NamePattern& term,
                                                          std::string_view range_name) {
  bool gave_up = false;
  return MatchTerm(term, range_name, SIZE_MAX, &gave_up);
}

std::vector<std::map<std::string, std::string>> MatchTerm(const NamePattern& term,
                                                          std::string_view range_name, size_t limit,
                                                          bool* gave_up) {
  std::string_view base, layer;
  if (term.Has(kLayerId) || !SplitLayerSuffix(range_name, &base, &layer)) {
    return term.MatchAll(range_name, limit, gave_up);
  }
  auto out = term.MatchAll(base, limit, gave_up);
  for (auto& b : out) b[kLayerId] = std::string(layer);
  return out;
}

namespace {

// The terms after '=': '+' adds a term, ' - ' starts the excluded ones.
Status ParseTerms(std::string_view rhs, GroupRule* rule) {
  if (rhs.empty()) return Status::Error("nothing after '='");
  bool exclude = false;
  while (true) {
    const size_t op = FindOperator(rhs);
    const std::string_view term = Trim(rhs.substr(0, op));
    if (term.empty()) {
      return Status::Error("empty term (two operators in a row, or a trailing one)");
    }
    auto pattern = NamePattern::Parse(term);
    if (!pattern.ok()) return pattern.status();
    (exclude ? rule->excluded : rule->terms).push_back(std::move(pattern).value());
    if (op == std::string_view::npos) return Status();
    exclude = rhs[op] == '-';
    rhs = rhs.substr(op + 1);
  }
}

// One non-blank line, comments and list number removed.
StatusOr<GroupRule> ParseRuleLine(std::string_view line, const std::string& where) {
  GroupRule rule;
  rule.where = where;
  const size_t eq = line.find('=');
  if (eq != std::string_view::npos && line.find('=', eq + 1) != std::string_view::npos) {
    return Status::Error("more than one '='");
  }
  auto group = NamePattern::Parse(Trim(line.substr(0, eq)));
  if (!group.ok()) return group.status();
  rule.group = std::move(group).value();
  if (eq == std::string_view::npos) {
    rule.terms.push_back(rule.group);
  } else if (Status s = ParseTerms(Trim(line.substr(eq + 1)), &rule); !s.ok()) {
    return s;
  }
  for (const auto& term : rule.terms) {
    for (const auto& p : rule.group.placeholders()) {
      if (!term.Has(p)) {
        return Status::Error("term '" + term.text() + "' does not use {" + p +
                             "} of the group name '" + rule.group.text() + "'");
      }
    }
  }
  return rule;
}

}  // namespace

StatusOr<std::vector<GroupRule>> ParseGroupRules(std::string_view text, std::string_view source) {
  std::vector<GroupRule> rules;
  std::map<std::string, std::string> defined;  // group text -> where
  size_t line_no = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = StripListNumber(Trim(line));
    if (line.empty()) continue;
    const std::string where = std::string(source) + ":" + std::to_string(line_no);
    auto rule = ParseRuleLine(line, where);
    if (!rule.ok()) return rule.status().WithPrefix(where);
    auto [it, inserted] = defined.emplace(rule->group.text(), where);
    if (!inserted) {
      return Status::Error(where + ": group '" + rule->group.text() + "' already defined at " +
                           it->second);
    }
    rules.push_back(std::move(rule).value());
  }
  return rules;
}

}  // namespace tracer::analysis::reports
