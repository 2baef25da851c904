// The HTML renderer of `tracer report --format html`: one self-contained page
// (no network: its CSS, script and SVG charts are written inline) holding the
// report's tables as HTML tables and as JSON, from which the page's script
// draws the charts. The numbers a chart shows are the JSON's, which are the
// table cells `--format json` prints, so the page and the CLI agree.
//
// Untrusted text (range, kernel and file names) reaches the page two ways,
// both escaped here: HTML text and attributes (HtmlEscape) and the embedded
// JSON (ScriptSafeJson: nothing in it can close its <script> element).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

// & < > " ' as character references: safe in element text and in quoted
// attribute values.
std::string HtmlEscape(std::string_view s);

// A JSON text made safe to place inside <script type="application/json">:
// '<', '>' and '&' (only ever inside JSON strings) become \u escapes, so no
// "</script>" or "<!--" can appear; JSON.parse gives back the same value.
std::string ScriptSafeJson(std::string_view json);

// One chart of the page, drawn by the page's script from table `table`.
struct HtmlChart {
  enum class Kind {
    kBars,    // horizontal bars, one row per label, one bar per series
    kStack,   // one stacked column per row (steps), series stacked
    kFlame,   // a step's ranges (timeline table columns) nested by depth
    kSpread,  // min .. max with the median per row (ranks table columns)
  };
  struct Series {
    std::string column;  // a column name of the table
    std::string title;
  };
  // One way of looking at the table (e.g. CPU or GPU); a chart with several
  // offers a choice. kSpread: series are min, median, max, slowest.
  struct Mode {
    std::string title;
    std::vector<Series> series;
  };
  Kind kind = Kind::kBars;
  std::string id;     // element id suffix: "chart-<id>"
  std::string table;  // Table::name of the source
  std::string title;
  std::vector<std::string> notes;          // lines under the chart
  std::vector<std::string> label_columns;  // joined with " / " as the row label
  std::string group_column;  // one chart per value (e.g. "process"), chosen in the page
  std::string skip_label;    // rows whose label is this are not drawn (e.g. "all")
  std::vector<Mode> modes;
  size_t limit = 0;   // rows drawn at most (0 = all embedded rows)
  int64_t step = -1;  // kFlame: the step number shown
};

struct HtmlTable {
  Table table;
  // Rows embedded as JSON (chart data); the HTML table shows at most
  // HtmlPage::max_rows of them. 0 = HtmlPage::max_rows.
  size_t embed_rows = 0;
  bool show = true;  // false: embedded for a chart only, no HTML table
  // Rows of the table the CLI prints when `table` holds a chosen part of
  // them (a note says which); 0 = table.rows.size().
  size_t source_rows = 0;
};

struct HtmlPage {
  std::string title;
  std::vector<std::string> header_lines;  // inputs, selection
  std::vector<HtmlChart> charts;
  std::vector<std::string> chart_notes;  // why a chart is missing
  std::vector<HtmlTable> tables;
  size_t max_rows = 200;
};

// The whole page.
std::string RenderHtmlPage(const HtmlPage& page);

// The page's stylesheet and script (html_assets.cc).
std::string_view HtmlStyle();
std::string_view HtmlScript();

}  // namespace tracer::analysis
