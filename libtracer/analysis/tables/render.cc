#include "libtracer/analysis/tables/render.h"

#include <algorithm>
#include <cctype>
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

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// A duration column's CSV name in a fixed unit (--timeunit): total_ns ->
// total_us; a diff's total_ns_delta -> total_us_delta.
std::string NameInUnit(const Column& col, TimeUnit u) {
  const std::string unit = TimeUnitName(u);
  if (col.name.size() > 3 && col.name.compare(col.name.size() - 3, 3, "_ns") == 0) {
    return col.name.substr(0, col.name.size() - 3) + "_" + unit;
  }
  std::string name = col.name;
  if (const size_t at = name.find("_ns_"); at != std::string::npos) {
    return name.replace(at, 4, "_" + unit + "_");
  }
  return name + "_" + unit;
}

int FindColumn(const Table& t, std::string_view name) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const Column& col = t.columns[c];
    if (SameName(col.name, name) || SameName(Title(col), name)) return static_cast<int>(c);
    // The name a CSV header shows under --timeunit chooses the column too.
    if (col.kind == ColumnKind::kDuration) {
      for (TimeUnit u : {TimeUnit::kUs, TimeUnit::kMs, TimeUnit::kS}) {
        if (SameName(NameInUnit(col, u), name)) return static_cast<int>(c);
      }
    }
  }
  return -1;
}

bool EmptyCell(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return true;
  const auto* s = std::get_if<std::string>(&c);
  return s != nullptr && s->empty();
}

double NsPer(TimeUnit u) {
  switch (u) {
    case TimeUnit::kUs:
      return 1e3;
    case TimeUnit::kMs:
      return 1e6;
    case TimeUnit::kS:
      return 1e9;
    default:
      return 1;
  }
}

// The table as shown: the chosen columns (or all but the empty ones for
// people), durations converted to a fixed unit when one is asked for.
// human: text / md (titles, units in headers); else CSV.
Table Shape(const Table& t, const RenderOptions& o, bool human) {
  std::vector<size_t> keep;
  if (!o.columns.empty()) {
    for (const std::string& name : o.columns) {
      const int c = FindColumn(t, name);
      if (c >= 0 && std::find(keep.begin(), keep.end(), static_cast<size_t>(c)) == keep.end())
        keep.push_back(static_cast<size_t>(c));
    }
    if (keep.empty() && !t.columns.empty()) keep.push_back(0);
  } else {
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (human && t.columns[c].detail) continue;
      bool empty = human && !t.rows.empty();
      for (size_t r = 0; empty && r < t.rows.size(); ++r) {
        empty = c >= t.rows[r].size() || EmptyCell(t.rows[r][c]);
      }
      if (!empty) keep.push_back(c);
    }
  }
  Table out;
  out.name = t.name;
  out.title = t.title;
  out.notes = t.notes;
  const bool fixed = o.time_unit != TimeUnit::kAuto;
  for (size_t c : keep) {
    Column col = t.columns[c];
    if (!human && fixed && col.kind == ColumnKind::kDuration) {
      col.name = NameInUnit(col, o.time_unit);
    }
    out.columns.push_back(std::move(col));
  }
  out.rows.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    std::vector<Cell>& r = out.rows.emplace_back();
    r.reserve(keep.size());
    for (size_t c : keep) r.push_back(c < row.size() ? row[c] : kEmptyCell);
  }
  return out;
}

// Text / md: the unit of each column (kAuto for non-durations), named in
// the duration columns' headers.
std::vector<TimeUnit> ColumnUnits(Table* t, const RenderOptions& o) {
  std::vector<TimeUnit> units = ColumnTimeUnits(*t, o.time_unit);
  for (size_t c = 0; c < t->columns.size(); ++c) {
    Column& col = t->columns[c];
    if (col.kind == ColumnKind::kDuration)
      col.title = Title(col) + " (" + TimeUnitName(units[c]) + ")";
  }
  return units;
}

