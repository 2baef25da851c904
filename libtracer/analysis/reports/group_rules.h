// Groups files (the notation mLoRA profiling studies use for metric groups): one rule per line,
//
//   f_lora_{adapter} = f_dropout_{adapter} + f_lora_a_{adapter} + f_lora_b_{adapter}
//   f_linear = f_linear_wq + f_linear_wk + f_linear_wv + f_linear_wo
//   f_embedding                       (a single-name group: itself)
//   f_lora_{adapter} = f_lora_{adapter} - f_lora_add_{adapter}
//                                     (terms after ' - ' exclude range names)
//
// '#' starts a comment; blank lines and a leading list number ("4. ") are
// ignored. {name} is a placeholder that binds a non-empty part of a range
// name; every term must use each placeholder of the group name (all terms
// of a row bind the same values); placeholders only in terms are summed
// over. A name that terms of one group put in different rows goes where the
// most specific term (most characters outside placeholders) says:
// f_lora_{adapter} + f_lora_A_{adapter} reads f_lora_A_chat as adapter chat.
// The layer suffix: a range name ending in "_<digits>" (f_w1_3) is
// matched without it and the digits bind the implicit {layer_id}, unless a
// term spells {layer_id} itself. This is the pure part: parsing and name
// matching, no trace.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

inline constexpr char kLayerId[] = "layer_id";

class NamePattern {
 public:
  // An error saying what is wrong on bad syntax (unbalanced or empty
  // braces, invalid placeholder name, adjacent placeholders).
  static StatusOr<NamePattern> Parse(std::string_view text);

  const std::string& text() const { return text_; }
  bool Has(std::string_view placeholder) const;
  const std::vector<std::string>& placeholders() const { return placeholders_; }

  // Every way `name` matches as a whole (placeholder -> value); a repeated
  // placeholder must bind the same value each time.
  std::vector<std::map<std::string, std::string>> MatchAll(std::string_view name) const;
  // The first `limit` ways (callers that only tell "none, one or ambiguous"
  // ask for 2). Splits that cannot match are remembered, so a name of n
  // characters costs O(segments * n^2) steps whatever the number of
  // placeholders; a pattern that repeats a placeholder can still branch more,
  // so the search stops after kMaxMatchSteps steps and sets *gave_up.
  static constexpr uint64_t kMaxMatchSteps = 200'000;
  std::vector<std::map<std::string, std::string>> MatchAll(std::string_view name, size_t limit,
                                                           bool* gave_up) const;
  // The text with placeholders replaced by their bound values (unbound ones
  // stay as "{name}").
  std::string Substitute(const std::map<std::string, std::string>& binding) const;

 private:
  struct Segment {
    bool placeholder = false;
    std::string text;  // literal text or placeholder name
  };
  struct Search;
  void MatchFrom(size_t seg, std::string_view rest, Search* search) const;

  std::string text_;
  std::vector<Segment> segments_;
  std::vector<std::string> placeholders_;  // distinct, in order of appearance
  // memoizable_[i]: no placeholder of segments i.. appears before i, so
  // whether the rest of a name matches from segment i depends on nothing
  // bound so far.
  std::vector<bool> memoizable_;
};

// "f_w1_3" -> base "f_w1", layer "3"; false when there is no "_<digits>"
// suffix (or nothing before it).
bool SplitLayerSuffix(std::string_view name, std::string_view* base, std::string_view* layer);

// A range name against a term, with the implicit layer suffix applied (see
// the header comment): every binding, layer_id included when present.
std::vector<std::map<std::string, std::string>> MatchTerm(const NamePattern& term,
                                                          std::string_view range_name);
// Same, at most `limit` bindings, *gave_up as for NamePattern::MatchAll.
std::vector<std::map<std::string, std::string>> MatchTerm(const NamePattern& term,
                                                          std::string_view range_name, size_t limit,
                                                          bool* gave_up);

struct GroupRule {
  NamePattern group;
  std::vector<NamePattern> terms;
  std::vector<NamePattern> excluded;  // '-' terms: matching names are left out
  std::string where;                  // "file:line"
};

// An error "<source>:<line>: <what is wrong>" on a syntax error, a term
// missing a placeholder of its group name, or a group name defined twice.
StatusOr<std::vector<GroupRule>> ParseGroupRules(std::string_view text, std::string_view source);

}  // namespace tracer::analysis::reports
