#include "libtracer/core/pointer_name_cache.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tracer {
namespace {

// A writable page followed by an inaccessible one: a read past the first
// page's end faults. map is null when the mapping failed.
struct GuardedPage {
  GuardedPage() {
    void* m = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    map = static_cast<char*>(m);
    if (mprotect(map + page, page, PROT_NONE) != 0) {
      munmap(map, 2 * page);
      map = nullptr;
    }
  }
  ~GuardedPage() {
    if (map != nullptr) munmap(map, 2 * page);
  }
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;

  // The end of the accessible page (null when the mapping failed).
  char* end() const { return map != nullptr ? map + page : nullptr; }

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* map = nullptr;
};

// One thread's caches over a private table (ids as a fresh process has them).
// Id looks a name up as the NVTX push does: the predicted entry, then the
// address's home entry, then Lookup.
// shared: with a shared table of its own (its ids are the private table's),
// as the NVTX entry points' caches have the process's.
struct Caches {
  explicit Caches(StringTable* table, bool shared = false)
      : content(table),
        shared_table(shared ? std::make_unique<SharedNameCache>() : nullptr),
        by_address(shared_table.get()) {}
  uint32_t Id(const char* s) {
    uint64_t id = by_address.TryPredicted(s);
    if (id == PointerNameCache::kNoId) id = by_address.TryHome(s);
    if (id == PointerNameCache::kNoId) return by_address.Lookup(s, &content);
    return static_cast<uint32_t>(id);
  }
  InternCache content;
  std::unique_ptr<SharedNameCache> shared_table;
  PointerNameCache by_address;
};

// The tests that hold with or without a shared table run both ways.
class NameCacheTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(PerThreadAndShared, NameCacheTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Shared" : "PerThread";
                         });

TEST_P(NameCacheTest, AReusedBufferGivesTheNameOfItsCurrentText) {
  StringTable table;
  Caches c(&table, GetParam());
  // Python and PyTorch build names in reused buffers: one address, many
  // texts, of every length relation to the cached one.
  char buf[128] = "layer_1.attention";
  const uint32_t first = c.Id(buf);
  EXPECT_EQ(c.Id(buf), first);  // a hit
  for (const char* text : {"layer_2.attention", "layer_1", "layer_1.attention.q_proj.lora_A", "l",
                           "", "layer_1.attention", "x2345678", "x234567",
                           "a text longer than the forty bytes an entry keeps inline",
                           "a text longer than the forty bytes an entry keeps inline!",
                           "a text longer than the forty bytes an entry keeps inlinE"}) {
    std::strcpy(buf, text);
    const uint32_t id = c.Id(buf);
    EXPECT_EQ(table.Text(id), text);
    EXPECT_EQ(c.Id(buf), id) << text;  // and again, now cached
  }
  EXPECT_EQ(c.Id(buf), table.Intern("a text longer than the forty bytes an entry keeps inlinE").id);
}

TEST_P(NameCacheTest, HitsDoNotReachTheContentCache) {
  StringTable table;
  Caches c(&table, GetParam());
  static const char* kNames[] = {"fwd", "forward_layer", "model.layers.17.self_attn.q_proj.lora_A"};
  for (const char* n : kNames) c.Id(n);
  const uint64_t misses = c.by_address.misses();
  const uint64_t content_misses = c.content.misses();
  for (int i = 0; i < 100; ++i) {
    for (const char* n : kNames) EXPECT_EQ(table.Text(c.Id(n)), n);
  }
  EXPECT_EQ(c.by_address.misses(), misses);
  EXPECT_EQ(c.content.misses(), content_misses);
}

