// The in-memory model every reader and importer fills and every table reads:
// one global string table, then per process (one stream file, or one imported
// process) its definitions and records. Record ids (threads, streams, launch
// configs, range instances, correlation ids) are local to their process;
// string ids are global (the reader remaps the file's ids).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/op_columns.h"
#include "libtracer/analysis/read/string_index.h"
#include "libtracer/core/records.h"

namespace tracer::analysis {

class StringTable {
 public:
  StringTable() { Intern(""); }  // id 0 is the empty string
  // A copy holds its own characters (the views point into their chunks);
  // a move keeps them where they are.
  StringTable(const StringTable& other) { CopyFrom(other); }
  StringTable& operator=(const StringTable& other) {
    if (this != &other) {
      StringTable copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  StringTable(StringTable&& other) noexcept { *this = std::move(other); }
  StringTable& operator=(StringTable&& other) noexcept {
    if (this == &other) return *this;
    views_ = std::move(other.views_);
    chunks_ = std::move(other.chunks_);
    index_ = std::move(other.index_);
    next_ = std::exchange(other.next_, nullptr);
    left_ = std::exchange(other.left_, 0);
    // other is left empty but usable (Get answers "" for any id; its next
    // Intern("") is id 0 again).
    other.views_.clear();
    other.index_ = StringIndex();
    return *this;
  }

  uint32_t Intern(std::string_view s) {
    const uint64_t h = StringIndex::Hash(s);
    const uint32_t found = index_.Find(s, h, Getter{&views_});
    if (found != StringIndex::kNone) return found;
    views_.push_back(Store(s));
    const uint32_t id = static_cast<uint32_t>(views_.size() - 1);
    index_.Insert(h, id);
    return id;
  }
  // Stores s under a new id without indexing it (no hash, no probe): for
  // texts nearly all distinct that are renamed before any use, an nsys
  // export's per-call range names in a report's import. Intern and Find do
  // not see the id, and the same text appended twice has two ids, until
  // IndexAppended(id).
  uint32_t Append(std::string_view s) {
    views_.push_back(Store(s));
    return static_cast<uint32_t>(views_.size() - 1);
  }
  // The id Intern would give id's text: the indexed id of the same text, or
  // id itself, indexed now (an appended id's text becomes Intern's answer).
  uint32_t IndexAppended(uint32_t id) {
    const std::string_view s = Get(id);
    const uint64_t h = StringIndex::Hash(s);
    const uint32_t found = index_.Find(s, h, Getter{&views_});
    if (found != StringIndex::kNone) return found;
    index_.Insert(h, id);
    return id;
  }
  std::string_view Get(uint32_t id) const {
    return id < views_.size() ? views_[id] : std::string_view();
  }
  // Id of s if already interned.
  std::optional<uint32_t> Find(std::string_view s) const {
    const uint32_t found = index_.Find(s, StringIndex::Hash(s), Getter{&views_});
    if (found == StringIndex::kNone) return std::nullopt;
    return found;
  }
  size_t size() const { return views_.size(); }
  // Makes room for n ids in all, appended (a hint: more still works).
  void ReserveIds(size_t n) { views_.reserve(n); }
  // Makes room for n strings in all (a hint: interning more still works).
  void Reserve(size_t n) {
    views_.reserve(n);
    index_.Reserve(n);
  }

 private:
  struct Getter {
    const std::vector<std::string_view>* views;
    std::string_view operator()(uint32_t id) const { return (*views)[id]; }
  };
  // Characters are kept in large chunks, never moved: a name-heavy nsys
  // export interns tens of thousands of distinct range names, and an
  // allocation per string was a tenth of its import.
  static constexpr size_t kChunkBytes = 64 * 1024;
  // Each string is followed by a NUL, so a view's data() is also a C string
  // (the replay test hands names to a C API).
  std::string_view Store(std::string_view s) {
    if (s.empty()) return std::string_view("", 0);
    const size_t need = s.size() + 1;
    if (need > left_) {
      // A long string gets a chunk of its own; the current one stays open.
      if (need > kChunkBytes / 4) {
        chunks_.push_back(std::make_unique_for_overwrite<char[]>(need));
        char* own = chunks_.back().get();
        std::copy(s.begin(), s.end(), own);
        own[s.size()] = '\0';
        return std::string_view(own, s.size());
      }
      // Not zero-filled: only the bytes stored are ever read.
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkBytes));
      next_ = chunks_.back().get();
      left_ = kChunkBytes;
    }
    char* at = next_;
    std::copy(s.begin(), s.end(), at);
    at[s.size()] = '\0';
    next_ += need;
    left_ -= need;
    return std::string_view(at, s.size());
  }
  void CopyFrom(const StringTable& other) {
    views_.reserve(other.views_.size());
    // Same ids, each text indexed under its first id (an appended duplicate
    // is kept, so ids stay those of other).
    for (std::string_view v : other.views_) IndexAppended(Append(v));
  }

