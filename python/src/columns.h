// Columns handed to Python without a per-row copy: each is a std::vector
// built here whose buffer a NumPy array then borrows, the vector owned by a
// capsule that frees it when the last array (or Arrow buffer) over it goes.
// Strings are dictionary-encoded: int32 codes plus one name per distinct
// value.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tracer::python {

namespace nb = nanobind;

// A NumPy array over v's buffer; v moves to the heap, owned by a capsule.
template <typename T>
nb::object ToNumpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const size_t n = heap->size();
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {n}, owner));
}

// Dictionary encoding of one string column: codes into names(), by the
// trace's global string id (cheap, the common case) or by text.
class Dictionary {
 public:
  explicit Dictionary(size_t string_ids = 0) : by_id_(string_ids, -1) {}
  int32_t ById(uint32_t id, std::string_view text) {
    if (id < by_id_.size()) {
      int32_t& code = by_id_[id];
      if (code < 0) code = ByText(text);
      return code;
    }
    return ByText(text);
  }
  int32_t ByText(std::string_view text) {
    auto [it, added] = by_text_.try_emplace(std::string(text), static_cast<int32_t>(names_.size()));
    if (added) names_.emplace_back(text);
    return it->second;
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<int32_t> by_id_;
  std::unordered_map<std::string, int32_t> by_text_;
  std::vector<std::string> names_;
};

// One table on its way to Python: (name, values, validity or None,
// dictionary or None) per column, assembled into pyarrow / pandas by
// tracer/_tables.py.
class ColumnSet {
 public:
  template <typename T>
  void Add(std::string name, std::vector<T>&& values) {
    columns_.append(
        nb::make_tuple(std::move(name), ToNumpy(std::move(values)), nb::none(), nb::none()));
  }
  // valid[i] == 0: row i is null (no value, not zero).
  template <typename T>
  void AddNullable(std::string name, std::vector<T>&& values, std::vector<uint8_t>&& valid) {
    columns_.append(nb::make_tuple(std::move(name), ToNumpy(std::move(values)),
                                   ToNumpy(std::move(valid)), nb::none()));
  }
  void AddDictionary(std::string name, std::vector<int32_t>&& codes, const Dictionary& dict);
  nb::list release() { return std::move(columns_); }

 private:
  nb::list columns_;
};

}  // namespace tracer::python
