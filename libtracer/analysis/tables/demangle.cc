#include "libtracer/analysis/tables/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

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

std::string ShortKernelName(std::string_view name) {
  // Names arrive mangled (CUPTI) or already demangled (nsys exports, Kineto):
  // both are shortened; a name without a template or parameter list is a
  // plain kernel name ("ampere_sgemm_128x64_nn") and stays as it is.
  const std::string full = Demangle(name);
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

}  // namespace tracer::analysis