  std::vector<std::string_view> views_;  // by id
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;
  size_t left_ = 0;
  StringIndex index_;
};

struct ThreadInfo {
  bool defined = false;
  uint64_t os_tid = 0;
  uint64_t pthread_id = 0;
  uint32_t name = 0;  // global string id
};

struct StreamInfo {
  bool defined = false;
  uint32_t device = 0;
  uint32_t context = 0;
  uint64_t stream = 0;
};

// Memory held by the process on one device after an allocation or free, as
// the input recorded it: a PyTorch profiler trace's "[memory]" events
// (profile_memory=True) carry the caching allocator's "Total Allocated" and
// "Total Reserved" bytes; an nsys export's CUDA_GPU_MEMORY_USAGE_EVENTS
// (`nsys profile --cuda-memory-usage=true`) are summed by the importer into
// the bytes of the CUDA allocations recorded and not yet freed. Only the
// Chrome export draws them (counter tracks); the stream format has no such
// record.
struct MemoryUsageSample {
  uint64_t ts_ns = 0;
  int64_t device = -1;     // CUDA device ordinal; -1 = host (CPU) memory
  int64_t allocated = -1;  // bytes in live allocations; -1 = not recorded
  int64_t reserved = -1;   // bytes the allocator holds (cached included); -1 = not recorded
  // CUDA managed (unified) memory allocated on device: it may reside on the
  // host or the device, so it is its own counter, not device memory.
  bool managed = false;
};

struct ProcessTrace {
  HeaderInfo header;
  std::optional<FooterInfo> footer;  // absent: the file was not closed cleanly
  std::string source_file;

  // Indexed by the stream's own ids (id 0 = unknown / none).
  std::vector<ThreadInfo> threads;
  std::vector<StreamInfo> streams;
  std::vector<LaunchConfigRecord> launch_configs;
  std::unordered_map<uint32_t, uint32_t> domain_names;               // domain id -> string id
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> category_names;  // (domain, category)

  // Records; every string field holds a global StringTable id. Kernels and
  // launches, the bulk of a trace, are held compact (read/op_columns.h).
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  KernelColumn kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ApiRecord> api_calls;
  LaunchColumn launches;
  std::vector<SyncRecord> syncs;
  std::vector<OverheadRecord> overheads;
  std::vector<GraphNodeSnapshotRecord> graph_nodes;
  std::vector<GraphLaunchRecord> graph_launches;
  std::vector<PmSampleRecord> pm_samples;
  std::vector<MemoryUsageSample> memory_usage;  // in input order

  // Sum of Chunk.counter_deltas by name (dropped records, errors, ...).
  std::map<std::string, uint64_t> counters;

  // Step numbers of the whole trace, (thread, start_ns) of a step instance
  // -> its number: kept by --steps / --time (reports/record_selection.h)
  // when they remove steps, so the steps left keep the program's numbers.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> step_numbers;
};

struct Trace {
  StringTable strings;
  std::vector<ProcessTrace> processes;
  // Range names (string ids) that name framework operator ranges (aten::
  // ops, emit_nvtx ranges, ...), never a training step; filled by
  // NormalizeRangeNames (importers/range_names.h).
  std::unordered_set<uint32_t> op_range_names;
  // Problems met while reading (truncated tail, unknown fields, ...), one
  // line each, shown to the user by the CLI.
  std::vector<std::string> warnings;
};

// How a process is shown in tables: "pid 1234" or "rank 0 (pid 1234)".
std::string ProcessLabelOf(const ProcessTrace& p);

// `--rank` / `--pid`: which processes a report covers. Empty lists select
// every process; a process without a recorded rank (an nsys export, a run
// without RANK) matches no --rank.
struct ProcessSelection {
  std::vector<int64_t> ranks, pids;
  bool empty() const { return ranks.empty() && pids.empty(); }
  bool Accepts(const HeaderInfo& h) const;
};

// Removes the processes `selection` does not accept from trace. Returns ""
// or, when none is left, one line naming what the trace holds.
std::string SelectProcesses(const ProcessSelection& selection, Trace* trace);

}  // namespace tracer::analysis
