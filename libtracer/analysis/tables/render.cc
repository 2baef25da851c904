#include "libtracer/analysis/tables/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace tracer::analysis {
namespace {

const Cell kEmptyCell;

bool IsNumeric(ColumnKind k) { return k != ColumnKind::kText; }

const std::string& Title(const Column& c) { return c.title.empty() ? c.name : c.title; }

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string FormatBytes(int64_t b) {
  const double v = static_cast<double>(b);
  const double a = std::fabs(v);
  if (a < 1024) return std::to_string(b) + " B";
  if (a < 1024.0 * 1024) return Printf("%.1f KiB", v / 1024);
  if (a < 1024.0 * 1024 * 1024) return Printf("%.1f MiB", v / (1024.0 * 1024));
  return Printf("%.2f GiB", v / (1024.0 * 1024 * 1024));
}

// Shortest plain form of a double for machines: integers without ".0".
std::string RawDouble(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::string RawCell(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&c)) return RawDouble(*d);
  return "";
}

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Text and Markdown cells longer than this are cut (a note under the table
// says how many): one huge range name would otherwise pad every row of its
// table to its length (a 1 MiB name made a 1 GB report).
constexpr size_t kMaxCellWidth = 200;
constexpr char kCutMark[] = "...";

// Cuts *s to kMaxCellWidth bytes, ending with kCutMark, at a UTF-8 character
// boundary. True when it cut.
bool CutLongCell(std::string* s) {
  if (s->size() <= kMaxCellWidth) return false;
  size_t keep = kMaxCellWidth - (sizeof(kCutMark) - 1);
  while (keep > 0 && (static_cast<unsigned char>((*s)[keep]) & 0xC0) == 0x80) --keep;
  s->resize(keep);
  *s += kCutMark;
  return true;
}

std::string CutNote(size_t cut) {
  return std::to_string(cut) + " cell(s) longer than " + std::to_string(kMaxCellWidth) +
         " characters cut (ending in \"" + kCutMark + "\"); --format csv or json prints them whole";
}

std::string Pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

std::string RenderText(const Table& t) {
  std::vector<std::vector<std::string>> cells(t.rows.size());
  std::vector<size_t> width(t.columns.size());
  size_t cut = 0;
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = Title(t.columns[c]).size();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    cells[r].resize(t.columns.size());
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const Cell& cell = c < t.rows[r].size() ? t.rows[r][c] : kEmptyCell;
      cells[r][c] = FormatCell(cell, t.columns[c].kind);
      cut += CutLongCell(&cells[r][c]) ? 1 : 0;
      width[c] = std::max(width[c], cells[r][c].size());
    }
  }
  std::string out;
  if (!t.title.empty()) out += t.title + "\n";
  auto line = [&](const std::vector<std::string>& values) {
    std::string l;
    for (size_t c = 0; c < values.size(); ++c) {
      if (c > 0) l += "  ";
      l += Pad(values[c], width[c], IsNumeric(t.columns[c].kind));
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  std::vector<std::string> header, rule;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    header.push_back(Title(t.columns[c]));
    rule.push_back(std::string(width[c], '-'));
  }
  line(header);
  line(rule);
  for (const auto& row : cells) line(row);
  if (t.rows.empty()) out += "(no rows)\n";
  for (const auto& n : t.notes) out += "  " + n + "\n";
  if (cut > 0) out += "  " + CutNote(cut) + "\n";
  return out;
}

std::string RenderCsv(const Table& t) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += CsvQuote(t.columns[c].name);
  }
  out += "\r\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (c > 0) out += ',';
      if (c < row.size()) out += CsvQuote(RawCell(row[c]));
    }
    out += "\r\n";
  }
  return out;
}

std::string MdEscape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    if (c == '\n') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