// A duration cell in a fixed unit: text / md with 3 decimals (ns: whole);
// CSV with every ns kept.
// printf("%.3f", ns / per) for per = 1e3, 1e6 or 1e9 (ns in a unit of at
// least a microsecond), without printf's floating-point formatting, which
// took most of the text rendering of a large table. Integer rounding of
// ns / per to thousandths gives printf's digits except on an exact tie,
// where printf rounds the double nearest ns / per: those (and negative or
// huge values) return false and go to printf.
bool ThousandthsOf(int64_t ns, int64_t per, std::string* out) {
  if (ns < 0 || ns > (int64_t{1} << 52) || per < 1000) return false;
  const int64_t step = per / 1000;  // ns per thousandth of the unit
  int64_t q = ns / step;
  const int64_t r = ns % step;
  if (2 * r == step) return false;
  if (2 * r > step) ++q;
  char buf[32];
  char* end = buf + sizeof(buf);
  char* p = end;
  for (int k = 0; k < 3; ++k, q /= 10) *--p = static_cast<char>('0' + q % 10);
  *--p = '.';
  do {
    *--p = static_cast<char>('0' + q % 10);
    q /= 10;
  } while (q > 0);
  out->assign(p, end);
  return true;
}

std::string FixedDuration(const Cell& cell, TimeUnit u, bool human) {
  if (std::holds_alternative<std::monostate>(cell)) return human ? "-" : "";
  const auto* i = std::get_if<int64_t>(&cell);
  const auto* d = std::get_if<double>(&cell);
  if (i == nullptr && d == nullptr) {
    std::string s = RawCell(cell);
    return human && s.empty() ? "-" : s;
  }
  if (d != nullptr && !std::isfinite(*d)) return human ? "-" : "";
  if (u == TimeUnit::kNs) return i != nullptr ? std::to_string(*i) : Printf("%.0f", *d);
  if (human && i != nullptr) {
    std::string out;
    if (ThousandthsOf(*i, static_cast<int64_t>(NsPer(u)), &out)) return out;
  }
  const double v = (i != nullptr ? static_cast<double>(*i) : *d) / NsPer(u);
  if (human) return Printf("%.3f", v);
  // Exact: ns integers print with as many decimals as the unit has ns.
  if (i != nullptr) {
    const int64_t per = static_cast<int64_t>(NsPer(u));
    const int digits = u == TimeUnit::kUs ? 3 : u == TimeUnit::kMs ? 6 : 9;
    const int64_t whole = *i / per, frac = *i % per;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%lld.%0*lld", (*i < 0 && whole == 0) ? "-" : "",
                  static_cast<long long>(whole), digits,
                  static_cast<long long>(frac < 0 ? -frac : frac));
    return buf;
  }
  return RawDouble(v);
}

std::string ShownCell(const Cell& cell, const Column& col, TimeUnit unit) {
  if (col.kind == ColumnKind::kDuration) return FormatDurationIn(cell, unit);
  return FormatCell(cell, col.kind);
}

std::string RenderText(Table t, const RenderOptions& o) {
  const std::vector<TimeUnit> units = ColumnUnits(&t, o);
  std::vector<std::vector<std::string>> cells(t.rows.size());
  std::vector<size_t> width(t.columns.size());
  size_t cut = 0;
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = Title(t.columns[c]).size();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    cells[r].resize(t.columns.size());
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const Cell& cell = c < t.rows[r].size() ? t.rows[r][c] : kEmptyCell;
      cells[r][c] = ShownCell(cell, t.columns[c], units[c]);
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

std::string RenderCsv(const Table& t, const RenderOptions& o) {
  std::string out;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c > 0) out += ',';
    out += CsvQuote(t.columns[c].name);
  }
  out += "\r\n";
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (c > 0) out += ',';
      if (c >= row.size()) continue;
      out += CsvQuote(o.time_unit != TimeUnit::kAuto && t.columns[c].kind == ColumnKind::kDuration
                          ? FixedDuration(row[c], o.time_unit, false)
                          : RawCell(row[c]));
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

