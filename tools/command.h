// Command registry of the `tracer` CLI. Each cmd_*.cc defines one command
// and registers it with a static Registrar, so adding a command touches no
// other file.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tracer::cli {

struct Command {
  std::string name;
  std::string summary;
  int order = 100;  // position in `tracer --help`
  // Adds the subcommand's flags to `sub`; returns the function that runs it
  // (called after parsing, returns the process exit code).
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& Commands();

struct Registrar {
  explicit Registrar(Command c) { Commands().push_back(std::move(c)); }
};

}  // namespace tracer::cli
