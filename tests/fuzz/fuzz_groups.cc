// libFuzzer target: the groups-file parser and rule matching. The first line
// of an input is a range name, the rest a groups file; every term and
// excluded term of every rule that parses is matched against the name (and
// its layer-suffix form), as the groups table does.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libtracer/analysis/reports/group_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracer::analysis::reports;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  // Names are capped at 64 bytes: a longer one only makes more inputs run
  // into the step budget (tested in groups_test.cc), at ~40 ms each.
  const std::string_view name = input.substr(0, std::min<size_t>(nl, 64));
  const std::string_view text = nl == std::string_view::npos ? "" : input.substr(nl + 1);
  auto rules = ParseGroupRules(text, "fuzz.groups");
  if (!rules.ok()) return 0;
  for (const GroupRule& rule : *rules) {
    bool gave_up = false;
    for (const auto* list : {&rule.terms, &rule.excluded}) {
      for (const NamePattern& term : *list) {
        for (const auto& binding : MatchTerm(term, name, 2, &gave_up)) {
          rule.group.Substitute(binding);
        }
      }
    }
  }
  return 0;
}
