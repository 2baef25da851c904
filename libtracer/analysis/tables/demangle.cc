#include "libtracer/analysis/tables/demangle.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

namespace tracer::analysis {

std::string Demangle(std::string_view name) {
  // Only _Z names are functions; __cxa_demangle would turn "i" into "int".
  if (name.size() < 3 || name.substr(0, 2) != "_Z") return std::string(name);
  const std::string input(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || out == nullptr) return input;
  return std::string(out.get());
}

std::string_view ApiDisplayName(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || name.size() - v - 2 < 4) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, v);
}

namespace {

// nsys's demangler writes an anonymous namespace "<unnamed>", which would be
// dropped with the template arguments: spelled as __cxa_demangle does.
std::string AnonymousNamespace(std::string name) {
  static constexpr std::string_view kUnnamed = "<unnamed>";
  for (size_t at = name.find(kUnnamed); at != std::string::npos; at = name.find(kUnnamed, at)) {
    name.replace(at, kUnnamed.size(), "(anonymous namespace)");
  }
  return name;
}

}  // namespace

std::string ShortKernelName(std::string_view name) {
  // Names arrive mangled (CUPTI) or already demangled (nsys exports, Kineto):
  // both are shortened; a name without a template or parameter list is a
  // plain kernel name ("ampere_sgemm_128x64_nn") and stays as it is.
  const std::string full = AnonymousNamespace(Demangle(name));
  if (full.find_first_of("(<") == std::string::npos) return full;

  // 1. Drop template arguments (nested <...>), keeping "operator<" style
  //    names intact is not needed for kernels.
  std::string flat;
  flat.reserve(full.size());
  int angle = 0;
  for (char c : full) {
    if (c == '<') {
      ++angle;
    } else if (c == '>') {
      if (angle > 0) --angle;
    } else if (angle == 0) {
      flat.push_back(c);
    }
  }
  // 2. Cut at the parameter list: the first '(' outside braces that does not
  //    open "(anonymous namespace)".
  static constexpr std::string_view kAnon = "(anonymous namespace)";
  size_t cut = flat.size();
  int brace = 0;
  for (size_t i = 0; i < flat.size(); ++i) {
    const char c = flat[i];
    if (c == '{') ++brace;
    if (c == '}' && brace > 0) --brace;
    if (c == '(' && brace == 0) {
      if (std::string_view(flat).substr(i, kAnon.size()) == kAnon) {
        i += kAnon.size() - 1;
        continue;
      }
      cut = i;
      break;
    }
  }
  flat.resize(cut);
  // 3. Drop the return type: keep what follows the last space outside
  //    braces and "(anonymous namespace)".
  size_t start = 0;
  brace = 0;
  int paren = 0;
  for (size_t i = 0; i < flat.size(); ++i) {
    const char c = flat[i];
    if (c == '{') ++brace;
    if (c == '}' && brace > 0) --brace;
    if (c == '(') ++paren;
    if (c == ')' && paren > 0) --paren;
    if (c == ' ' && brace == 0 && paren == 0) start = i + 1;
  }
  std::string result = flat.substr(start);
  return result.empty() ? full : result;
}

namespace {

// What follows the short name in the demangled name: template arguments and
// parameter list (the whole name when the short one is not a part of it).
std::string Context(std::string_view raw, const std::string& short_name) {
  const std::string full = AnonymousNamespace(Demangle(raw));
  const size_t at = full.find(short_name);
  return at == std::string::npos ? full : full.substr(at + short_name.size());
}

bool Delimiter(char c) {
  return c == ',' || c == '<' || c == '>' || c == '(' || c == ')' || c == ' ' || c == ':' ||
         c == '{' || c == '}' || c == '&' || c == '*';
}

// The words (identifiers, numbers) of a context, each once, in order.
std::vector<std::string> Words(const std::string& context) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string word;
  for (size_t i = 0; i <= context.size(); ++i) {
    const char c = i < context.size() ? context[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word.push_back(c);
    } else if (!word.empty()) {
      if (seen.insert(word).second) out.push_back(word);
      word.clear();
    }
  }
  return out;
}