// Texts well inside their page (compared 16 bytes at a time, then word by
// word past kInline): a change at any one byte, at any length, is seen.
TEST_P(NameCacheTest, AChangeAtAnyByteIsSeen) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<char> buf(3 * page);
  char* base = buf.data() + (page - reinterpret_cast<uintptr_t>(buf.data()) % page);
  StringTable table;
  Caches c(&table, GetParam());
  for (size_t len : {1, 7, 8, 15, 16, 17, 31, 32, 46, 47, 48, 49, 55, 56, 57, 100}) {
    for (size_t at = 0; at < len; ++at) {
      char* s = base + 128;
      std::memset(s, 'a', len);
      s[len] = '\0';
      s[len + 1] = 'z';  // garbage after the NUL never counts
      ASSERT_EQ(table.Text(c.Id(s)), std::string(len, 'a'));
      s[at] = 'b';
      std::string want(len, 'a');
      want[at] = 'b';
      ASSERT_EQ(table.Text(c.Id(s)), want) << len << " " << at;
      ASSERT_EQ(table.Text(c.Id(s)), want) << len << " " << at;
      s[at] = '\0';  // shorter
      ASSERT_EQ(table.Text(c.Id(s)), std::string(at, 'a')) << len << " " << at;
    }
  }
}

// Names pushed in the same order pass after pass (a model's modules): from
// the second pass on, each is the predicted entry, found by its text alone.
TEST_P(NameCacheTest, NamesInARepeatedOrderArePredicted) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no predicted lookups off x86-64";
#endif
  StringTable table;
  Caches c(&table, GetParam());
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) {
    // 8 to 47 bytes: one 16-byte compare or three.
    names.push_back("m." + std::to_string(i) + std::string(static_cast<size_t>(i % 41), 'x'));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& n : names) ASSERT_EQ(table.Text(c.Id(n.c_str())), n);
  }
  size_t predicted = 0, near_page_end = 0;
  for (const auto& n : names) {
    const uint64_t id = c.by_address.TryPredicted(n.c_str());
    if (id != PointerNameCache::kNoId) {
      ++predicted;
      EXPECT_EQ(table.Text(static_cast<uint32_t>(id)), n);
    } else {
      // Not compared there (the loads would read past the page), or the
      // chain broke there: the next lookup goes on from its home entry.
      near_page_end += (reinterpret_cast<uintptr_t>(n.c_str()) & 4095) > 4096 - 48;
      ASSERT_EQ(table.Text(c.Id(n.c_str())), n);
    }
  }
  EXPECT_EQ(predicted + near_page_end, names.size());
  // A copy of the predicted text at another address is answered by it too.
  const std::string again = names[0];
  for (const auto& n : names) c.Id(n.c_str());
  const uint64_t id = c.by_address.TryPredicted(again.c_str());
  if (id != PointerNameCache::kNoId) {
    EXPECT_EQ(table.Text(static_cast<uint32_t>(id)), again);
  }
  // Texts over the inline bytes are predicted too (their rest compared with
  // the string table's copy), and only for their own text.
  std::string long_name(60, 'L');
  for (int i = 0; i < 3; ++i) ASSERT_EQ(table.Text(c.Id(long_name.c_str())), long_name);
  const uint64_t long_id = c.by_address.TryPredicted(long_name.c_str());
  ASSERT_NE(long_id, PointerNameCache::kNoId);
  EXPECT_EQ(table.Text(static_cast<uint32_t>(long_id)), long_name);
  long_name[55] = 'M';  // past the entry's inline head: only the copy has it
  EXPECT_EQ(c.by_address.TryPredicted(long_name.c_str()), PointerNameCache::kNoId);
  EXPECT_EQ(table.Text(c.Id(long_name.c_str())), long_name);
}

// The predicted entry is checked by content: another text where it was
// predicted (a reused buffer, a different name next) never gets its id.
TEST_P(NameCacheTest, APredictedEntryNeverAnswersForAnotherText) {
  StringTable table;
  Caches c(&table, GetParam());
  char buf[64];
  const char* texts[] = {"alpha", "alpha.beta.gamma.delta", "alpha.beta.gamma.delta.eps.zeta"};
  for (int round = 0; round < 3; ++round) {
    for (const char* t : texts) {
      std::strcpy(buf, t);
      ASSERT_EQ(table.Text(c.Id(buf)), t);
    }
  }
  // Each text predicts the next; now each position holds another text.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) {
      std::strcpy(buf, texts[(i + 1 + round) % 3]);
      buf[1] = static_cast<char>('0' + round);  // and one byte differs
      std::string want = buf;
      ASSERT_EQ(table.Text(c.Id(buf)), want) << round << " " << i;
    }
  }
}