std::string RenderMarkdown(const Table& t) {
  std::string out;
  if (!t.title.empty()) out += "### " + MdEscape(t.title) + "\n\n";
  out += "|";
  for (const auto& c : t.columns) out += " " + MdEscape(Title(c)) + " |";
  out += "\n|";
  for (const auto& c : t.columns) out += IsNumeric(c.kind) ? " ---: |" : " --- |";
  out += "\n";
  size_t cut = 0;
  for (const auto& row : t.rows) {
    out += "|";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      std::string text = FormatCell(c < row.size() ? row[c] : kEmptyCell, t.columns[c].kind);
      cut += CutLongCell(&text) ? 1 : 0;
      out += " " + MdEscape(std::move(text)) + " |";
    }
    out += "\n";
  }
  if (!t.notes.empty() || cut > 0) {
    out += "\n";
    for (const auto& n : t.notes) out += "- " + MdEscape(n) + "\n";
    if (cut > 0) out += "- " + MdEscape(CutNote(cut)) + "\n";
  }
  return out;
}

nlohmann::ordered_json JsonRows(const Table& t) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& row : t.rows) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const Cell& cell = c < row.size() ? row[c] : kEmptyCell;
      auto& v = obj[t.columns[c].name];
      if (const auto* s = std::get_if<std::string>(&cell)) {
        v = *s;
      } else if (const auto* i = std::get_if<int64_t>(&cell)) {
        v = *i;
      } else if (const auto* d = std::get_if<double>(&cell); d != nullptr && std::isfinite(*d)) {
        v = *d;
      } else {
        v = nullptr;
      }
    }
    rows.push_back(std::move(obj));
  }
  return rows;
}

std::string DumpJson(const nlohmann::ordered_json& j) {
  // Replace invalid UTF-8 (range names are user bytes) instead of throwing.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

bool ParseOutputFormat(std::string_view s, OutputFormat* out) {
  if (s == "text")
    *out = OutputFormat::kText;
  else if (s == "csv")
    *out = OutputFormat::kCsv;
  else if (s == "md" || s == "markdown")
    *out = OutputFormat::kMarkdown;
  else if (s == "json")
    *out = OutputFormat::kJson;
  else
    return false;
  return true;
}

std::string FormatDuration(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return std::to_string(ns) + " ns";
  if (a < 1e6) return Printf("%.3f us", v / 1e3);
  if (a < 1e9) return Printf("%.3f ms", v / 1e6);
  return Printf("%.3f s", v / 1e9);
}

std::string FormatCell(const Cell& cell, ColumnKind kind) {
  if (std::holds_alternative<std::monostate>(cell)) return "-";
  if (const auto* s = std::get_if<std::string>(&cell)) return s->empty() ? "-" : *s;
  const bool is_int = std::holds_alternative<int64_t>(cell);
  const int64_t i = is_int ? std::get<int64_t>(cell) : static_cast<int64_t>(std::get<double>(cell));
  const double d = is_int ? static_cast<double>(i) : std::get<double>(cell);
  if (!std::isfinite(d)) return "-";
  switch (kind) {
    case ColumnKind::kDuration:
      return FormatDuration(is_int ? i : std::llround(d));
    case ColumnKind::kPercent:
      return Printf("%.1f%%", d);
    case ColumnKind::kRatio:
      return Printf("%.2fx", d);
    case ColumnKind::kBytes:
      return FormatBytes(is_int ? i : std::llround(d));
    case ColumnKind::kCount:
      return is_int ? std::to_string(i) : RawDouble(d);
    case ColumnKind::kNumber:
    case ColumnKind::kText:
      return is_int ? std::to_string(i) : Printf("%.3f", d);
  }
  return RawCell(cell);
}

std::string RenderTable(const Table& table, OutputFormat format) {
  switch (format) {
    case OutputFormat::kText:
      return RenderText(table);
    case OutputFormat::kCsv:
      return RenderCsv(table);
    case OutputFormat::kMarkdown:
      return RenderMarkdown(table);
    case OutputFormat::kJson:
      return DumpJson(JsonRows(table));
  }
  return {};
}

std::string RenderTables(const std::vector<Table>& tables, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (const auto& t : tables) {
      obj[t.name] = JsonRows(t);
      if (!t.notes.empty()) obj[t.name + "_notes"] = t.notes;
    }
    return DumpJson(obj);
  }
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) out += format == OutputFormat::kCsv ? "\r\n" : "\n";
    if (format == OutputFormat::kCsv) out += "# " + tables[i].name + "\r\n";
    out += RenderTable(tables[i], format);
  }
  return out;
}

}  // namespace tracer::analysis
