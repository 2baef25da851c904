#include "libtracer/analysis/reports/row_selection.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis::reports {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsDiff(const Table& t) {
  return std::any_of(t.columns.begin(), t.columns.end(),
                     [](const Column& c) { return EndsWith(c.name, "_delta"); });
}

// A diff table sorts by B's values (the run compared), others by their own.
bool Candidate(const Column& c, bool diff) { return !diff || EndsWith(c.name, "_b"); }

int TotalColumn(const Table& t) {
  const bool diff = IsDiff(t);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    // Offsets and averages are not totals.
    if (c.kind == ColumnKind::kDuration && c.name.rfind("start", 0) != 0 &&
        c.name.rfind("avg", 0) != 0 && Candidate(c, diff)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int CountColumn(const Table& t) {
  const bool diff = IsDiff(t);
  // Positions and sizes of a name set are not counts of instances.
  static const std::vector<std::string> kNotCounts = {"index",   "depth", "rank",
                                                      "members", "names", "ranks"};
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    if (c.kind == ColumnKind::kCount && Candidate(c, diff) &&
        std::find(kNotCounts.begin(), kNotCounts.end(), c.name) == kNotCounts.end()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int AvgColumn(const Table& t) {
  const bool diff = IsDiff(t);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    if (c.name.rfind("avg", 0) == 0 && c.kind == ColumnKind::kDuration && Candidate(c, diff)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The name as recorded: the timeline indents names by depth.
std::string Text(const Cell& c) {
  const auto* s = std::get_if<std::string>(&c);
  if (s == nullptr) return "";
  const size_t first = s->find_first_not_of(' ');
  return first == std::string::npos ? std::string() : s->substr(first);
}

// |value|; empty cells last (a row found in one run only has no B-A).
double Magnitude(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return std::fabs(static_cast<double>(*i));
  if (const auto* d = std::get_if<double>(&c)) return std::fabs(*d);
  return -1;
}

void SortByChange(Table* t) {
  size_t col = kNone;
  for (size_t i = 0; i < t->columns.size() && col == kNone; ++i) {
    if (EndsWith(t->columns[i].name, "_delta") && t->columns[i].kind == ColumnKind::kDuration) {
      col = i;
    }
  }
  for (size_t i = 0; i < t->columns.size() && col == kNone; ++i) {
    if (EndsWith(t->columns[i].name, "_delta")) col = i;
  }
  if (col == kNone) return;
  std::stable_sort(t->rows.begin(), t->rows.end(), [col](const auto& a, const auto& b) {
    return Magnitude(a[col]) > Magnitude(b[col]);
  });
  t->notes.push_back("rows by the size of the change, |" + t->columns[col].title +
                     "|, largest first (--sort total|count|avg|name orders by B's values)");
}

}  // namespace

size_t NameColumn(const Table& t) {
  // Not "category": kernels by category are not per range (as the kernels
  // table, they are left whole).
  for (const char* name : {"range", "group", "kernel", "name"}) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (t.columns[i].name == name) return i;
    }
  }
  return kNone;
}

void SelectRows(const RowSelection& s, Table* t) {
  const size_t name_col = NameColumn(*t);
  if (!s.report.filter.empty()) {
    if (name_col == kNone) {
      t->notes.push_back("--filter does not apply to this table (its rows are not ranges)");
    } else {
      ReportOptions names_only = s.report;
      names_only.domain.clear();
      const RangeFilter filter(names_only);
      std::erase_if(t->rows, [&](const std::vector<Cell>& row) {
        return !filter.AcceptsName({}, Text(row[name_col]));
      });
    }
  }
  if (s.by_change) {
    SortByChange(t);
  } else if (s.sort_given && s.report.sort == SortKey::kName && name_col != kNone) {
    // By the name as recorded (Text), not by the timeline's indent.
    std::stable_sort(t->rows.begin(), t->rows.end(), [name_col](const auto& a, const auto& b) {
      return Text(a[name_col]) < Text(b[name_col]);
    });
  } else if (s.sort_given) {
    ReportOptions o = s.report;
    o.top = 0;  // trimmed below, once
    SortAndTrim(t, o, TotalColumn(*t), CountColumn(*t), AvgColumn(*t),
                name_col == kNone ? -1 : static_cast<int>(name_col));
  }
  const size_t top = s.report.top;
  if (s.trim && top > 0 && t->rows.size() > top) {
    t->notes.insert(t->notes.begin(), "showing the first " + std::to_string(top) + " of " +
                                          std::to_string(t->rows.size()) + " rows (--top)");
    t->rows.resize(top);
  }
}

}  // namespace tracer::analysis::reports
