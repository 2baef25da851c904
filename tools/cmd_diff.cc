// `tracer diff A B`: two runs side by side per range name, group or kernel,
// with A, B, B-A and B/A, and the rows found on one side only.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/diff.h"
#include "libtracer/analysis/reports/html_report.h"
#include "libtracer/analysis/reports/record_selection.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/reports/row_selection.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"
#include "tools/cli_util.h"
#include "tools/command.h"
#include "tools/groups_files.h"

namespace tracer::cli {
namespace {

constexpr const char* kHelpFooter = R"(
Examples:
  tracer diff mlora.trace peft.trace                       per range name
  tracer diff mlora.trace peft.trace --groups peft     per group (shipped peft.groups)
  tracer diff a.trace b.trace --groups lora.groups --by layer_id
  tracer diff before.trace after.trace --table kernels --format csv
  tracer diff a.trace b.trace --filter '^f_lora' --top 10   the 10 largest changes
  tracer diff a.trace b.trace --table group-metrics --groups mlora   PM metrics per group

Tables:
  ranges    key: range name (and domain); compares instances, CPU total, GPU
            projected total, kernel time.
  groups    key: group (and --by keys); compares instances, CPU, GPU
            projected, GPU busy, kernel time (see `tracer report --help`).
  kernels   key: kernel name; compares count and total time (the full name
            comes last, after the numbers).
  metrics   key: range name (and domain) and PM metric; compares the
            time-weighted mean, coverage, samples and GPU span (definitions:
            `tracer report --help`, metrics).
  kernel-metrics  the same per kernel name and metric.
  group-metrics   the same per group (--groups, --by keys) and metric.

--groups NAME|FILE: a groups file, or the name of a shipped one (mlora, peft;
installed in share/tracer/groups); it makes groups the default table.

Columns: <value>_a, <value>_b, <value>_delta (B-A), <value>_ratio (B/A, empty
when A is 0 or missing), and 'In': both, A only or B only. Rows are ordered by
the size of the change (|B-A| of CPU total for ranges and groups, of total time
for kernels), largest first; rows found in one trace only come after the
matched ones. --sort total|count|avg|name orders by B's values or the name
instead; --filter and --top select rows as in `tracer report`. Inputs are anything `tracer
report` reads (streams, nsys SQLite exports, Kineto JSON). Range names are
normalized as in `tracer report` (emit_nvtx per-call suffixes removed, so two
ranks' "aten::mm, seq = 7, op_id = 42" and "aten::mm, seq = 9, op_id = 77"
are one row; --raw-names compares the names as recorded).

--steps and --time select the same steps / window in each run before the
tables are built (see `tracer report --help`, Selections): e.g. --steps 5-
leaves both runs' warm-up out.
)";

struct DiffArgs {
  std::string a, b;
  std::string table;  // "" = groups with --groups, else ranges
  std::string format = "text";
  std::string main_thread = "auto";
  std::string output;
  bool force_overwrite = false;
  size_t top = 0;
  std::string sort = "change";
  std::string filter;
  analysis::reports::ExtraTableOptions extra;
  NameOptions names;
  std::string steps, time;  // --steps / --time, applied to both runs
  ViewOptions view;         // --timeunit, --columns
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "tracer diff: %s\n", message.c_str());
  return 1;
}

bool Load(const std::string& path, const analysis::RangeNameRules& names, analysis::Trace* trace) {
  std::string error;
  if (!analysis::LoadInput(path, trace, &error)) {
    std::fprintf(stderr, "tracer diff: %s\n", error.c_str());
    return false;
  }
  PrintWarnings("diff", *trace);
  analysis::NormalizeRangeNames(trace, names);
  return true;
}

// metrics, kernel-metrics, group-metrics: one of the tables --table metrics
// builds in tracer report.
StatusOr<analysis::Table> MetricsSide(const analysis::AnalyzedTrace& analyzed,
                                      const DiffArgs& args) {
  auto extra = args.extra;
  if (args.table != "group-metrics") extra.groups_file.clear();
  auto tables = analysis::reports::BuildExtraTables(analyzed, {"metrics"}, extra);
  if (!tables.ok()) return tables.status();
  for (analysis::Table& t : *tables) {
    if (t.name == args.table) return std::move(t);
  }
  return Status::Error("no table " + args.table);
}

