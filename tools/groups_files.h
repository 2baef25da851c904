// `--groups NAME|FILE` of report, diff and export: the shipped groups files
// (data/groups/*.groups: mlora, peft) are found by name from any directory.
#pragma once

#include <string>
#include <vector>

namespace tracer::cli {

// Directories searched for NAME.groups, in order: <prefix>/share/tracer/groups
// beside the executable's install prefix (bin/../share/tracer/groups), then
// the source tree's data/groups (a tracer run from its build tree).
std::vector<std::string> GroupsDirs();

// The file --groups ARG means: ARG itself when it is an existing file, else
// ARG.groups (or ARG when it already ends in .groups) in the first of
// GroupsDirs() that has it. "" after a one-line *error listing the known
// names when neither exists.
std::string ResolveGroupsFile(const std::string& arg, std::string* error);

}  // namespace tracer::cli
