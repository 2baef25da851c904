#include "tools/command.h"

namespace tracer::cli {

std::vector<Command>& Commands() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace tracer::cli
