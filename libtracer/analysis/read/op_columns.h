// Compact in-memory storage of the two most numerous record kinds of a trace
// held whole (kernels and their launch records): about half the bytes of the
// plain records (docs/design.md section 7, memory per record).
//
// A column reads like a std::vector of the record (size, operator[], range
// for, push_back) but hands records out by value, rebuilt from narrow rows:
//   - values that usually fit 32 bits (a kernel's duration, correlation ids,
//     range ids) are stored in 32 bits; one that does not (a kernel longer
//     than 4.29 s, an end before its start, an id of 2^32 - 1 or more) is
//     stored whole in an overflow table of its row, so every value reads
//     back exact, never truncated;
//   - the graph ids of a kernel (graph kernels only) live in a side table
//     that the row points into.
// Writes go through push_back / Set (a record in place of row i).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "libtracer/core/records.h"

namespace tracer::analysis {

// The exact values of the rows whose narrow slot of one field overflowed,
// sorted by row (rows are mostly appended in order, so it stays sorted).
class OverflowTable {
 public:
  // Value of row; only asked for rows that overflowed.
  uint64_t Get(uint32_t row) const {
    const auto it = Find(row);
    return it != entries_.end() && it->row == row ? it->value : 0;
  }
  void Put(uint32_t row, uint64_t value) {
    if (entries_.empty() || entries_.back().row < row) {
      entries_.push_back({row, value});
      return;
    }
    const auto it = Find(row);
    if (it != entries_.end() && it->row == row) {
      entries_[static_cast<size_t>(it - entries_.begin())].value = value;
    } else {
      entries_.insert(entries_.begin() + (it - entries_.begin()), Entry{row, value});
    }
  }
  void Erase(uint32_t row) {
    if (entries_.empty()) return;
    const auto it = Find(row);
    if (it != entries_.end() && it->row == row)
      entries_.erase(entries_.begin() + (it - entries_.begin()));
  }
  // Drops the rows >= row.
  void Truncate(uint32_t row) { entries_.erase(Find(row), entries_.end()); }
  void clear() { entries_.clear(); }
  void shrink_to_fit() { entries_.shrink_to_fit(); }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint32_t row;
    uint64_t value;
  };
  std::vector<Entry>::const_iterator Find(uint32_t row) const {
    return std::lower_bound(entries_.begin(), entries_.end(), row,
                            [](const Entry& e, uint32_t r) { return e.row < r; });
  }
  std::vector<Entry> entries_;
};

// Random-access iteration over a column, records by value.
template <typename Column, typename Record>
class ColumnIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = Record;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Record;

  ColumnIterator() = default;
  ColumnIterator(const Column* c, size_t i) : c_(c), i_(i) {}
  Record operator*() const { return (*c_)[i_]; }
  Record operator[](difference_type n) const { return (*c_)[i_ + n]; }
  ColumnIterator& operator++() { return ++i_, *this; }
  ColumnIterator operator++(int) { return ColumnIterator(c_, i_++); }
  ColumnIterator& operator--() { return --i_, *this; }
  ColumnIterator& operator+=(difference_type n) { return i_ += n, *this; }
  ColumnIterator& operator-=(difference_type n) { return i_ -= n, *this; }
  ColumnIterator operator+(difference_type n) const { return ColumnIterator(c_, i_ + n); }
  ColumnIterator operator-(difference_type n) const { return ColumnIterator(c_, i_ - n); }
  difference_type operator-(const ColumnIterator& o) const {
    return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_);
  }
  bool operator==(const ColumnIterator& o) const { return i_ == o.i_; }
  bool operator!=(const ColumnIterator& o) const { return i_ != o.i_; }
  bool operator<(const ColumnIterator& o) const { return i_ < o.i_; }

 private:
  const Column* c_ = nullptr;
  size_t i_ = 0;
};

inline constexpr uint32_t kNarrowOverflow = UINT32_MAX;