TEST_P(NameCacheTest, SameTextAtOtherAddressesSharesOneId) {
  StringTable table;
  Caches c(&table, GetParam());
  std::string a = "same_name", b = "same_name";
  EXPECT_EQ(c.Id(a.c_str()), c.Id(b.c_str()));
  EXPECT_EQ(c.Id(a.c_str()), c.Id("same_name"));
}

// Addresses with one home entry at the initial size.
std::vector<char*> CollidingAddresses(std::vector<char>* arena, size_t count) {
  std::vector<char*> out;
  const size_t home = PointerNameCache::SlotOf(arena->data(), PointerNameCache::kInitialSlots);
  for (size_t off = 0; off + 64 < arena->size() && out.size() < count; off += 64) {
    if (PointerNameCache::SlotOf(&(*arena)[off], PointerNameCache::kInitialSlots) == home) {
      out.push_back(&(*arena)[off]);
    }
  }
  return out;
}

TEST_P(NameCacheTest, CollidingAddressesStayCorrect) {
  StringTable table;
  Caches c(&table, GetParam());
  // More addresses with one home than a lookup probes: they replace each
  // other, and every lookup still names its text.
  std::vector<char> arena(1 << 22);
  std::vector<char*> colliding = CollidingAddresses(&arena, 3 * PointerNameCache::kMaxProbes);
  ASSERT_EQ(colliding.size(), 3 * PointerNameCache::kMaxProbes);
  for (size_t i = 0; i < colliding.size(); ++i) {
    std::snprintf(colliding[i], 64, "colliding_name_%zu", i);
  }
  for (int round = 0; round < 50; ++round) {
    for (size_t i = 0; i < colliding.size(); ++i) {
      EXPECT_EQ(table.Text(c.Id(colliding[i])), "colliding_name_" + std::to_string(i));
    }
  }
  // Their misses never took the table's lock again (issue: colliding names
  // must not serialize every push on a global mutex).
  EXPECT_EQ(table.locked_interns(), colliding.size());
}

TEST(PointerNameCacheTest, AddressesSharingAHomeAllStayCachedWithinTheProbeRun) {
  StringTable table;
  std::vector<char> arena(1 << 22);
  std::vector<char*> colliding = CollidingAddresses(&arena, PointerNameCache::kMaxProbes);
  ASSERT_EQ(colliding.size(), PointerNameCache::kMaxProbes);
  for (size_t i = 0; i < colliding.size(); ++i) {
    std::snprintf(colliding[i], 64, "colliding_name_%zu", i);
  }
  // A two-way set kept two of them; the probe run keeps all: after the
  // first round, no misses, and each still names its own text.
  Caches c(&table);
  for (int round = 0; round < 10; ++round) {
    for (size_t i = 0; i < colliding.size(); ++i) {
      EXPECT_EQ(table.Text(c.Id(colliding[i])), "colliding_name_" + std::to_string(i));
    }
  }
  EXPECT_EQ(c.by_address.misses(), colliding.size());
  EXPECT_EQ(c.by_address.slots(), PointerNameCache::kInitialSlots);
  // A text changed under one of them (not at its home) is seen.
  std::strcpy(colliding[5], "now_another_text");
  EXPECT_EQ(table.Text(c.Id(colliding[5])), "now_another_text");
  EXPECT_EQ(table.Text(c.Id(colliding[5])), "now_another_text");
  EXPECT_EQ(table.Text(c.Id(colliding[6])), "colliding_name_6");
  EXPECT_EQ(c.by_address.misses(), colliding.size() + 1);
}

