#include "libtracer/analysis/tables/html_render.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "libtracer/analysis/tables/render.h"

namespace tracer::analysis {
namespace {

using Json = nlohmann::ordered_json;

const char* KindName(ColumnKind k) {
  switch (k) {
    case ColumnKind::kText:
      return "text";
    case ColumnKind::kCount:
      return "count";
    case ColumnKind::kDuration:
      return "duration";
    case ColumnKind::kPercent:
      return "percent";
    case ColumnKind::kRatio:
      return "ratio";
    case ColumnKind::kNumber:
      return "number";
    case ColumnKind::kBytes:
      return "bytes";
  }
  return "text";
}

const char* ChartKindName(HtmlChart::Kind k) {
  switch (k) {
    case HtmlChart::Kind::kBars:
      return "bars";
    case HtmlChart::Kind::kStack:
      return "stack";
    case HtmlChart::Kind::kFlame:
      return "flame";
    case HtmlChart::Kind::kSpread:
      return "spread";
  }
  return "bars";
}

// A cell as --format json writes it (render.cc JsonRows).
Json CellJson(const Cell& cell) {
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  if (const auto* i = std::get_if<int64_t>(&cell)) return *i;
  if (const auto* d = std::get_if<double>(&cell); d != nullptr && std::isfinite(*d)) return *d;
  return nullptr;
}

std::string Dump(const Json& j) {
  // Names are user bytes: invalid UTF-8 becomes U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

size_t EmbedRows(const HtmlTable& t, size_t max_rows) {
  return std::min(t.table.rows.size(), t.embed_rows == 0 ? max_rows : t.embed_rows);
}

Json TableJson(const HtmlTable& ht, size_t max_rows) {
  const Table& t = ht.table;
  Json j = Json::object();
  j["name"] = t.name;
  j["title"] = t.title;
  Json columns = Json::array();
  for (const Column& c : t.columns) {
    columns.push_back({{"name", c.name}, {"kind", KindName(c.kind)}, {"title", c.title}});
  }
  j["columns"] = std::move(columns);
  Json rows = Json::array();
  const size_t n = EmbedRows(ht, max_rows);
  for (size_t r = 0; r < n; ++r) {
    Json row = Json::array();
    for (size_t c = 0; c < t.columns.size(); ++c) {
      row.push_back(c < t.rows[r].size() ? CellJson(t.rows[r][c]) : Json(nullptr));
    }
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  j["total_rows"] = ht.source_rows != 0 ? ht.source_rows : t.rows.size();
  j["notes"] = t.notes;
  return j;
}

Json ChartJson(const HtmlChart& c) {
  Json j = Json::object();
  j["kind"] = ChartKindName(c.kind);
  j["id"] = c.id;
  j["title"] = c.title;
  j["table"] = c.table;
  j["label"] = c.label_columns;
  j["group"] = c.group_column;
  j["skip"] = c.skip_label;
  j["limit"] = c.limit;
  j["step"] = c.step;
  Json modes = Json::array();
  for (const HtmlChart::Mode& m : c.modes) {
    Json series = Json::array();
    for (const HtmlChart::Series& s : m.series) {
      series.push_back({{"column", s.column}, {"title", s.title}});
    }
    modes.push_back({{"title", m.title}, {"series", std::move(series)}});
  }
  j["modes"] = std::move(modes);
  return j;
}

bool IsNumeric(ColumnKind k) { return k != ColumnKind::kText; }

// A table cell: the text renderer's formatting (durations in their column's
// unit), the raw value (as the JSON has it) in data-v for sorting and for
// checks.
void AppendCell(const Cell& cell, ColumnKind kind, TimeUnit unit, std::string* out) {
  *out += IsNumeric(kind) ? "<td class=\"n\"" : "<td";
  if (!std::holds_alternative<std::monostate>(cell) && !std::holds_alternative<std::string>(cell)) {
    *out += " data-v=\"" + HtmlEscape(Dump(CellJson(cell))) + "\"";
  }
  const std::string text =
      kind == ColumnKind::kDuration ? FormatDurationIn(cell, unit) : FormatCell(cell, kind);
  *out += ">" + HtmlEscape(text) + "</td>";
}

std::string TableId(const std::string& name, std::set<std::string>* used) {
  std::string id;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    id += ok ? c : '_';
  }
  std::string unique = id;
  for (int i = 2; !used->insert(unique).second; ++i) unique = id + "-" + std::to_string(i);
  return unique;
}

void AppendTable(const HtmlTable& ht, size_t max_rows, const std::string& id, std::string* out) {
  const Table& t = ht.table;
  *out += "<section class=\"table\" id=\"s-" + id + "\">\n<h3>" +
          HtmlEscape(t.title.empty() ? t.name : t.title) + " <small>(" + HtmlEscape(t.name) +
          ")</small></h3>\n";
  const size_t shown = std::min(t.rows.size(), max_rows);
  *out += "<div class=\"tw\"><table class=\"data\" id=\"t-" + id + "\" data-table=\"" +
          HtmlEscape(t.name) + "\" data-rows=\"" +
          std::to_string(ht.source_rows != 0 ? ht.source_rows : t.rows.size()) + "\">\n<thead><tr>";
  // One unit per duration column, as in the text report, from the rows shown.
  const std::vector<TimeUnit> units = ColumnTimeUnits(t, TimeUnit::kAuto, shown);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    std::string title = c.title.empty() ? c.name : c.title;
    if (c.kind == ColumnKind::kDuration) title += std::string(" (") + TimeUnitName(units[i]) + ")";
    *out += "<th data-col=\"" + HtmlEscape(c.name) + "\" data-kind=\"" + KindName(c.kind) + "\"" +
            (IsNumeric(c.kind) ? " class=\"n\"" : "") + ">" + HtmlEscape(title) + "</th>";
  }
  *out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < shown; ++r) {
    *out += "<tr>";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      static const Cell kEmpty;
      AppendCell(c < t.rows[r].size() ? t.rows[r][c] : kEmpty, t.columns[c].kind, units[c], out);
    }
    *out += "</tr>\n";
  }
  *out += "</tbody></table></div>\n";
  if (t.rows.empty()) *out += "<p class=\"note\">(no rows)</p>\n";
  if (shown < t.rows.size()) {
    *out += "<p class=\"note cap\">Showing the first " + std::to_string(shown) + " of " +
            std::to_string(t.rows.size()) +
            " rows, in the CLI's order (--html-rows N shows more; --top, --filter or --format "
            "csv/json for the rest).</p>\n";
  }
  for (const std::string& n : t.notes) *out += "<p class=\"note\">" + HtmlEscape(n) + "</p>\n";
  *out += "</section>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ScriptSafeJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderHtmlPage(const HtmlPage& page) {
  Json data = Json::object();
  data["title"] = page.title;
  Json tables = Json::array();
  for (const HtmlTable& t : page.tables) tables.push_back(TableJson(t, page.max_rows));
  data["tables"] = std::move(tables);
  Json charts = Json::array();
  for (const HtmlChart& c : page.charts) charts.push_back(ChartJson(c));
  data["charts"] = std::move(charts);

  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + HtmlEscape(page.title) + "</title>\n<style>\n";
  out += HtmlStyle();
  out += "</style>\n</head>\n<body>\n<header>\n<h1>" + HtmlEscape(page.title) + "</h1>\n";
  for (const std::string& line : page.header_lines) {
    out += "<p class=\"meta\">" + HtmlEscape(line) + "</p>\n";
  }
  out += "<nav>";
  if (!page.charts.empty()) out += "<a href=\"#charts\">Charts</a> ";
  std::set<std::string> used;
  std::vector<std::string> ids;
  for (const HtmlTable& t : page.tables) ids.push_back(t.show ? TableId(t.table.name, &used) : "");
  for (size_t i = 0; i < page.tables.size(); ++i) {
    if (page.tables[i].show) {
      out += "<a href=\"#s-" + ids[i] + "\">" + HtmlEscape(page.tables[i].table.name) + "</a> ";
    }
  }
  out += "</nav>\n</header>\n<main>\n";
  if (!page.charts.empty() || !page.chart_notes.empty()) {
    out += "<section id=\"charts\">\n<h2>Charts</h2>\n";
    for (const std::string& n : page.chart_notes) {
      out += "<p class=\"note\">" + HtmlEscape(n) + "</p>\n";
    }
    for (const HtmlChart& c : page.charts) {
      out += "<section class=\"chart\" id=\"chart-" + HtmlEscape(c.id) + "\" data-kind=\"" +
             ChartKindName(c.kind) + "\">\n<h3>" + HtmlEscape(c.title) + "</h3>\n" +
             "<div class=\"controls\"></div>\n<div class=\"plot\"></div>\n";
      for (const std::string& n : c.notes) out += "<p class=\"note\">" + HtmlEscape(n) + "</p>\n";
      out += "</section>\n";
    }
    out += "</section>\n";
  }
  out += "<section id=\"tables\">\n<h2>Tables</h2>\n";
  out +=
      "<p class=\"note\">Durations as the text report prints them, in the unit their column's "
      "title names; click a column title to sort. "
      "The page embeds its data as JSON (script#tracer-data), the rows --format json prints.</p>\n";
  for (size_t i = 0; i < page.tables.size(); ++i) {
    if (page.tables[i].show) AppendTable(page.tables[i], page.max_rows, ids[i], &out);
  }
  out += "</section>\n</main>\n<div id=\"tip\" role=\"tooltip\"></div>\n";
  out += "<script type=\"application/json\" id=\"tracer-data\">" + ScriptSafeJson(Dump(data)) +
         "</script>\n<script>\n";
  out += HtmlScript();
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace tracer::analysis