// What every column shares: the narrow rows, one overflow table per field
// that may overflow, and the vector-like surface. Derived (CRTP) builds a
// Record from a row (operator[]) and a row from a Record (Store), with
// PutNarrow / GetNarrow for each narrow field; it clears and shrinks its own
// side tables by hiding clear / shrink_to_fit.
template <typename Derived, typename Record, typename Row, size_t kOverflowFields>
class NarrowColumn {
 public:
  using value_type = Record;
  using const_iterator = ColumnIterator<Derived, Record>;
  static constexpr size_t kRowBytes = sizeof(Row);

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  void reserve(size_t n) { rows_.reserve(n); }
  void clear() {
    rows_.clear();
    for (OverflowTable& t : over_) t.clear();
  }
  void shrink_to_fit() { rows_.shrink_to_fit(); }
  // New rows hold a default Record.
  void resize(size_t n) {
    if (n < rows_.size()) {
      for (OverflowTable& t : over_) t.Truncate(static_cast<uint32_t>(n));
    }
    rows_.resize(n);
  }
  void push_back(const Record& record) {
    rows_.emplace_back();
    self().Store(rows_.size() - 1, record);
  }
  void Set(size_t i, const Record& record) { self().Store(i, record); }
  Record back() const { return self()[rows_.size() - 1]; }
  const_iterator begin() const { return const_iterator(&self(), 0); }
  const_iterator end() const { return const_iterator(&self(), rows_.size()); }

  // For tests and memory accounting: rows with a value in an overflow table.
  size_t overflowed() const {
    size_t n = 0;
    for (const OverflowTable& t : over_) n += t.size();
    return n;
  }

 protected:
  NarrowColumn() = default;
  void Append(const std::vector<Record>& records) {
    reserve(records.size());
    for (const Record& r : records) push_back(r);
  }

  // The slot of row i for a field: narrow when it fits (below mark), else
  // mark, with whole kept in the field's overflow table.
  uint32_t PutNarrow(size_t i, size_t field, bool fits, uint64_t narrow, uint64_t whole,
                     uint32_t mark = kNarrowOverflow) {
    const uint32_t row = static_cast<uint32_t>(i);
    if (fits) {
      over_[field].Erase(row);
      return static_cast<uint32_t>(narrow);
    }
    over_[field].Put(row, whole);
    return mark;
  }
  uint32_t PutNarrow(size_t i, size_t field, uint64_t value, uint32_t mark = kNarrowOverflow) {
    return PutNarrow(i, field, value < mark, value, value, mark);
  }
  // The value PutNarrow(i, field, value, mark) stored.
  uint64_t GetNarrow(size_t i, size_t field, uint32_t slot, uint32_t mark = kNarrowOverflow) const {
    return slot != mark ? slot : Whole(i, field);
  }
  // The whole value of an overflowed slot.
  uint64_t Whole(size_t i, size_t field) const {
    return over_[field].Get(static_cast<uint32_t>(i));
  }

  std::vector<Row> rows_;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  OverflowTable over_[kOverflowFields];
};

namespace op_columns_internal {
// Kernels: 32 bytes a row (KernelRecord: 56).
struct KernelRow {
  uint64_t start_ns = 0;
  uint32_t duration = 0;  // end_ns - start_ns, or kNarrowOverflow: the end whole
  uint32_t correlation_id = 0;
  uint32_t name = 0;
  uint32_t stream = 0;
  uint32_t launch_config = 0;
  uint32_t graph = 0;  // 1 + index into graphs_; 0 = not a graph kernel
};
static_assert(sizeof(KernelRow) == 32);

// Launch records: 24 bytes a row (LaunchRecord: 40).
struct LaunchRow {
  uint64_t time_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t range_id = 0;
  uint32_t thread = 0;
  uint32_t cbid_domain = 0;  // domain << 24 | cbid (kCbidMask: overflowed)
};
static_assert(sizeof(LaunchRow) == 24);
}  // namespace op_columns_internal