TEST(PointerNameCacheTest, GrowsWhenCyclingThroughManyNames) {
  StringTable table;
  Caches c(&table);
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("model.layers." + std::to_string(i) + ".mlp");
  for (int round = 0; round < 20; ++round) {
    for (const auto& n : names) ASSERT_EQ(table.Text(c.Id(n.c_str())), n);
  }
  EXPECT_GT(c.by_address.slots(), PointerNameCache::kInitialSlots);
  EXPECT_LE(c.by_address.slots(), PointerNameCache::kMaxSlots);
  // Once grown, a further round hits every name (5,000 fit within a third
  // of the largest table; a two-way set-associative one missed about one
  // in eight of them on every pass).
  // (Texts whose bytes cross a page are never cached: they miss each time.)
  size_t across = 0;
  for (const auto& n : names) {
    across += (reinterpret_cast<uintptr_t>(n.c_str()) & 4095) + n.size() + 1 > 4096;
  }
  const uint64_t before = c.by_address.misses();
  for (const auto& n : names) c.Id(n.c_str());
  EXPECT_EQ(c.by_address.misses() - before, across);
  EXPECT_EQ(c.by_address.used(), names.size() - across);
}

// Texts near the end of a page followed by an inaccessible page: a cached
// entry never makes a lookup read past the page, whatever the text is now.
TEST_P(NameCacheTest, NeverReadsPastTheTextsPageWhenTheTextShrank) {
  const GuardedPage guarded;
  char* const page_end = guarded.end();
  ASSERT_NE(page_end, nullptr);
  StringTable table;
  Caches c(&table, GetParam());
  for (size_t len : {1, 7, 8, 9, 15, 16, 17, 31, 39, 40, 41, 47, 48, 49, 100}) {
    char* s = page_end - len - 1;  // the NUL is the page's last byte
    std::memset(s, 'q', len);
    s[len] = '\0';
    EXPECT_EQ(table.Text(c.Id(s)), std::string(len, 'q'));
    s[len / 2] = '\0';  // shorter now
    EXPECT_EQ(table.Text(c.Id(s)), std::string(len / 2, 'q'));
    EXPECT_EQ(table.Text(c.Id(s)), std::string(len / 2, 'q'));
  }
}

TEST_P(NameCacheTest, TextsAcrossAPageAndVeryLongTexts) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<char> buf(3 * page);
  char* base = buf.data() + (page - reinterpret_cast<uintptr_t>(buf.data()) % page);
  StringTable table;
  Caches c(&table, GetParam());
  char* across = base + page - 20;  // 40 bytes, 20 on each side of a page
  std::memset(across, 'z', 39);
  across[39] = '\0';
  for (int i = 0; i < 3; ++i) EXPECT_EQ(table.Text(c.Id(across)), std::string(39, 'z'));
  across[5] = 'y';
  EXPECT_EQ(table.Text(c.Id(across)), "zzzzzy" + std::string(33, 'z'));

  std::string huge(2 * page, 'h');  // longer than a page: always by content
  for (int i = 0; i < 3; ++i) EXPECT_EQ(table.Text(c.Id(huge.c_str())), huge);
  huge[page + 7] = 'g';
  EXPECT_EQ(table.Text(c.Id(huge.c_str())), huge);
  std::string long_name(300, 'n');  // over the inline bytes, under a page
  for (int i = 0; i < 3; ++i) EXPECT_EQ(table.Text(c.Id(long_name.c_str())), long_name);
  long_name[299] = 'm';  // the last byte: compared by the final word
  EXPECT_EQ(table.Text(c.Id(long_name.c_str())), long_name);
  long_name[150] = 'm';
  EXPECT_EQ(table.Text(c.Id(long_name.c_str())), long_name);
}

