// `tracer export FILE... --format chrome [-o out.json]`: converts traces for
// other viewers. Formats come from analysis/export/export_registry.h; this file
// registers "chrome", other files register more (see that header).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "libtracer/analysis/export/chrome_export.h"
#include "libtracer/analysis/export/export_registry.h"
#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "tools/cli_util.h"
#include "tools/command.h"
#include "tools/groups_files.h"

namespace tracer::cli {
namespace {

struct ExportArgs {
  std::vector<std::string> files;
  std::string format = "chrome";
  std::string output;
  bool force_overwrite = false;
  NameOptions names;
  analysis::reports::ExtraTableOptions extra;  // --groups, --by
};

bool WriteChrome(const analysis::Trace& trace, const std::string& path,
                 const std::vector<analysis::Table>& tables, std::string* error) {
  if (path == "-") return analysis::WriteChromeTrace(trace, std::cout, error, tables);
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    *error = path + ": cannot open for writing";
    return false;
  }
  if (!analysis::WriteChromeTrace(trace, out, error, tables)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

const analysis::ExportFormatRegistrar kChrome{
    {"chrome", "Chrome trace JSON for ui.perfetto.dev / chrome://tracing", ".json", WriteChrome}};

int Fail(const std::string& message) {
  std::fprintf(stderr, "tracer export: %s\n", message.c_str());
  return 1;
}

std::string FormatList() {
  std::string names;
  for (const auto& f : analysis::ExportFormats()) names += (names.empty() ? "" : ", ") + f.name;
  return names;
}

int RunExport(ExportArgs args) {
  const analysis::ExportFormat* format = nullptr;
  for (const auto& f : analysis::ExportFormats()) {
    if (f.name == args.format) format = &f;
  }
  if (format == nullptr) {
    return Fail("--format: unknown format '" + args.format + "' (" + FormatList() + ")");
  }
  if (!args.extra.groups_file.empty()) {
    std::string error;
    args.extra.groups_file = ResolveGroupsFile(args.extra.groups_file, &error);
    if (args.extra.groups_file.empty()) return Fail(error);
  }
  analysis::RangeNameRules names;
  if (!BuildNameRules("export", args.names, &names)) return 1;
  analysis::Trace trace;
  if (LoadInputs("export", args.files, &trace) == 0) return Fail("nothing could be read");
  analysis::NormalizeRangeNames(&trace, names);
  std::vector<analysis::Table> tables;
  if (!args.extra.groups_file.empty()) {
    const analysis::AnalyzedTrace analyzed(trace, {});
    auto groups = analysis::reports::BuildExtraTables(analyzed, {"groups"}, args.extra);
    if (!groups.ok()) return Fail("error: " + groups.status().message());
    tables = std::move(*groups);
  }
  std::string output = args.output;
  if (output.empty()) {
    output = args.files.front();
    const size_t slash = output.find_last_of('/');
    const size_t dot = output.find_last_of('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      output.resize(dot);
    }
    output += format->extension;
  }
  if (!MayWrite("export", output, args.force_overwrite)) return 1;
  std::string error;
  if (!format->write(trace, output, tables, &error)) return Fail(error);
  if (output != "-") std::fprintf(stderr, "tracer export: wrote %s\n", output.c_str());
  return 0;
}

const Registrar kExport{Command{
    "export", "Convert traces for other tools (Chrome/Perfetto JSON, ...)", 40,
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<ExportArgs>();
      sub.add_option("files", args->files, "Trace files (several are merged)")->required();
      sub.add_option("--format,-f", args->format, "Output format (default: chrome)");
      sub.add_option("--output,-o", args->output,
                     "Output file ('-' = stdout; default: the first input with the format's "
                     "extension; an existing one is refused unless --force-overwrite)");
      AddForceOverwrite(sub, &args->force_overwrite);
      sub.add_option("--groups", args->extra.groups_file,
                     "Groups file, or the name of a shipped one (mlora, peft): adds the groups "
                     "table (csv: groups.csv; sqlite: TRACER_GROUPS; chrome: tracerTables.groups)");
      sub.add_option("--by", args->extra.by,
                     "groups: placeholders kept apart, comma separated (layer_id, adapter)");
      AddNameOptions(sub, &args->names);
      std::string formats = "\nFormats:\n";
      for (const auto& f : analysis::ExportFormats()) {
        formats += "  " + f.name + std::string(f.name.size() < 10 ? 10 - f.name.size() : 1, ' ') +
                   f.description + "\n";
      }
      formats +=
          "\nExamples:\n"
          "  tracer export run.trace --format chrome -o run.json   (open in ui.perfetto.dev)\n"
          "  tracer export rank0.trace rank1.trace -o both.json\n"
          "  tracer export run.trace --format csv --groups peft   (adds groups.csv)\n"
          "\nRange names are normalized as in `tracer report` (see its --help); the "
          "recorded\nname of a renamed range is kept: SQLite TRACER_NVTX_RAW_TEXT, Chrome "
          "args.raw_name.\n";
      sub.footer(formats);
      return [args] { return RunExport(*args); };
    }}};

}  // namespace
}  // namespace tracer::cli
