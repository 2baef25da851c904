#include "tests/cupti/fake_driver/scenario.h"

#include <cstdlib>
#include <set>
#include <sstream>

namespace fake_driver {

uint64_t Op::Num(const std::string& key, uint64_t fallback) const {
  auto it = kv.find(key);
  return it == kv.end() ? fallback : std::strtoull(it->second.c_str(), nullptr, 0);
}

std::string Op::Str(const std::string& key, const std::string& fallback) const {
  auto it = kv.find(key);
  return it == kv.end() ? fallback : it->second;
}

bool ParseScenario(const std::string& text, std::vector<Op>* ops, std::string* error) {
  static const std::set<std::string> kVerbs = {
      "init",    "cupti",  "push",   "pop",  "start",   "end",   "mark",     "name",
      "launch",  "memcpy", "memset", "api",  "sync",    "graph", "profiler", "device",
      "context", "sleep",  "storm",  "exit", "capture", "module", "pm"};
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string line = raw.substr(0, raw.find('#'));
    Op op;
    op.line = line_no;
    // "thread N:" prefix.
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (line.rfind("thread ", 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) {
        *error = std::to_string(line_no) + ": 'thread N:' needs a colon";
        return false;
      }
      op.thread = std::atoi(line.substr(7, colon - 7).c_str());
      if (op.thread <= 0 || op.thread > 64) {
        *error = std::to_string(line_no) + ": thread number must be 1..64";
        return false;
      }
      line = line.substr(colon + 1);
    }
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      size_t eq = w.find('=');
      if (eq != std::string::npos && !op.words.empty()) {
        op.kv[w.substr(0, eq)] = w.substr(eq + 1);
      } else {
        op.words.push_back(w);
      }
    }
    if (op.words.empty()) continue;
    if (kVerbs.count(op.verb()) == 0) {
      *error = std::to_string(line_no) + ": unknown operation '" + op.verb() + "'";
      return false;
    }
    size_t verb_end = line.find(op.verb()) + op.verb().size();
    size_t rest = line.find_first_not_of(" \t", verb_end);
    if (rest != std::string::npos) {
      op.rest = line.substr(rest);
      while (!op.rest.empty() &&
             (op.rest.back() == ' ' || op.rest.back() == '\t' || op.rest.back() == '\r')) {
        op.rest.pop_back();
      }
    }
    ops->push_back(std::move(op));
  }
  return true;
}

}  // namespace fake_driver