TEST_P(NameCacheTest, NonAsciiBytesAreNamesLikeAnyOther) {
  StringTable table;
  Caches c(&table, GetParam());
  char buf[64] = "na\xc3\xafve_\xce\xbb";  // "naïve_λ" in UTF-8
  const uint32_t id = c.Id(buf);
  EXPECT_EQ(table.Text(id), "na\xc3\xafve_\xce\xbb");
  buf[8] = '\xbc';  // "naïve_μ": one byte differs, high bit set
  EXPECT_NE(c.Id(buf), id);
  EXPECT_EQ(table.Text(c.Id(buf)), "na\xc3\xafve_\xce\xbc");
}

TEST(PointerNameCacheTest, ManyThreadsEachWithTheirOwnCachesAgreeOnIds) {
  StringTable table;
  std::vector<std::string> shared_names;
  for (int i = 0; i < 300; ++i) shared_names.push_back("shared_" + std::to_string(i));
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      Caches c(&table);
      char buf[64];
      for (int round = 0; round < 200; ++round) {
        for (size_t i = 0; i < shared_names.size(); i += 7) {
          const std::string& n = shared_names[(i + static_cast<size_t>(t)) % shared_names.size()];
          if (table.Text(c.Id(n.c_str())) != n) wrong.fetch_add(1);
        }
        std::snprintf(buf, sizeof(buf), "thread_%d_round_%d", t, round % 13);
        if (table.Text(c.Id(buf)) != buf) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  // Every thread's names resolve to one id per text.
  Caches check(&table);
  for (const auto& n : shared_names) EXPECT_EQ(check.Id(n.c_str()), table.Intern(n).id);
}

// A long text predicted next (over the inline bytes: TryHome compares it
// against the string table's copy) answers only for its own text, at any
// address, and is never compared past the page of the text passed.
TEST_P(NameCacheTest, ALongPredictedTextAnswersOnlyForItself) {
  const GuardedPage guarded;
  char* const page_end = guarded.end();
  ASSERT_NE(page_end, nullptr);
  StringTable table;
  Caches c(&table, GetParam());
  const std::string a = "base_model.model.model.layers.17.self_attn.q_proj.lora_A.default";
  const std::string b = "base_model.model.model.layers.17.self_attn.q_proj.lora_B.default";
  for (int round = 0; round < 3; ++round) {  // a predicts b, b predicts a
    ASSERT_EQ(table.Text(c.Id(a.c_str())), a);
    ASSERT_EQ(table.Text(c.Id(b.c_str())), b);
  }
  const uint64_t misses = c.by_address.misses();
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(table.Text(c.Id(a.c_str())), a);
    ASSERT_EQ(table.Text(c.Id(b.c_str())), b);
  }
  EXPECT_EQ(c.by_address.misses(), misses);
  // a is predicted: b's text at another address (one byte differs from a),
  // then a's text at another address.
  const std::string b2 = b, a2 = a;
  EXPECT_EQ(table.Text(c.Id(b2.c_str())), b);
  ASSERT_EQ(table.Text(c.Id(a.c_str())), a);  // b predicted next
  EXPECT_EQ(table.Text(c.Id(a2.c_str())), a);
  // b predicted: a prefix of b whose NUL is the last byte of its page.
  ASSERT_EQ(table.Text(c.Id(a.c_str())), a);
  char* s = page_end - 20;
  std::memcpy(s, b.data(), 19);
  s[19] = '\0';
  EXPECT_EQ(table.Text(c.Id(s)), b.substr(0, 19));
}

