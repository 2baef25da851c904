// Formats of `tracer export`: adding one is one function plus one
// registration. Register from a file linked into the `tracer` binary (e.g.
// tools/cmd_export_<format>.cc, picked up by the tools/ cmd_*.cc glob):
//
//   static tracer::analysis::ExportFormatRegistrar reg({
//       "sqlite", "nsys-compatible SQLite database", ".sqlite",
//       [](const tracer::analysis::Trace& t, const std::string& out_path,
//          const std::vector<tracer::analysis::Table>& tables,
//          std::string* error) { return WriteSqlite(t, out_path, error); }});
//
// (Registering from inside the static analysis library would be dropped by
// the linker when nothing references that object file.)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

struct ExportFormat {
  std::string name;         // value of --format
  std::string description;  // one line for --help
  std::string extension;    // default output suffix, e.g. ".json"
  // Writes trace to out_path ("-" = stdout where the format allows it),
  // with `tables`: report tables the command built from its options (the
  // groups table of --groups), carried beside the format's own data.
  std::function<bool(const Trace&, const std::string& out_path, const std::vector<Table>& tables,
                     std::string* error)>
      write;
};

inline std::vector<ExportFormat>& ExportFormats() {
  static std::vector<ExportFormat> formats;
  return formats;
}

struct ExportFormatRegistrar {
  explicit ExportFormatRegistrar(ExportFormat f) { ExportFormats().push_back(std::move(f)); }
};

}  // namespace tracer::analysis
