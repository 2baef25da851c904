#include "libtracer/core/string_table.h"

#include <cstring>

namespace tracer {

StringTable::StringTable() {
  texts_.push_back(std::string_view());
  ids_.emplace(std::string_view(), 0);
}

std::string_view StringTable::Store(std::string_view text) {
  constexpr size_t kBlock = 64 * 1024;
  if (text.size() + 1 > block_left_) {
    size_t size = text.size() + 1 > kBlock ? text.size() + 1 : kBlock;
    std::unique_ptr<char[]> block(new char[size]);  // owned before push_back may throw
    blocks_.push_back(std::move(block));
    block_pos_ = blocks_.back().get();
    block_left_ = size;
  }
  char* dst = block_pos_;
  std::memcpy(dst, text.data(), text.size());
  dst[text.size()] = '\0';  // NUL-terminated so callers may hand it to C APIs
  block_pos_ += text.size() + 1;
  block_left_ -= text.size() + 1;
  return std::string_view(dst, text.size());
}

StringTable::Entry StringTable::Intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(text);
  if (it != ids_.end()) return Entry{it->second, texts_[it->second]};
  std::string_view stored = Store(text);
  uint32_t id = static_cast<uint32_t>(texts_.size());
  texts_.push_back(stored);
  ids_.emplace(stored, id);
  return Entry{id, stored};
}

std::string_view StringTable::Text(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return id < texts_.size() ? texts_[id] : std::string_view();
}

size_t StringTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return texts_.size();
}

StringTable& GlobalStrings() {
  static StringTable* table = new StringTable();  // leaked on purpose: see header
  return *table;
}

}  // namespace tracer