// A long text (over kInline) predicted over and over in one buffer, then
// changed at one byte, at every byte past the entry's inline head and at
// lengths around each 16-byte step of the compare: never its id. The text
// ends at its page's last byte, before an inaccessible page: the compare
// stays on the text's page.
TEST_P(NameCacheTest, ALongPredictedTextSeesAChangeAtAnyByteUpToItsPagesEnd) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no predicted lookups off x86-64";
#endif
  const GuardedPage guarded;
  char* const page_end = guarded.end();
  ASSERT_NE(page_end, nullptr);
  StringTable table;
  Caches c(&table, GetParam());
  for (size_t len : {48, 49, 55, 56, 57, 63, 71, 72, 73, 88, 89, 130}) {
    char* s = page_end - len - 1;  // the NUL is the page's last byte
    std::memset(s, 'p', len);
    s[len] = '\0';
    const std::string want(len, 'p');
    for (int i = 0; i < 3; ++i) ASSERT_EQ(table.Text(c.Id(s)), want) << len;
    const uint64_t id = c.by_address.TryPredicted(s);  // predicts itself now
    ASSERT_NE(id, PointerNameCache::kNoId) << len;
    EXPECT_EQ(table.Text(static_cast<uint32_t>(id)), want);
    for (size_t at = NameCacheEntry::kLongHead; at < len; ++at) {
      s[at] = 'q';
      std::string changed = want;
      changed[at] = 'q';
      ASSERT_EQ(table.Text(c.Id(s)), changed) << len << " " << at;
      s[at] = 'p';
      ASSERT_EQ(table.Text(c.Id(s)), want) << len << " " << at;
      ASSERT_EQ(table.Text(c.Id(s)), want) << len << " " << at;
    }
  }
}

// Two threads' caches (a, b) over one private string table and one shared
// name table of their own.
struct TwoThreadsSharing {
  StringTable table;
  std::unique_ptr<SharedNameCache> shared =
      std::make_unique<SharedNameCache>();  // 1.1 MiB: not on the stack
  InternCache content_a{&table}, content_b{&table};
  PointerNameCache a{shared.get()}, b{shared.get()};
};

// Two threads' caches over one shared table: the names one thread entered
// are the other's hits, and neither thread's own table grows.
TEST(SharedNameCacheTest, AThreadFindsTheNamesAnotherEntered) {
  TwoThreadsSharing t;
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("model.layers." + std::to_string(i) + ".mlp");
  size_t across = 0;
  for (const auto& n : names) {
    ASSERT_EQ(t.table.Text(t.a.Lookup(n.c_str(), &t.content_a)), n);
    across += (reinterpret_cast<uintptr_t>(n.c_str()) & 4095) + n.size() + 1 > 4096;
  }
  EXPECT_EQ(t.shared->size(), names.size() - across);
  for (int round = 0; round < 3; ++round) {
    for (const auto& n : names) ASSERT_EQ(t.table.Text(t.b.Lookup(n.c_str(), &t.content_b)), n);
  }
  EXPECT_EQ(t.b.misses(), 3 * across);  // only texts across a page (never cached)
  EXPECT_EQ(t.a.slots(), PointerNameCache::kInitialSlots);
  EXPECT_EQ(t.b.slots(), PointerNameCache::kInitialSlots);
  EXPECT_EQ(t.a.used() + t.b.used(), 0u);
}

// The order one thread pushed its names in is the other's prediction.
TEST(SharedNameCacheTest, PredictionsFollowTheOrderAnotherThreadPushed) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "no predicted lookups off x86-64";
#endif
  TwoThreadsSharing t;
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back("f_block." + std::to_string(i) + ".attn");
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& n : names) t.a.Lookup(n.c_str(), &t.content_a);
  }
  t.b.Lookup(names[0].c_str(), &t.content_b);  // b's first: found at its address
  size_t predicted = 0, near_page_end = 0;
  for (size_t i = 1; i < names.size(); ++i) {
    const char* n = names[i].c_str();
    const uint64_t id = t.b.TryPredicted(n);
    if (id != PointerNameCache::kNoId) {
      ++predicted;
      EXPECT_EQ(t.table.Text(static_cast<uint32_t>(id)), names[i]);
    } else {
      near_page_end += (reinterpret_cast<uintptr_t>(n) & 4095) > 4096 - 48;
      ASSERT_EQ(t.table.Text(t.b.Lookup(n, &t.content_b)), names[i]);
    }
  }
  EXPECT_EQ(predicted + near_page_end, names.size() - 1);
  size_t across = 0;  // texts across a page are cached nowhere: b's misses
  for (const auto& n : names) {
    across += (reinterpret_cast<uintptr_t>(n.c_str()) & 4095) + n.size() + 1 > 4096;
  }
  EXPECT_EQ(t.b.misses(), across);
}

