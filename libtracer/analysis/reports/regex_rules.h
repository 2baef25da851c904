// The rule-file parser lives in read/regex_rules.h (the range-name rules,
// applied right after reading, use it too); the reports keep their names.
#pragma once

#include "libtracer/analysis/read/regex_rules.h"

namespace tracer::analysis::reports {

using analysis::FirstMatch;
using analysis::NextLine;
using analysis::ParseRegexRules;
using analysis::ReadTextFile;
using analysis::RegexRule;
using analysis::Trim;

}  // namespace tracer::analysis::reports
