#include "libtracer/core/string_table.h"

#include <cstring>
#include <new>

namespace tracer {

namespace {
constexpr int kInitialBits = 10;  // 1,024 slots; grown at half full
}  // namespace

StringTable::Index::Index(int bits)
    : shift(64 - bits), mask((size_t{1} << bits) - 1), slots(new Slot[size_t{1} << bits]) {}

StringTable::StringTable() {
  indexes_.push_back(std::make_unique<Index>(kInitialBits));
  const uint64_t hash = SlotHash(TextKey(std::string_view()).hash);
  const Node* empty = Store(std::string_view(), 0);
  nodes_.push_back(empty);
  slot_hashes_.push_back(hash);
  Insert(indexes_.back().get(), empty, hash);
  index_.store(indexes_.back().get(), std::memory_order_release);
  published_.store(1, std::memory_order_release);
}

StringTable::~StringTable() = default;

const StringTable::Node* StringTable::Find(const Index& index, std::string_view text,
                                           uint64_t slot_hash) {
  size_t i = Home(index, slot_hash);
  while (true) {
    const Slot& slot = index.slots[i];
    uint64_t h = slot.hash.load(std::memory_order_acquire);
    if (h == 0) return nullptr;
    if (h == slot_hash) {
      const Node* node = slot.node.load(std::memory_order_relaxed);
      if (node->len == text.size() && SameBytes(node->text(), text.data(), text.size())) {
        return node;
      }
    }
    i = (i + 1) & index.mask;
  }
}

void StringTable::Insert(Index* index, const Node* node, uint64_t slot_hash) {
  size_t i = Home(*index, slot_hash);
  while (index->slots[i].hash.load(std::memory_order_relaxed) != 0) i = (i + 1) & index->mask;
  index->slots[i].node.store(node, std::memory_order_relaxed);
  index->slots[i].hash.store(slot_hash, std::memory_order_release);
}

const StringTable::Node* StringTable::Store(std::string_view text, uint32_t id) {
  constexpr size_t kBlock = 64 * 1024;
  const size_t need = (sizeof(Node) + text.size() + 1 + 7) & ~size_t{7};
  if (need > block_left_) {
    size_t size = need > kBlock ? need : kBlock;
    std::unique_ptr<char[]> block(new char[size]);  // owned before push_back may throw
    blocks_.push_back(std::move(block));
    block_pos_ = blocks_.back().get();
    block_left_ = size;
  }
  Node* node = new (block_pos_) Node{static_cast<uint32_t>(text.size()), id};
  char* dst = block_pos_ + sizeof(Node);
  if (!text.empty()) std::memcpy(dst, text.data(), text.size());
  dst[text.size()] = '\0';  // NUL-terminated so callers may hand it to C APIs
  block_pos_ += need;
  block_left_ -= need;
  return node;
}

// A new index twice the size, filled before it is published: readers see the
// old one or the complete new one. If it throws, nothing changed.
void StringTable::Grow() {
  const Index& old = *indexes_.back();
  auto bigger = std::make_unique<Index>(64 - old.shift + 1);
  for (size_t id = 0; id < nodes_.size(); ++id) Insert(bigger.get(), nodes_[id], slot_hashes_[id]);
  indexes_.push_back(std::move(bigger));
  index_.store(indexes_.back().get(), std::memory_order_release);
}

StringTable::Entry StringTable::Intern(std::string_view text, uint64_t hash) {
  const uint64_t slot_hash = SlotHash(hash);
  if (const Node* node = Find(*index_.load(std::memory_order_acquire), text, slot_hash)) {
    return Entry{node->id, std::string_view(node->text(), node->len)};
  }
  std::lock_guard<std::mutex> lock(mu_);
  locked_interns_.fetch_add(1, std::memory_order_relaxed);
  Index* index = indexes_.back().get();
  if (const Node* node = Find(*index, text, slot_hash)) {  // raced an insert or a growth
    return Entry{node->id, std::string_view(node->text(), node->len)};
  }
  // Everything that may throw (out of memory) comes before the first change
  // a reader could see, so a failed Intern leaves the table as it was.
  if ((nodes_.size() + 1) * 2 > index->mask + 1) {
    Grow();
    index = indexes_.back().get();
  }
  if (nodes_.size() == nodes_.capacity()) nodes_.reserve(nodes_.size() * 2 + 64);
  if (slot_hashes_.size() == slot_hashes_.capacity()) {
    slot_hashes_.reserve(slot_hashes_.size() * 2 + 64);
  }
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  const Node* node = Store(text, id);
  nodes_.push_back(node);  // no reallocation: reserved above
  slot_hashes_.push_back(slot_hash);
  Insert(index, node, slot_hash);
  published_.store(id + 1, std::memory_order_release);
  return Entry{id, std::string_view(node->text(), node->len)};
}

std::string_view StringTable::Text(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return id < nodes_.size() ? std::string_view(nodes_[id]->text(), nodes_[id]->len)
                            : std::string_view();
}

size_t StringTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

StringTable& GlobalStrings() {
  static StringTable* table = new StringTable();  // leaked on purpose: see header
  return *table;
}

}  // namespace tracer
