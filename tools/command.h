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
  // Everything from the first word that is not one of the command's options
  // (or an option's value) is a program and its arguments, as with
  // `nsys profile`: `tracer run python train.py --steps 1`. ProgramArgs
  // marks that word with "--" before CLI11 parses.
  bool program_follows = false;
};

std::vector<Command>& Commands();

// argv with "--" inserted before the first word of `sub`'s arguments
// (args[first..]) that is neither one of its options nor an option's value;
// unchanged when "--" comes first or no such word exists.
std::vector<std::string> ProgramArgs(const CLI::App& sub, std::vector<std::string> args,
                                     size_t first);

struct Registrar {
  explicit Registrar(Command c) { Commands().push_back(std::move(c)); }
};

}  // namespace tracer::cli
