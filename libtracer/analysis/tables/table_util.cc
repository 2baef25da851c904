#include "libtracer/analysis/tables/table_util.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>

#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_rows.h"

namespace tracer::analysis {

int64_t HalfwayUp(int64_t lo, int64_t hi) { return lo + (hi - lo) / 2 + (hi - lo) % 2; }

DurationStats ComputeStats(std::vector<int64_t>* values) {
  DurationStats s;
  auto& v = *values;
  if (v.empty()) return s;
  s.count = static_cast<int64_t>(v.size());
  long double sum = 0;
  s.min = s.max = v.front();
  for (int64_t x : v) {
    sum += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  // Saturated, as DurationAccumulator's total: converting a sum beyond
  // int64 would be undefined.
  s.total = sum >= 0x1p63L ? INT64_MAX : static_cast<int64_t>(sum);
  s.avg = static_cast<int64_t>(std::llround(sum / s.count));
  // Median by selection, not a full sort (tables aggregate millions of ops).
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  s.median = v[mid];
  if (v.size() % 2 == 0) {
    const int64_t below =
        *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    s.median = HalfwayUp(below, s.median);
  }
  if (v.size() > 1) {
    const long double mean = sum / s.count;
    long double sq = 0;
    for (int64_t x : v) sq += (x - mean) * (x - mean);
    s.stddev = static_cast<int64_t>(std::llround(std::sqrt(sq / (s.count - 1))));
  }
  return s;
}

Table NewTable(std::string_view name, std::string_view title, const ReportOptions& o) {
  Table table;
  table.name = std::string(name);
  table.title = std::string(title);
  if (o.by_process) table.columns.push_back({"process", ColumnKind::kText, "Process"});
  return table;
}

void AddStatColumns(Table* table, std::string_view name_prefix, std::string_view title_prefix,
                    WithStddev stddev) {
  static constexpr std::string_view kStats[][3] = {
      {"total", "Total", "total"}, {"avg", "Avg", "avg"}, {"med", "Med", "med"},
      {"min", "Min", "min"},       {"max", "Max", "max"}, {"stddev", "StdDev", "stddev"}};
  const size_t n = stddev == WithStddev::kYes ? 6 : 5;
  for (size_t i = 0; i < n; ++i) {
    const auto& [name, title, lower] = kStats[i];
    table->columns.push_back(
        {std::string(name_prefix) + std::string(name) + "_ns", ColumnKind::kDuration,
         title_prefix.empty() ? std::string(title)
                              : std::string(title_prefix) + " " + std::string(lower)});
  }
}

void AddStatCells(std::vector<Cell>* row, const DurationStats& s, WithStddev stddev, bool present) {
  for (int64_t v : {s.total, s.avg, s.median, s.min, s.max}) row->push_back(IntOrEmpty(present, v));
  if (stddev == WithStddev::kYes) row->push_back(IntOrEmpty(present, s.stddev));
}

struct RangeFilter::Regex {
  std::regex re;
};

RangeFilter::~RangeFilter() = default;

Status RangeFilter::Check(const ReportOptions& o) {
  if (o.filter.empty()) return Status();
  // std::regex says a pattern is bad only by throwing: made a Status here.
  try {
    std::regex check(o.filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status::Error("--filter: invalid regular expression '" + o.filter + "': " + e.what());
  }
  return Status();
}

RangeFilter::RangeFilter(const ReportOptions& o) : domain_(o.domain) {
  if (o.filter.empty()) return;
  // As in Check: std::regex throws on a bad pattern.
  try {
    regex_ = std::make_unique<Regex>(Regex{std::regex(o.filter, std::regex::ECMAScript)});
  } catch (const std::regex_error&) {
    reject_all_ = true;  // Check() says why
  }
}

bool RangeFilter::Accepts(const AnalyzedTrace& t, size_t process, const RangeRecord& r) const {
  if (reject_all_ || (!domain_.empty() && t.DomainName(process, r.domain) != domain_)) return false;
  return !regex_ || AcceptsName(domain_.empty() ? std::string_view() : domain_, t.RangeName(r));
}

bool RangeFilter::AcceptsName(std::string_view domain, std::string_view name) const {
  if (reject_all_ || (!domain_.empty() && domain != domain_)) return false;
  return !regex_ || std::regex_search(name.begin(), name.end(), regex_->re);
}

namespace {

double AsNumber(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&c)) return *d;
  return -1e300;  // empty cells sort last
}

std::string AsText(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  return {};
}

}  // namespace

void SortAndTrim(Table* table, const ReportOptions& o, int total_col, int count_col, int avg_col,
                 int name_col) {
  int col = total_col;
  if (o.sort == SortKey::kCount) col = count_col;
  if (o.sort == SortKey::kAvg) col = avg_col;
  const bool by_name = o.sort == SortKey::kName || col < 0;
  // Last resort for ties: the text cells left to right, so the order never
  // depends on how rows were gathered (in memory or streamed).
  auto text_order = [](const std::vector<Cell>& a, const std::vector<Cell>& b) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (!std::holds_alternative<std::string>(a[i])) continue;
      const std::string x = AsText(a[i]), y = AsText(b[i]);
      if (x != y) return x < y;
    }
    return false;
  };
  std::stable_sort(table->rows.begin(), table->rows.end(), [&](const auto& a, const auto& b) {
    if (!by_name) {
      const double x = AsNumber(a[col]), y = AsNumber(b[col]);
      if (x != y) return x > y;
    }
    if (name_col >= 0) {
      const std::string x = AsText(a[name_col]), y = AsText(b[name_col]);
      if (x != y) return x < y;
    }
    return text_order(a, b);
  });
  if (o.top > 0 && table->rows.size() > o.top) {
    table->notes.insert(table->notes.begin(), "showing the first " + std::to_string(o.top) +
                                                  " of " + std::to_string(table->rows.size()) +
                                                  " rows (--top)");
    table->rows.resize(o.top);
  }
}