// A buffer reused for other texts is entered once: its other texts are the
// thread's own table's, so reused buffers cannot fill the shared table.
TEST(SharedNameCacheTest, AReusedAddressIsEnteredOnce) {
  StringTable table;
  Caches c(&table, /*shared=*/true);
  char buf[64];
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; ++i) {
      std::snprintf(buf, sizeof(buf), "step_%d.layer", i);
      ASSERT_EQ(table.Text(c.Id(buf)), buf);
    }
  }
  EXPECT_EQ(c.shared_table->size(), 1u);
  std::snprintf(buf, sizeof(buf), "step_%d.layer", 0);  // its first text
  EXPECT_EQ(table.Text(c.Id(buf)), buf);
}

// Full, the shared table enters no more; the threads' own tables take the
// rest, and every name keeps its id.
TEST(SharedNameCacheTest, AFullTableLeavesNamesToTheThreads) {
  StringTable table;
  Caches c(&table, /*shared=*/true);
  std::vector<std::string> names;
  for (size_t i = 0; i < SharedNameCache::kCapacity + 2000; ++i) {
    names.push_back("full." + std::to_string(i) + ".name");
  }
  for (int round = 0; round < 2; ++round) {
    for (const auto& n : names) ASSERT_EQ(table.Text(c.Id(n.c_str())), n);
  }
  EXPECT_LE(c.shared_table->size(), SharedNameCache::kCapacity);
  EXPECT_GE(c.shared_table->size(), SharedNameCache::kCapacity / 2);
  EXPECT_GT(c.by_address.used(), 0u);
  const uint64_t misses = c.by_address.misses();
  size_t hits = 0;
  for (const auto& n : names) {
    ASSERT_EQ(table.Text(c.Id(n.c_str())), n);
  }
  hits = names.size() - (c.by_address.misses() - misses);
  EXPECT_GT(hits, SharedNameCache::kCapacity / 2);
}

// Threads entering and looking up the same names at once (run under TSan:
// entries are published by a release store, links are atomic), each with
// its own reused buffer too: every id names the text it was asked for.
TEST(SharedNameCacheTest, ManyThreadsShareOneTableAndAgreeOnIds) {
  StringTable table;
  auto shared_holder = std::make_unique<SharedNameCache>();  // 1.1 MiB: not on the stack
  SharedNameCache& shared_table = *shared_holder;
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("shared." + std::to_string(i) + ".q_proj");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> predicted{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      InternCache content(&table);
      PointerNameCache by_address(&shared_table);
      char buf[64];
      for (int round = 0; round < 20; ++round) {
        // Half the threads run the names in another order: links change
        // under the others, which stay correct.
        for (size_t k = 0; k < names.size(); ++k) {
          const size_t i = t % 2 ? k : names.size() - 1 - k;
          const char* n = names[(i + static_cast<size_t>(t) * 7) % names.size()].c_str();
          uint64_t id = by_address.TryPredicted(n);
          if (id != PointerNameCache::kNoId) {
            predicted.fetch_add(1, std::memory_order_relaxed);
          } else {
            id = by_address.TryHome(n);
          }
          if (id == PointerNameCache::kNoId) id = by_address.Lookup(n, &content);
          if (table.Text(static_cast<uint32_t>(id)) != n) wrong.fetch_add(1);
        }
        std::snprintf(buf, sizeof(buf), "thread_%d_round_%d", t, round % 5);
        if (table.Text(by_address.Lookup(buf, &content)) != buf) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(predicted.load(), 0u);
  EXPECT_LE(shared_table.size(), names.size() + 8);
}

}  // namespace
}  // namespace tracer
