// Process-wide string interning: text -> small id, stable for the life of the
// process (ids survive fork, so a child's cached ids stay valid). Misses from
// the per-thread caches (intern_cache.h) and the writer come here under a
// lock; the texts live in an arena that is never freed, so pointers to them
// stay valid without the lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tracer {

class StringTable {
 public:
  struct Entry {
    uint32_t id;
    std::string_view text;  // points into the arena, valid forever
  };

  StringTable();
  // Id 0 is the empty string.
  Entry Intern(std::string_view text);
  // Text of an id handed out by Intern; empty for unknown ids.
  std::string_view Text(uint32_t id);
  size_t size();

  // For pthread_atfork: hold the lock across fork so the child never
  // inherits it locked by a thread that no longer exists.
  void LockForFork() { mu_.lock(); }
  void UnlockAfterFork() { mu_.unlock(); }

 private:
  std::string_view Store(std::string_view text);

  std::mutex mu_;
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> texts_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* block_pos_ = nullptr;
  size_t block_left_ = 0;
};

// The process-wide table (never destroyed, so it is usable from atexit
// handlers and thread exits in any order).
StringTable& GlobalStrings();

}  // namespace tracer