StatusOr<analysis::Table> BuildSide(const analysis::AnalyzedTrace& analyzed, const DiffArgs& args) {
  if (args.table == "metrics" || args.table == "kernel-metrics" || args.table == "group-metrics") {
    return MetricsSide(analyzed, args);
  }
  if (args.table == "groups") {
    auto tables = analysis::reports::BuildExtraTables(analyzed, {"groups"}, args.extra);
    if (!tables.ok()) return tables.status();
    return std::move(tables->front());
  }
  analysis::ReportOptions options;
  if (args.table == "kernels") return analysis::KernelsTable(analyzed, options);
  return analysis::RangesTable(analyzed, options);
}

int RunDiff(DiffArgs args) {
  if (!args.extra.groups_file.empty()) {
    std::string error;
    args.extra.groups_file = ResolveGroupsFile(args.extra.groups_file, &error);
    if (args.extra.groups_file.empty()) return Fail(error);
  }
  if (args.table.empty()) args.table = args.extra.groups_file.empty() ? "ranges" : "groups";
  // html: the diff table and bars of A and B (html_report.h).
  const bool html = args.format == "html";
  analysis::OutputFormat format = analysis::OutputFormat::kJson;
  if (!html && !analysis::ParseOutputFormat(args.format, &format)) {
    return Fail("--format: unknown format '" + args.format + "' (text, csv, md, json, html)");
  }
  analysis::reports::DiffSpec spec;
  if (args.table == "ranges") {
    spec.keys = {"domain", "range"};
    spec.values = {"instances", "cpu_total_ns", "gpu_proj_total_ns", "kernel_ns"};
  } else if (args.table == "kernels") {
    // The numbers before the long full name (it is a key too).
    spec.keys = {"kernel"};
    spec.values = {"count", "total_ns"};
    spec.tail_keys = {"full_name"};
  } else if (args.table == "groups") {
    if (args.extra.groups_file.empty()) return Fail("--table groups needs --groups FILE");
    spec.keys = {"group"};
    for (std::string& k : analysis::reports::SplitComma(args.extra.by)) {
      spec.keys.push_back(std::move(k));
    }
    spec.values = {"instances", "cpu_ns", "gpu_proj_ns", "gpu_busy_ns", "kernel_ns"};
  } else if (args.table == "metrics") {
    spec = {{"domain", "range", "metric"}, {"mean", "coverage_pct", "samples", "span_ns"}};
  } else if (args.table == "kernel-metrics") {
    spec = {{"kernel", "full_name", "metric"}, {"mean", "coverage_pct", "samples", "span_ns"}};
  } else if (args.table == "group-metrics") {
    if (args.extra.groups_file.empty()) return Fail("--table group-metrics needs --groups FILE");
    spec.keys = {"group"};
    for (std::string& k : analysis::reports::SplitComma(args.extra.by)) {
      spec.keys.push_back(std::move(k));
    }
    spec.keys.push_back("metric");
    spec.values = {"mean", "coverage_pct", "samples", "span_ns"};
  } else {
    return Fail("--table: unknown table '" + args.table +
                "' (ranges, groups, kernels, metrics, kernel-metrics, group-metrics)");
  }
  analysis::reports::RowSelection selection;
  selection.report.top = args.top;
  selection.report.filter = args.filter;
  if (args.sort == "change") {
    selection.by_change = true;
  } else {
    selection.sort_given = true;
    if (args.sort == "total") {
      selection.report.sort = analysis::SortKey::kTotal;
    } else if (args.sort == "count") {
      selection.report.sort = analysis::SortKey::kCount;
    } else if (args.sort == "avg") {
      selection.report.sort = analysis::SortKey::kAvg;
    } else if (args.sort == "name") {
      selection.report.sort = analysis::SortKey::kName;
    } else {
      return Fail("--sort: unknown key '" + args.sort + "' (change, total, count, avg, name)");
    }
  }
  if (tracer::Status s = analysis::RangeFilter::Check(selection.report); !s.ok()) {
    return Fail(s.message());
  }
  if (!MayWrite("diff", args.output, args.force_overwrite)) return 1;
  analysis::AttributionOptions attribution;
  if (args.main_thread == "off") {
    attribution.main_thread = analysis::MainThreadMode::kOff;
  } else if (args.main_thread != "auto") {
    return Fail("--main-thread: expected auto or off, got '" + args.main_thread + "'");
  }
  analysis::RangeNameRules names;
  if (!BuildNameRules("diff", args.names, &names)) return 1;
  analysis::Trace ta, tb;
  if (!Load(args.a, names, &ta) || !Load(args.b, names, &tb)) {
    return Fail("cannot read both inputs");
  }
  // Each run is cut by the same selection, counted from its own start and
  // its own steps (tracer report's --steps / --time).
  std::string selection_note;
  for (auto [trace, path] : {std::pair{&ta, &args.a}, std::pair{&tb, &args.b}}) {
    const auto selected = analysis::reports::SelectRecords(
        {args.steps, args.time, args.extra.step_range}, attribution, trace);
    if (!selected.ok()) return Fail(*path + ": " + selected.status().message());
    selection_note = *selected;
  }
  const analysis::AnalyzedTrace aa(ta, attribution), ab(tb, attribution);
  auto side_a = BuildSide(aa, args);
  if (!side_a.ok()) return Fail("error: " + side_a.status().message());
  auto side_b = BuildSide(ab, args);
  if (!side_b.ok()) return Fail("error: " + side_b.status().message());
  auto joined = analysis::reports::DiffTables(*side_a, *side_b, spec);
  if (!joined.ok()) return Fail("error: " + joined.status().message());
  analysis::Table diff = std::move(*joined);
  diff.notes.insert(diff.notes.begin(), "A: " + args.a + "; B: " + args.b);
  if (!selection_note.empty()) diff.notes.push_back(selection_note + " (of A and of B)");
  analysis::reports::SelectRows(selection, &diff);
  analysis::RenderOptions render;
  if (!BuildRenderOptions("diff", args.view, {diff}, &render)) return 1;
  const std::string text =
      html ? analysis::reports::HtmlDiffReport(std::move(diff), spec.keys, spec.values,
                                               {"A: " + args.a, "B: " + args.b}, 200)
           : analysis::RenderTable(diff, format, render);
  if (!WriteOutput(text, args.output)) return Fail(args.output + ": cannot write");
  return 0;
}

