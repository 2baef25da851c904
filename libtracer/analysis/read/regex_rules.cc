#include "libtracer/analysis/read/regex_rules.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tracer::analysis {
namespace {

Status TooLarge(const std::string& path) {
  return Status::Error("cannot read " + path + ": larger than " +
                       std::to_string(kMaxTextFileBytes >> 20) + " MiB, not a rules file");
}

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string_view NextLine(std::string_view* text) {
  const size_t nl = text->find('\n');
  const std::string_view line = text->substr(0, nl);
  *text = nl == std::string_view::npos ? std::string_view() : text->substr(nl + 1);
  return line;
}

StatusOr<std::vector<RegexRule>> ParseRegexRules(std::string_view text, std::string_view source) {
  std::vector<RegexRule> rules;
  size_t line_no = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_no;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = std::string(source) + ":" + std::to_string(line_no);
    // The last " -> " separates: a regex may itself contain "->".
    const size_t arrow = line.rfind("->");
    if (arrow == std::string_view::npos) {
      return Status::Error(where + ": expected '<regex> -> <name>', got '" + std::string(line) +
                           "'");
    }
    RegexRule rule;
    rule.pattern = std::string(Trim(line.substr(0, arrow)));
    rule.target = std::string(Trim(line.substr(arrow + 2)));
    rule.where = where;
    if (rule.pattern.empty() || rule.target.empty()) {
      return Status::Error(where + ": empty regex or name in '" + std::string(line) + "'");
    }
    // std::regex reports a bad pattern only by throwing: caught here, at
    // the one place a user's pattern is compiled, and made a Status.
    try {
      rule.re = std::regex(rule.pattern,
                           std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return Status::Error(where + ": invalid regex '" + rule.pattern + "': " + e.what());
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::optional<size_t> FirstMatch(const std::vector<RegexRule>& rules, std::string_view s) {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (std::regex_search(s.begin(), s.end(), rules[i].re)) return i;
  }
  return std::nullopt;
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  // A directory opens fine and reads as empty: it would pass as a file with
  // no rules. Say what the path is instead.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(status)) {
    return Status::Error("cannot read " + path + ": is a directory, not a rules file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Error("cannot read " + path + " (" + std::strerror(errno) + ")");
  }
  if (!ec && std::filesystem::is_regular_file(status) &&
      std::filesystem::file_size(path, ec) > kMaxTextFileBytes) {
    return TooLarge(path);
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    // Pipes and devices have no size: the cap holds while reading.
    if (text.size() > kMaxTextFileBytes) {
      return TooLarge(path);
    }
  }
  if (in.bad()) {
    return Status::Error("cannot read " + path + " (" + std::strerror(errno) + ")");
  }
  return text;
}

}  // namespace tracer::analysis