Cell IntOrEmpty(bool present, int64_t v) {
  if (!present) return Cell();
  return Cell(v);
}

Cell DoubleOrEmpty(bool present, double v) {
  if (!present) return Cell();
  return Cell(v);
}

Cell SharePercent(int64_t part, int64_t whole) {
  return DoubleOrEmpty(whole > 0, 100.0 * static_cast<double>(part) /
                                      static_cast<double>(std::max<int64_t>(whole, 1)));
}

std::string RangeStyle(const RangeRow& row) {
  if (row.push_pop && row.start_end) return "PushPop+StartEnd";
  return row.start_end ? "StartEnd" : row.push_pop ? "PushPop" : "";
}

std::string KernelLabel(std::string_view raw) {
  return raw.empty() ? std::string("(unnamed)") : ShortKernelName(raw);
}

std::unordered_map<uint32_t, std::string> KernelLabels(const StringTable& strings,
                                                       std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string_view> names;
  names.reserve(ids.size());
  for (uint32_t id : ids) names.push_back(strings.Get(id));
  std::vector<std::string> labels = UniqueShortNames(names);
  std::unordered_map<uint32_t, std::string> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) out.emplace(ids[i], std::move(labels[i]));
  return out;
}

const std::unordered_map<uint32_t, std::string>& KernelLabelsOf(TableRows& rows,
                                                                std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (rows.labelled_ids != ids) {
    rows.labels = KernelLabels(*rows.strings, ids);
    rows.labelled_ids = std::move(ids);
  }
  return rows.labels;
}

std::string ThreadLabel(const Trace& trace, const ProcessTrace& p, uint32_t thread) {
  if (thread == 0 || thread >= p.threads.size() || !p.threads[thread].defined) {
    return "thread#" + std::to_string(thread);
  }
  const ThreadInfo& t = p.threads[thread];
  std::string label = std::to_string(t.os_tid);
  const std::string_view name = trace.strings.Get(t.name);
  if (!name.empty()) label += " (" + std::string(name) + ")";
  return label;
}

}  // namespace tracer::analysis
