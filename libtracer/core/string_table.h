// Process-wide string interning: text -> small id, stable for the life of the
// process (ids survive fork, so a child's cached ids stay valid). Misses from
// the per-thread caches (intern_cache.h) and the writer come here. A text
// interned before is found without a lock or allocation: an open-addressing
// index, written only under the lock and read lock-free, maps its hash to its
// node. Only a new text takes the lock (to store it and publish it in the
// index). Nodes live in an arena that is never freed, so pointers to their
// texts stay valid without the lock; an index outgrown is kept, never freed,
// so a reader still probing it stays safe (it then misses and takes the lock
// once, finding the text in the new index).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "libtracer/core/text_hash.h"

namespace tracer {

class StringTable {
 public:
  struct Entry {
    uint32_t id;
    std::string_view text;  // points into the arena, valid forever
  };

  StringTable();
  ~StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // Id 0 is the empty string.
  Entry Intern(std::string_view text) { return Intern(text, TextKey(text).hash); }
  // `hash` is TextKey(text).hash. No lock and no allocation when `text` was
  // interned before.
  Entry Intern(std::string_view text, uint64_t hash);
  // Text of an id handed out by Intern; empty for unknown ids.
  std::string_view Text(uint32_t id);
  // Whether Intern ever handed out `id`: lock-free, for ids that come from
  // outside (an NVTX registered-string handle is one of our ids, as far as
  // the caller is honest), which must never index or size anything unchecked.
  bool Known(uint64_t id) const noexcept { return id < published_.load(std::memory_order_acquire); }
  size_t size();
  // How many Intern calls took the lock: one per new text, plus the rare
  // lookup that probed an index outgrown meanwhile.
  uint64_t locked_interns() const { return locked_interns_.load(std::memory_order_relaxed); }

  // For pthread_atfork: hold the lock across fork so the child never
  // inherits it locked by a thread that no longer exists.
  void LockForFork() { mu_.lock(); }
  void UnlockAfterFork() { mu_.unlock(); }

 private:
  // An interned text: header then the NUL-terminated bytes, in the arena.
  struct Node {
    uint32_t len;
    uint32_t id;
    const char* text() const { return reinterpret_cast<const char*>(this + 1); }
  };
  // hash 0 = empty. A reader acquires hash, then reads node (stored before).
  struct Slot {
    std::atomic<uint64_t> hash{0};
    std::atomic<const Node*> node{nullptr};
  };
  struct Index {
    explicit Index(int bits);
    int shift;  // 64 - log2(capacity)
    size_t mask;
    std::unique_ptr<Slot[]> slots;
  };

  static uint64_t SlotHash(uint64_t hash) { return hash ? hash : 1; }
  // Fibonacci hashing: the home slot comes from the high bits, so it does not
  // follow the per-thread caches' slot (their low bits): names that collide
  // there do not collide here.
  static size_t Home(const Index& index, uint64_t slot_hash) {
    return static_cast<size_t>((slot_hash * 0x9E3779B97F4A7C15ull) >> index.shift);
  }
  static const Node* Find(const Index& index, std::string_view text, uint64_t slot_hash);
  static void Insert(Index* index, const Node* node, uint64_t slot_hash);
  const Node* Store(std::string_view text, uint32_t id);
  void Grow();

  std::atomic<const Index*> index_{nullptr};
  std::atomic<uint64_t> locked_interns_{0};
  std::atomic<uint32_t> published_{0};  // ids below it are handed out

  std::mutex mu_;  // guards everything below, and every write to the index
  std::vector<std::unique_ptr<Index>> indexes_;  // the current one last
  std::vector<const Node*> nodes_;               // by id
  std::vector<uint64_t> slot_hashes_;            // by id, for Grow
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* block_pos_ = nullptr;
  size_t block_left_ = 0;
};

// The process-wide table (never destroyed, so it is usable from atexit
// handlers and thread exits in any order).
StringTable& GlobalStrings();

}  // namespace tracer
