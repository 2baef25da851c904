// The correlation ids that have GPU work, one bit each: what the bounded
// importers (nsys_sqlite_stream.h, kineto_json_stream.h) consult to give an
// API call a LaunchRecord only when it launched something. CUPTI's ids are
// dense from 1, so the bits take ids / 8 bytes; an id past kMaxId is refused
// (the caller then takes another way).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tracer::analysis::importers {

class CorrelationBits {
 public:
  static constexpr uint64_t kMaxId = uint64_t{1} << 28;  // 32 MiB of bits

  // False when id is past kMaxId (nothing is set).
  bool Set(uint64_t id) {
    if (id >= kMaxId) return false;
    const size_t word = static_cast<size_t>(id >> 6);
    if (word >= bits_.size()) bits_.resize(std::max(word + 1, bits_.size() * 2), 0);
    bits_[word] |= uint64_t{1} << (id & 63);
    return true;
  }
  // Adds the ids of other.
  void Merge(const CorrelationBits& other) {
    if (bits_.size() < other.bits_.size()) bits_.resize(other.bits_.size(), 0);
    for (size_t i = 0; i < other.bits_.size(); ++i) bits_[i] |= other.bits_[i];
  }
  bool Has(uint64_t id) const {
    const size_t word = static_cast<size_t>(id >> 6);
    return word < bits_.size() && ((bits_[word] >> (id & 63)) & 1) != 0;
  }

 private:
  std::vector<uint64_t> bits_;
};

}  // namespace tracer::analysis::importers