std::string RenderMarkdown(Table t, const RenderOptions& o) {
  const std::vector<TimeUnit> units = ColumnUnits(&t, o);
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
      std::string text = ShownCell(c < row.size() ? row[c] : kEmptyCell, t.columns[c], units[c]);
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

const char* TimeUnitName(TimeUnit u) {
  switch (u) {
    case TimeUnit::kUs:
      return "us";
    case TimeUnit::kMs:
      return "ms";
    case TimeUnit::kS:
      return "s";
    case TimeUnit::kNs:
    case TimeUnit::kAuto:
      break;
  }
  return "ns";
}

std::vector<TimeUnit> ColumnTimeUnits(const Table& t, TimeUnit forced, size_t max_rows) {
  const size_t n = std::min(t.rows.size(), max_rows);
  std::vector<double> largest(t.columns.size(), 0);
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c].kind != ColumnKind::kDuration) continue;
    for (size_t r = 0; r < n; ++r) {
      if (c >= t.rows[r].size()) continue;
      const Cell& cell = t.rows[r][c];
      double v = 0;
      if (const auto* i = std::get_if<int64_t>(&cell)) {
        v = static_cast<double>(*i);
      } else if (const auto* d = std::get_if<double>(&cell); d != nullptr && std::isfinite(*d)) {
        v = *d;
      }
      largest[c] = std::max(largest[c], std::fabs(v));
    }
  }
  std::vector<TimeUnit> units(t.columns.size(), TimeUnit::kAuto);
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const Column& col = t.columns[c];
    if (col.kind != ColumnKind::kDuration) continue;
    if (forced != TimeUnit::kAuto) {
      units[c] = forced;
      continue;
    }
    double most = largest[c];
    const std::string& name = col.name;
    const size_t len = name.size();
    if (len > 2 && name[len - 2] == '_' && (name[len - 1] == 'a' || name[len - 1] == 'b')) {
      const std::string partner = name.substr(0, len - 1) + (name[len - 1] == 'a' ? "b" : "a");
      for (size_t p = 0; p < t.columns.size(); ++p) {
        if (t.columns[p].name == partner && t.columns[p].kind == ColumnKind::kDuration)
          most = std::max(most, largest[p]);
      }
    }
    // Compared as FormatDurationIn rounds: 9999.9996 us prints 10000.000.
    units[c] = most < 9999.5         ? TimeUnit::kNs
               : most < 9999999.5    ? TimeUnit::kUs
               : most < 9999999500.0 ? TimeUnit::kMs
                                     : TimeUnit::kS;
  }
  return units;
}

std::string FormatDurationIn(const Cell& cell, TimeUnit u) {
  if (u == TimeUnit::kAuto) return FormatCell(cell, ColumnKind::kDuration);
  return FixedDuration(cell, u, true);
}

bool ParseTimeUnit(std::string_view s, TimeUnit* out) {
  if (s == "ns" || s == "nsec")
    *out = TimeUnit::kNs;
  else if (s == "us" || s == "usec")
    *out = TimeUnit::kUs;
  else if (s == "ms" || s == "msec")
    *out = TimeUnit::kMs;
  else if (s == "s" || s == "sec")
    *out = TimeUnit::kS;
  else
    return false;
  return true;
}

std::vector<std::string> UnknownColumns(const std::vector<Table>& tables, const RenderOptions& o) {
  std::vector<std::string> unknown;
  for (const std::string& name : o.columns) {
    bool found = false;
    for (const Table& t : tables) found = found || FindColumn(t, name) >= 0;
    if (!found) unknown.push_back(name);
  }
  return unknown;
}

std::string RenderTable(const Table& table, OutputFormat format, const RenderOptions& o) {
  switch (format) {
    case OutputFormat::kText:
      return RenderText(Shape(table, o, true), o);
    case OutputFormat::kCsv:
      return RenderCsv(Shape(table, o, false), o);
    case OutputFormat::kMarkdown:
      return RenderMarkdown(Shape(table, o, true), o);
    case OutputFormat::kJson: {
      RenderOptions ns = o;
      ns.time_unit = TimeUnit::kAuto;  // JSON stays in ns
      return DumpJson(JsonRows(Shape(table, ns, false)));
    }
  }
  return {};
}

std::string RenderTables(const std::vector<Table>& tables, OutputFormat format,
                         const RenderOptions& o) {
  if (format == OutputFormat::kJson) {
    RenderOptions ns = o;
    ns.time_unit = TimeUnit::kAuto;  // JSON stays in ns
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (const auto& t : tables) {
      obj[t.name] = JsonRows(Shape(t, ns, false));
      if (!t.notes.empty()) obj[t.name + "_notes"] = t.notes;
    }
    return DumpJson(obj);
  }
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) out += format == OutputFormat::kCsv ? "\r\n" : "\n";
    if (format == OutputFormat::kCsv) out += "# " + tables[i].name + "\r\n";
    out += RenderTable(tables[i], format, o);
  }
  return out;
}

}  // namespace tracer::analysis
