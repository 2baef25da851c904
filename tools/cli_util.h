// Helpers shared by the `tracer` commands (cmd_*.cc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/importers/import_fields.h"
#include "libtracer/analysis/importers/range_names.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/render.h"

namespace CLI {
class App;
}

namespace tracer::cli {

// Range-name options of report, diff and export (importers/range_names.h).
struct NameOptions {
  bool raw = false;        // --raw-names
  std::string rules_file;  // --name-rules FILE
};
void AddNameOptions(CLI::App& sub, NameOptions* options);
// The rules the options ask for; false after printing
// "tracer COMMAND: <file:line: what>" when the rules file is bad.
bool BuildNameRules(std::string_view command, const NameOptions& options,
                    analysis::RangeNameRules* rules);

// How report and diff print their tables: --timeunit, --columns.
struct ViewOptions {
  std::string time_unit;  // "" = a unit per value (text) / ns (csv, json)
  std::string columns;    // comma separated; "" = all non-empty columns
};
void AddViewOptions(CLI::App& sub, ViewOptions* options);
// The render options the view options ask for, checked against the tables
// about to be printed; false after printing "tracer COMMAND: <what>".
bool BuildRenderOptions(std::string_view command, const ViewOptions& options,
                        const std::vector<analysis::Table>& tables, analysis::RenderOptions* out);

// Prints each distinct warning of trace once, as "tracer COMMAND: warning: ...".
void PrintWarnings(std::string_view command, const analysis::Trace& trace);
void PrintWarnings(std::string_view command, const std::vector<std::string>& warnings);

// Appends every file to trace (analysis::LoadInput), printing
// "tracer COMMAND: <error>" for each file that cannot be read, then the
// warnings (PrintWarnings). Returns how many files were read. fields: see
// analysis::importers::ImportFields.
size_t LoadInputs(
    std::string_view command, const std::vector<std::string>& files, analysis::Trace* trace,
    analysis::importers::ImportFields fields = analysis::importers::ImportFields::kAll);

// A one-line progress bar on stderr for large files when stderr is a
// terminal; empty otherwise.
analysis::ReadProgress ProgressBar(std::string_view command, const std::string& file);

// --force-overwrite (nsys's spelling) on a command that writes files.
void AddForceOverwrite(CLI::App& sub, bool* force);
// Whether path may be written: "" or "-" (stdout), absent, or force. Else
// prints "tracer COMMAND: PATH already exists: not overwritten (...)" and
// returns false: an earlier result is never replaced silently.
bool MayWrite(std::string_view command, const std::string& path, bool force);

// Writes text to stdout when path is empty or "-", else to the file path.
// False when the file cannot be written.
bool WriteOutput(const std::string& text, const std::string& path);

}  // namespace tracer::cli