class KernelColumn
    : public NarrowColumn<KernelColumn, KernelRecord, op_columns_internal::KernelRow, 2> {
 public:
  KernelColumn() = default;
  KernelColumn(const std::vector<KernelRecord>& records) {  // NOLINT: reads as a vector
    Append(records);
  }

  void clear() {
    NarrowColumn::clear();
    graphs_.clear();
  }
  void shrink_to_fit() {
    NarrowColumn::shrink_to_fit();
    graphs_.shrink_to_fit();
  }
  // name = f(name) on every row, in place.
  template <typename F>
  void MapNames(F f) {
    for (auto& r : rows_) r.name = f(r.name);
  }

  KernelRecord operator[](size_t i) const {
    const auto& r = rows_[i];
    KernelRecord k;
    k.start_ns = r.start_ns;
    k.end_ns = r.duration != kNarrowOverflow ? r.start_ns + r.duration : Whole(i, kEnd);
    k.name = r.name;
    k.stream = r.stream;
    k.correlation_id = GetNarrow(i, kCorrelation, r.correlation_id);
    k.launch_config = r.launch_config;
    if (r.graph != 0) {
      k.graph_id = graphs_[r.graph - 1].graph_id;
      k.graph_node_id = graphs_[r.graph - 1].graph_node_id;
    }
    return k;
  }
  uint64_t start_ns(size_t i) const { return rows_[i].start_ns; }

  // For tests and memory accounting.
  size_t graph_refs() const { return graphs_.size(); }

 private:
  friend NarrowColumn;
  enum OverflowField : size_t { kEnd, kCorrelation };
  struct GraphRef {
    uint64_t graph_id = 0;
    uint64_t graph_node_id = 0;
  };

  void Store(size_t i, const KernelRecord& k) {
    auto& r = rows_[i];
    r.start_ns = k.start_ns;
    const bool fits = k.end_ns >= k.start_ns && k.end_ns - k.start_ns < kNarrowOverflow;
    r.duration = PutNarrow(i, kEnd, fits, k.end_ns - k.start_ns, k.end_ns);
    r.correlation_id = PutNarrow(i, kCorrelation, k.correlation_id);
    r.name = k.name;
    r.stream = k.stream;
    r.launch_config = k.launch_config;
    if (k.graph_id != 0 || k.graph_node_id != 0) {
      if (r.graph == 0) {
        graphs_.emplace_back();
        r.graph = static_cast<uint32_t>(graphs_.size());
      }
      graphs_[r.graph - 1] = {k.graph_id, k.graph_node_id};
    } else {
      r.graph = 0;  // a replaced graph ref stays unused in graphs_
    }
  }

  std::vector<GraphRef> graphs_;
};

class LaunchColumn
    : public NarrowColumn<LaunchColumn, LaunchRecord, op_columns_internal::LaunchRow, 3> {
 public:
  LaunchColumn() = default;
  LaunchColumn(const std::vector<LaunchRecord>& records) {  // NOLINT: reads as a vector
    Append(records);
  }

  LaunchRecord operator[](size_t i) const {
    const auto& r = rows_[i];
    LaunchRecord l;
    l.correlation_id = GetNarrow(i, kCorrelation, r.correlation_id);
    l.time_ns = r.time_ns;
    l.thread = r.thread;
    l.range_id = GetNarrow(i, kRange, r.range_id);
    l.cbid = static_cast<uint32_t>(GetNarrow(i, kCbid, r.cbid_domain & kCbidMask, kCbidMask));
    l.domain = static_cast<ApiDomain>(r.cbid_domain >> 24);
    return l;
  }

 private:
  friend NarrowColumn;
  enum OverflowField : size_t { kCorrelation, kRange, kCbid };
  static constexpr uint32_t kCbidMask = 0xFFFFFF;  // cbid in the low 24 bits
  static_assert(sizeof(ApiDomain) == 1);

  void Store(size_t i, const LaunchRecord& l) {
    auto& r = rows_[i];
    r.time_ns = l.time_ns;
    r.thread = l.thread;
    r.correlation_id = PutNarrow(i, kCorrelation, l.correlation_id);
    r.range_id = PutNarrow(i, kRange, l.range_id);
    const uint32_t cbid = PutNarrow(i, kCbid, l.cbid, kCbidMask);
    r.cbid_domain = static_cast<uint32_t>(static_cast<uint8_t>(l.domain)) << 24 | cbid;
  }
};

// Keeps the rows i with keep[i], in order (keep must have one entry a row;
// otherwise nothing changes).
template <typename Column>
void KeepRows(const std::vector<bool>& keep, Column* c) {
  if (keep.size() != c->size()) return;
  Column kept;
  kept.reserve(static_cast<size_t>(std::count(keep.begin(), keep.end(), true)));
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i]) kept.push_back((*c)[i]);
  }
  *c = std::move(kept);
}

// Orders the kernels by start time, ties in their present order (as
// std::stable_sort would); nothing moves when they already are.
inline void StableSortByStart(KernelColumn* c) {
  bool sorted = true;
  for (size_t i = 1; i < c->size() && sorted; ++i) sorted = c->start_ns(i - 1) <= c->start_ns(i);
  if (sorted) return;
  std::vector<uint32_t> order(c->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return c->start_ns(a) < c->start_ns(b); });
  KernelColumn out;
  out.reserve(order.size());
  for (uint32_t i : order) out.push_back((*c)[i]);
  *c = std::move(out);
}

}  // namespace tracer::analysis
