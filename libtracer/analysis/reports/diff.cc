#include "libtracer/analysis/reports/diff.h"

#include <map>

namespace tracer::analysis::reports {
namespace {

// Appends the index of column `name` of t; false when t has none.
bool FindColumn(const Table& t, const std::string& name, std::vector<size_t>* out) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].name == name) {
      out->push_back(i);
      return true;
    }
  }
  return false;
}

std::string KeyText(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&c)) return std::to_string(*d);
  return "";
}

bool IsNumber(const Cell& c) {
  return std::holds_alternative<int64_t>(c) || std::holds_alternative<double>(c);
}

double AsDouble(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&c)) return *d;
  return 0;
}

Cell Delta(const Cell& a, const Cell& b) {
  if (!IsNumber(a) || !IsNumber(b)) return Cell();
  if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b)) {
    return std::get<int64_t>(b) - std::get<int64_t>(a);
  }
  return AsDouble(b) - AsDouble(a);
}

Cell Ratio(const Cell& a, const Cell& b) {
  if (!IsNumber(a) || !IsNumber(b) || AsDouble(a) == 0) return Cell();
  return AsDouble(b) / AsDouble(a);
}

}  // namespace

StatusOr<Table> DiffTables(const Table& a, const Table& b, const DiffSpec& spec) {
  std::vector<size_t> ak, bk, av, bv;
  auto find = [&](const std::string& column, std::vector<size_t>* in_a,
                  std::vector<size_t>* in_b) -> Status {
    for (auto [t, out] : {std::pair{&a, in_a}, std::pair{&b, in_b}}) {
      if (!FindColumn(*t, column, out)) {
        return Status::Error("table '" + t->name + "' has no column '" + column + "'");
      }
    }
    return Status();
  };
  for (const auto& k : spec.keys) {
    if (Status s = find(k, &ak, &bk); !s.ok()) return s;
  }
  for (const auto& k : spec.tail_keys) {
    if (Status s = find(k, &ak, &bk); !s.ok()) return s;
  }
  const size_t lead = spec.keys.size();
  for (const auto& v : spec.values) {
    if (Status s = find(v, &av, &bv); !s.ok()) return s;
  }
  auto key_of = [](const std::vector<Cell>& row, const std::vector<size_t>& cols) {
    std::vector<std::string> key;
    for (size_t c : cols) key.push_back(KeyText(row[c]));
    return key;
  };
  std::map<std::vector<std::string>, size_t> b_rows;
  for (size_t i = 0; i < b.rows.size(); ++i) b_rows.emplace(key_of(b.rows[i], bk), i);

  Table t;
  t.name = a.name + "_diff";
  t.title = (a.title.empty() ? a.name : a.title) + ": A vs B";
  for (size_t i = 0; i < lead; ++i) t.columns.push_back(a.columns[ak[i]]);
  t.columns.push_back({"status", ColumnKind::kText, "In"});
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const Column& c = a.columns[av[i]];
    const std::string title = c.title.empty() ? c.name : c.title;
    t.columns.push_back({c.name + "_a", c.kind, title + " A"});
    t.columns.push_back({c.name + "_b", c.kind, title + " B"});
    t.columns.push_back({c.name + "_delta",
                         c.kind == ColumnKind::kCount ? ColumnKind::kCount : c.kind,
                         title + " B-A"});
    t.columns.push_back({c.name + "_ratio", ColumnKind::kRatio, title + " B/A"});
  }
  for (size_t i = lead; i < ak.size(); ++i) t.columns.push_back(a.columns[ak[i]]);
  std::vector<std::vector<Cell>> a_only, b_only;
  std::vector<bool> b_used(b.rows.size(), false);
  auto emit = [&](const std::vector<Cell>* ra, const std::vector<Cell>* rb, const char* status,
                  std::vector<std::vector<Cell>>* out) {
    std::vector<Cell> row;
    for (size_t i = 0; i < lead; ++i) row.push_back(ra ? (*ra)[ak[i]] : (*rb)[bk[i]]);
    row.push_back(std::string(status));
    for (size_t i = 0; i < spec.values.size(); ++i) {
      const Cell va = ra ? (*ra)[av[i]] : Cell();
      const Cell vb = rb ? (*rb)[bv[i]] : Cell();
      row.insert(row.end(), {va, vb, Delta(va, vb), Ratio(va, vb)});
    }
    for (size_t i = lead; i < ak.size(); ++i) row.push_back(ra ? (*ra)[ak[i]] : (*rb)[bk[i]]);
    out->push_back(std::move(row));
  };
  for (const auto& ra : a.rows) {
    auto it = b_rows.find(key_of(ra, ak));
    if (it == b_rows.end()) {
      emit(&ra, nullptr, "A only", &a_only);
    } else {
      b_used[it->second] = true;
      emit(&ra, &b.rows[it->second], "both", &t.rows);
    }
  }
  for (size_t i = 0; i < b.rows.size(); ++i) {
    if (!b_used[i]) emit(nullptr, &b.rows[i], "B only", &b_only);
  }
  const size_t matched = t.rows.size();
  t.rows.insert(t.rows.end(), a_only.begin(), a_only.end());
  t.rows.insert(t.rows.end(), b_only.begin(), b_only.end());
  t.notes.push_back(std::to_string(matched) + " rows in both, " + std::to_string(a_only.size()) +
                    " in A only, " + std::to_string(b_only.size()) +
                    " in B only (listed last). B-A: difference; B/A: ratio (empty when A is 0 "
                    "or missing).");
  return t;
}

}  // namespace tracer::analysis::reports
