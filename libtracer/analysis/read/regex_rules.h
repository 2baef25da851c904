// Ordered "<regex> -> <name>" rule files (kernel categories, phases, range
// names; read/ so that the name rules applied after reading can use it): one
// rule per line, '#' comments and blank lines ignored. Matching is a
// case-insensitive ECMAScript search; the first matching rule wins.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/core/status.h"

namespace tracer::analysis {

struct RegexRule {
  std::string pattern;
  std::string target;  // category or phase name
  std::string where;   // "file:line", for messages
  std::regex re;
};

// The rules, or an error "<source>:<line>: <what is wrong>" on a line
// without " -> ", an empty side or an invalid regex.
StatusOr<std::vector<RegexRule>> ParseRegexRules(std::string_view text, std::string_view source);

// s without leading and trailing blanks (space, tab, '\r'); shared by the
// rule-file parsers.
std::string_view Trim(std::string_view s);

// Removes the first line of *text and returns it, without its '\n'.
std::string_view NextLine(std::string_view* text);

// Index of the first rule whose regex is found in s, or nullopt.
std::optional<size_t> FirstMatch(const std::vector<RegexRule>& rules, std::string_view s);

// Whole file as text, or an error "cannot read <path> ..." saying why when it
// cannot be opened or read, is a directory, or is larger than
// kMaxTextFileBytes (rules files are a few KiB).
inline constexpr uint64_t kMaxTextFileBytes = 16ull << 20;
StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace tracer::analysis
