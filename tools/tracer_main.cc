// `tracer`: capture with `tracer run`, then read with report / diff / export /
// import. The commands live in cmd_*.cc.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tools/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "tracer: a low-overhead GPU profiler for training runs.\n"
      "Capture NVTX ranges and CUDA activity of a program, then get per-range,\n"
      "per-kernel, per-layer tables without writing SQL.\n\n"
      "  tracer run -o run.trace python train.py\n"
      "  tracer report run.trace\n",
      "tracer"};
  app.set_version_flag("--version", std::string("tracer ") + TRACER_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  auto& commands = tracer::cli::Commands();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  std::map<CLI::App*, std::function<int()>> runners;
  std::vector<std::string> args(argv, argv + argc);
  // Only the command named first gets its options: setting up every
  // command's (a few hundred CLI11 options and validators) took about
  // 0.1 ms of CPU per run. Any other first word (--help, a typo) sets up
  // all, so that CLI11 answers it as before.
  const bool named =
      args.size() > 1 && std::any_of(commands.begin(), commands.end(),
                                     [&](const auto& c) { return c.name == args[1]; });
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    if (named && c.name != args[1]) continue;
    runners[sub] = c.setup(*sub);
    if (c.program_follows && args.size() > 1 && args[1] == c.name) {
      args = tracer::cli::ProgramArgs(*sub, std::move(args), 2);
    }
  }
  // CLI11 reports a bad command line only by throwing ParseError (its API);
  // app.exit prints it and gives the exit code.
  try {
    // CLI11 takes the arguments last first.
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) {
      // Expected failures come back as a Status / exit code; this is the
      // last guard for the truly exceptional (std::bad_alloc on a trace too
      // large for memory, a library bug): one line and exit 1, not
      // std::terminate's abort.
      try {
        return run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tracer %s: error: %s\n", sub->get_name().c_str(), e.what());
        return 1;
      }
    }
  }
  return 1;
}