const Registrar kDiff{Command{
    "diff", "Compare two runs side by side per range, group or kernel (A, B, B-A, B/A)", 30,
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<DiffArgs>();
      sub.add_option("A", args->a, "Baseline trace")->required();
      sub.add_option("B", args->b, "Trace compared with A")->required();
      sub.add_option("--table,-t", args->table,
                     "ranges (default), groups, kernels, metrics, kernel-metrics or group-metrics");
      sub.add_option("--groups", args->extra.groups_file,
                     "Groups file or shipped name (mlora, peft); alone, it shows the groups table");
      sub.add_option("--by", args->extra.by,
                     "groups: placeholders kept apart, comma separated (layer_id, adapter)");
      sub.add_option("--format,-f", args->format,
                     "text (default), csv, md, json or html (the table and bars of A and B)");
      sub.add_option("--main-thread", args->main_thread,
                     "auto (default) or off (nsys-identical attribution)");
      sub.add_option("--steps", args->steps,
                     "Only these steps of each run (as tracer report --steps: 10-20, 3-)");
      sub.add_option("--time", args->time,
                     "Only this window of each run, from its start (as tracer report --time: "
                     "1.5s:2.5s, 200ms:)");
      sub.add_option("--step-range", args->extra.step_range,
                     "Name of the step range for --steps (default: found as for phases)");
      sub.add_option("--top", args->top, "Keep the first N rows (0 = all)");
      sub.add_option("--sort", args->sort,
                     "Row order: change (default: |B-A| of the first time value, largest "
                     "first), or total, count, avg (B's values) or name");
      sub.add_option("--filter", args->filter,
                     "Only rows whose range, group or kernel name matches this regular "
                     "expression (ECMAScript)");
      sub.add_option("--output,-o", args->output,
                     "Write to this file instead of stdout (an existing file is refused unless "
                     "--force-overwrite)");
      AddForceOverwrite(sub, &args->force_overwrite);
      AddViewOptions(sub, &args->view);
      AddNameOptions(sub, &args->names);
      sub.footer(kHelpFooter);
      return [args] { return RunDiff(*args); };
    }}};

}  // namespace
}  // namespace tracer::cli
