#include "libtracer/analysis/reports/html_report.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <utility>

#include "libtracer/analysis/tables/html_render.h"

namespace tracer::analysis::reports {
namespace {

int ColumnIndex(const Table& t, std::string_view name) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const Table* FindTable(const std::vector<HtmlTable>& tables, std::string_view name) {
  for (const HtmlTable& t : tables) {
    if (t.table.name == name) return &t.table;
  }
  return nullptr;
}

HtmlTable* FindHtmlTable(std::vector<HtmlTable>* tables, std::string_view name) {
  for (HtmlTable& t : *tables) {
    if (t.table.name == name) return &t;
  }
  return nullptr;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool AnyValue(const Table& t, int column) {
  if (column < 0) return false;
  for (const auto& row : t.rows) {
    if (static_cast<size_t>(column) < row.size() &&
        !std::holds_alternative<std::monostate>(row[column])) {
      return true;
    }
  }
  return false;
}

int64_t IntCell(const std::vector<Cell>& row, int column) {
  if (column < 0 || static_cast<size_t>(column) >= row.size()) return 0;
  if (const auto* i = std::get_if<int64_t>(&row[column])) return *i;
  return 0;
}

std::string TextCell(const std::vector<Cell>& row, int column) {
  if (column < 0 || static_cast<size_t>(column) >= row.size()) return "";
  if (const auto* s = std::get_if<std::string>(&row[column])) return *s;
  return "";
}

// The table `name` as the CLI builds it (BuildExtraTables), or why not.
StatusOr<Table> ExtraTable(const AnalyzedTrace& analyzed, const std::string& name,
                           const ExtraTableOptions& options) {
  auto built = BuildExtraTables(analyzed, {name}, options);
  if (!built.ok()) return built.status();
  if (built->empty()) return Status::Error("no " + name + " table");
  return std::move(built->front());
}

HtmlChart BarsChart(const Table& t) {
  HtmlChart c;
  c.kind = HtmlChart::Kind::kBars;
  c.id = "bars";
  c.table = t.name;
  c.limit = kHtmlBarRows;
  if (t.name == "groups") {
    c.title = "CPU and GPU time per group";
    c.label_columns = {"group"};
    for (size_t i = 1; i < t.columns.size() && t.columns[i].name != "members"; ++i) {
      c.label_columns.push_back(t.columns[i].name);  // --by keys
    }
    c.modes = {{"time", {{"cpu_ns", "CPU"}, {"gpu_proj_ns", "GPU projected"}}}};
  } else {
    c.title = "CPU and GPU time per range (top ranges; --groups for groups)";
    if (ColumnIndex(t, "process") >= 0) c.label_columns.push_back("process");
    c.label_columns.push_back("range");
    c.modes = {{"time", {{"cpu_total_ns", "CPU total"}, {"gpu_proj_total_ns", "GPU projected"}}}};
  }
  c.notes = {"The first " + std::to_string(kHtmlBarRows) + " rows of the " + t.name +
             " table in its order (--sort), each with its CPU and GPU projected time; the " +
             "table below has every column."};
  return c;
}

HtmlChart PhasesChart(const Table& t) {
  HtmlChart c;
  c.kind = HtmlChart::Kind::kStack;
  c.id = "phases";
  c.table = t.name;
  c.title = "Phases of each step";
  c.label_columns = {"step"};
  c.skip_label = "all";
  if (ColumnIndex(t, "process") >= 0) c.group_column = "process";
  for (const char* side : {"cpu", "gpu"}) {
    const std::string suffix = std::string("_") + side + "_ns";
    if (std::string(side) == "gpu" && !AnyValue(t, ColumnIndex(t, "step_gpu_ns"))) continue;
    HtmlChart::Mode m{std::string(side) == "cpu" ? "CPU" : "GPU (projected span)", {}};
    for (const Column& col : t.columns) {
      if (EndsWith(col.name, suffix) && col.name != "step" + suffix) {
        m.series.push_back({col.name, col.name.substr(0, col.name.size() - suffix.size())});
      }
    }
    c.modes.push_back(std::move(m));
  }
  c.notes = {
      "One column per step: its time split into the phases of the phases table "
      "(--phase-rules), stacked; they add up to the step's time."};
  return c;
}

// Leaves out of a timeline table the ranges too short to see in a flame
// graph, and past kHtmlFlameRows; says so in a note.
void TrimFlameRows(Table* t) {
  const int index = ColumnIndex(*t, "index"), cpu = ColumnIndex(*t, "cpu_ns");
  std::vector<std::vector<Cell>> kept;
  int64_t step_ns = 0;
  size_t dropped = 0, total = t->rows.size();
  for (auto& row : t->rows) {
    if (IntCell(row, index) == 0) step_ns = IntCell(row, cpu);  // each process's step row
    const bool visible = IntCell(row, index) == 0 ||
                         static_cast<uint64_t>(IntCell(row, cpu)) * kHtmlFlameMinFraction >=
                             static_cast<uint64_t>(step_ns);
    if (visible && kept.size() < kHtmlFlameRows) {
      kept.push_back(std::move(row));
    } else {
      ++dropped;
    }
  }
  t->rows = std::move(kept);
  if (dropped > 0) {
    t->notes.push_back("Flame graph: " + std::to_string(dropped) + " of " + std::to_string(total) +
                       " ranges left out (shorter than 1/" + std::to_string(kHtmlFlameMinFraction) +
                       " of their step, or past " + std::to_string(kHtmlFlameRows) +
                       " ranges); tracer report --table timeline lists them all.");
  }
}

HtmlChart FlameChart(const Table& t, int64_t step, bool chosen) {
  HtmlChart c;
  c.kind = HtmlChart::Kind::kFlame;
  c.id = "flame";
  c.table = t.name;
  c.step = step;
  c.title = "Flame graph of step " + std::to_string(step) +
            (chosen ? " (--flame-step)" : " (the step of median CPU time)");
  if (ColumnIndex(t, "process") >= 0) c.group_column = "process";
  c.notes = {
      "The step's ranges (the timeline table), nested by depth, widths by CPU time; "
      "ranges of other threads in their own rows. Hover for name and duration; click to "
      "zoom."};
  return c;
}

HtmlChart SpreadChart(const Table& t) {
  HtmlChart c;
  c.kind = HtmlChart::Kind::kSpread;
  c.id = "ranks";
  c.table = t.name;
  c.title = "Spread across ranks (min, median, max; the slowest named)";
  c.label_columns = {"name"};
  c.limit = 80;
  for (const char* side : {"cpu", "gpu"}) {
    const std::string s = side;
    if (s == "gpu" && !AnyValue(t, ColumnIndex(t, "gpu_max_ns"))) continue;
    c.modes.push_back({s == "cpu" ? "CPU" : "GPU projected",
                       {{s + "_min_ns", "min"},
                        {s + "_median_ns", "median"},
                        {s + "_max_ns", "max"},
                        {s + "_slowest", "slowest"}}});
  }
  c.notes = {
      "Each step and range of the ranks table (the first 80 rows): the bar runs from "
      "the fastest process to the slowest (red dot, named on the right), the tick is "
      "the median."};
  return c;
}

}  // namespace

std::string HtmlDiffReport(Table diff, const std::vector<std::string>& keys,
                           const std::vector<std::string>& values,
                           const std::vector<std::string>& header_lines, size_t max_rows) {
  HtmlPage page;
  page.title = "tracer diff";
  page.header_lines = header_lines;
  page.max_rows = max_rows;
  HtmlChart c;
  c.kind = HtmlChart::Kind::kBars;
  c.id = "bars";
  c.table = diff.name;
  c.limit = kHtmlBarRows;
  c.label_columns = keys;
  c.title = "A and B side by side";
  HtmlChart::Mode m{"time", {}};
  for (const std::string& v : values) {
    if (ColumnIndex(diff, v + "_a") < 0 ||
        diff.columns[ColumnIndex(diff, v + "_a")].kind != ColumnKind::kDuration) {
      continue;
    }
    const std::string title = diff.columns[ColumnIndex(diff, v + "_a")].title;
    const std::string name = title.size() > 2 ? title.substr(0, title.size() - 2) : v;
    m.series.push_back({v + "_a", name + " A"});
    m.series.push_back({v + "_b", name + " B"});
    if (m.series.size() >= 4) break;  // CPU and GPU: more would crowd the bars
  }
  c.modes = {std::move(m)};
  c.notes = {"The first " + std::to_string(kHtmlBarRows) +
             " rows of the diff table in its order; the table below has every column."};
  if (!c.modes.front().series.empty()) page.charts.push_back(std::move(c));
  page.tables.push_back({std::move(diff), 0, true});
  return RenderHtmlPage(page);
}

int64_t MedianStep(const Table& phases) {
  const int step = ColumnIndex(phases, "step"), cpu = ColumnIndex(phases, "step_cpu_ns");
  const int process = ColumnIndex(phases, "process");
  if (step < 0 || cpu < 0 || phases.rows.empty()) return -1;
  const std::string first = TextCell(phases.rows.front(), process);
  std::vector<std::pair<int64_t, int64_t>> steps;  // (cpu ns, number)
  for (const auto& row : phases.rows) {
    if (TextCell(row, process) != first) break;
    const std::string number = TextCell(row, step);
    // "all" and empty cells are no number; from_chars, not stoll: a number
    // beyond int64 is skipped, not thrown.
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || end != number.data() + number.size()) continue;
    steps.emplace_back(IntCell(row, cpu), n);
  }
  if (steps.empty()) return -1;
  std::sort(steps.begin(), steps.end());
  return steps[(steps.size() - 1) / 2].second;
}

StatusOr<std::string> HtmlReport(const AnalyzedTrace& analyzed, std::vector<Table> tables,
                                 const HtmlReportOptions& options) {
  HtmlPage page;
  page.title = "tracer report";
  page.header_lines = options.header_lines;
  page.max_rows = options.max_rows;
  for (Table& t : tables) page.tables.push_back({std::move(t), 0, true});

  // Bars: the groups table, else the ranges table.
  if (const Table* t = FindTable(page.tables, "groups")) {
    page.charts.push_back(BarsChart(*t));
  } else if (const Table* r = FindTable(page.tables, "ranges")) {
    page.charts.push_back(BarsChart(*r));
  }

  // Phases, and the flame graph of one of its steps.
  if (FindTable(page.tables, "phases") == nullptr) {
    auto phases = ExtraTable(analyzed, "phases", options.extra);
    if (phases.ok()) {
      page.tables.push_back({std::move(phases).value(), 0, true});
    } else {
      page.chart_notes.push_back("No phases chart or flame graph: " + phases.status().message());
    }
  }
  if (HtmlTable* phases = FindHtmlTable(&page.tables, "phases")) {
    phases->embed_rows = std::max(options.max_rows, kHtmlPhaseRows);
    page.charts.push_back(PhasesChart(phases->table));
    const bool chosen = options.flame_step >= 0;
    const int64_t step = chosen ? options.flame_step : MedianStep(phases->table);
    ExtraTableOptions extra = options.extra;
    extra.iteration = step;
    auto timeline = ExtraTable(analyzed, "timeline", extra);
    if (!timeline.ok() && chosen) {
      return Status::Error("--flame-step " + std::to_string(step) + ": " +
                           timeline.status().message());
    }
    if (!timeline.ok()) {
      page.chart_notes.push_back("No flame graph: " + timeline.status().message());
    } else {
      Table& t = *timeline;
      const bool shown = FindTable(page.tables, "timeline") == nullptr;
      if (!shown) t.name = "flame";  // the user's own --table timeline stays as asked
      const size_t source_rows = t.rows.size();
      TrimFlameRows(&t);
      page.charts.push_back(FlameChart(t, step, chosen));
      page.tables.push_back({std::move(t), kHtmlFlameRows, shown, source_rows});
    }
  }

  // Cross-rank spread with several processes.
  if (analyzed.trace().processes.size() > 1) {
    if (FindTable(page.tables, "ranks") == nullptr) {
      auto ranks = ExtraTable(analyzed, "ranks", options.extra);
      if (ranks.ok()) {
        page.tables.push_back({std::move(ranks).value(), 0, true});
      } else {
        page.chart_notes.push_back("No cross-rank chart: " + ranks.status().message());
      }
    }
    if (const Table* t = FindTable(page.tables, "ranks")) page.charts.push_back(SpreadChart(*t));
  } else {
    page.chart_notes.push_back("One process: no cross-rank chart (it compares several ranks).");
  }
  return RenderHtmlPage(page);
}

}  // namespace tracer::analysis::reports