bool IsNumber(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A context of a group of kernels sharing a short name, with its words
// (Words) as a list and as a set, computed once per group rather than once
// per pair of its members.
struct GroupContext {
  std::string text;
  std::vector<std::string> words;
  std::set<std::string> word_set;
};

// The least text of `mine` (a context) that none of `others` shares: the
// text up to the first difference when that comes early; else the fewest of
// its words that, together, some word is missing from each other context
// ("<...MulFunctor...>"). Empty when neither tells it apart.
std::string Distinguish(const GroupContext& mine_context,
                        const std::vector<const GroupContext*>& others) {
  const std::string& mine = mine_context.text;
  size_t diff = 0;  // first position where mine differs from every other
  for (const GroupContext* other : others) {
    const std::string* o = &other->text;
    size_t common = 0;
    while (common < mine.size() && common < o->size() && mine[common] == (*o)[common]) ++common;
    diff = std::max(diff, common);
  }
  if (diff >= mine.size()) return {};  // a prefix of another: nothing of its own
  constexpr size_t kEarly = 24;
  size_t end = diff;
  while (end < mine.size() && !Delimiter(mine[end])) ++end;
  if (end == diff) ++end;  // the difference is a delimiter itself
  size_t word = diff;
  while (word > 0 && !Delimiter(mine[word - 1])) --word;
  // A number early in the arguments ("<512" vs "<256"): the text up to it.
  if (end <= kEarly && IsNumber(mine.substr(word, end - word)))
    return mine.substr(0, end) + (end < mine.size() ? "..." : "");

  // Greedy cover: each other context must lack one chosen word.
  const std::vector<std::string>& words = mine_context.words;
  std::vector<const std::set<std::string>*> other_words;
  other_words.reserve(others.size());
  for (const GroupContext* o : others) other_words.push_back(&o->word_set);
  std::vector<bool> told(others.size(), false);
  std::set<std::string> chosen;
  size_t left = others.size();
  while (left > 0) {
    const std::string* best = nullptr;
    size_t best_count = 0;
    for (const std::string& w : words) {
      if (chosen.count(w) > 0) continue;
      size_t count = 0;
      for (size_t j = 0; j < others.size(); ++j) {
        if (!told[j] && other_words[j]->count(w) == 0) ++count;
      }
      // Most others told apart; among equals a name before a number, a
      // longer (more specific) word, then the earlier one. Type keywords
      // tell a reader nothing.
      if (w == "void" || w == "const" || w == "unsigned") continue;
      const bool better =
          count > best_count ||
          (count == best_count && count > 0 && best != nullptr &&
           (IsNumber(*best) != IsNumber(w) ? IsNumber(*best) : w.size() > best->size()));
      if (better) {
        best = &w;
        best_count = count;
      }
    }
    if (best == nullptr) return {};  // every word of mine is in some other
    chosen.insert(*best);
    for (size_t j = 0; j < others.size(); ++j) {
      if (!told[j] && other_words[j]->count(*best) == 0) {
        told[j] = true;
        --left;
      }
    }
  }
  std::string out = "<";
  for (const std::string& w : words) {
    if (chosen.count(w) > 0) out += "..." + w;
  }
  return out + "...>";
}

}  // namespace

std::vector<std::string> UniqueShortNames(const std::vector<std::string_view>& names) {
  std::vector<std::string> out(names.size());
  std::map<std::string, std::vector<size_t>> by_short;
  for (size_t i = 0; i < names.size(); ++i) {
    out[i] = names[i].empty() ? std::string("(unnamed)") : ShortKernelName(names[i]);
    by_short[out[i]].push_back(i);
  }
  for (auto& [short_name, group] : by_short) {
    if (group.size() < 2) continue;
    std::vector<GroupContext> context(group.size());
    for (size_t g = 0; g < group.size(); ++g) {
      context[g].text = Context(names[group[g]], short_name);
      context[g].words = Words(context[g].text);
      context[g].word_set.insert(context[g].words.begin(), context[g].words.end());
    }
    for (size_t g = 0; g < group.size(); ++g) {
      std::vector<const GroupContext*> others;
      for (size_t h = 0; h < group.size(); ++h) {
        if (h != g) others.push_back(&context[h]);
      }
      out[group[g]] = short_name + Distinguish(context[g], others);
    }
  }
  // Last resort (a context that is a prefix of another's, or equal
  // demangled names): number the repeats in the order of their full names,
  // so that a label never depends on the order names were read in.
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < out.size(); ++i) by_label[out[i]].push_back(i);
  std::set<std::string> taken(out.begin(), out.end());
  for (auto& [label, group] : by_label) {
    if (group.size() < 2) continue;
    std::vector<std::pair<std::string, size_t>> order;
    for (size_t i : group) order.emplace_back(Demangle(names[i]) + '\0' + std::string(names[i]), i);
    std::sort(order.begin(), order.end());
    int k = 2;
    for (size_t n = 1; n < order.size(); ++n) {
      std::string numbered;
      do {
        numbered = label + " #" + std::to_string(k++);
      } while (taken.count(numbered) > 0);
      taken.insert(numbered);
      out[order[n].second] = numbered;
    }
    out[order[0].second] = label;
  }
  return out;
}

}  // namespace tracer::analysis
