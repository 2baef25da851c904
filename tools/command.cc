#include "tools/command.h"

#include <CLI/CLI.hpp>

namespace tracer::cli {

std::vector<Command>& Commands() {
  static std::vector<Command> commands;
  return commands;
}

std::vector<std::string> ProgramArgs(const CLI::App& sub, std::vector<std::string> args,
                                     size_t first) {
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') {
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i), "--");
      break;
    }
    // --name=value and -oVALUE carry their value; an unknown option is left
    // for CLI11 to report.
    if (a.find('=') != std::string::npos || (a[1] != '-' && a.size() > 2)) continue;
    const CLI::Option* opt = sub.get_option_no_throw(a);
    if (opt != nullptr && opt->get_expected_min() > 0) ++i;
  }
  return args;
}

}  // namespace tracer::cli
