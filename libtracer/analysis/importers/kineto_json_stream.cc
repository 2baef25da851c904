#include "libtracer/analysis/importers/kineto_json_stream.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/correlation_bits.h"
#include "libtracer/analysis/importers/gzip_stream.h"
#include "libtracer/analysis/importers/kineto_converter.h"
#include "libtracer/analysis/importers/kineto_tokenizer.h"

namespace tracer::analysis::importers {
namespace {

// Sweep order at one start time: ranges opening at t before the calls at t
// (InnermostOpenAt takes start <= t), calls before the GPU work they
// launched; as nsys_sqlite_stream.cc.
enum class ItemKind : uint8_t { kRange = 0, kApi = 1, kKernel = 2, kMemcpy = 3, kMemset = 4 };

// One event, as small as the sort allows (48 bytes).
struct Item {
  uint64_t start, end;
  uint64_t corr;
  uint64_t extra;  // range: category; api: cbid; memcpy, memset: bytes
  uint32_t name;   // string id; memcpy: copy kind
  uint32_t track;  // range, api: thread id; ops: stream id
  uint32_t aux;    // range: domain; api: ApiDomain; kernel: launch configuration
  ItemKind kind;
};
static_assert(sizeof(Item) == 48);

// The sweep's order; ranges at one start as AssignRangeIdsAndNesting sorts
// them (the enclosing one first). Equal items keep their file order (stable
// sort within a run, run index across runs).
bool Less(const Item& a, const Item& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.kind != ItemKind::kRange) return false;
  if (a.end != b.end) return a.end > b.end;
  if (a.track != b.track) return a.track < b.track;
  return a.name < b.name;
}

// Sorted runs of items in an unlinked temporary file.
class RunFile {
 public:
  ~RunFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Open(std::string* error) {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/tracer-kineto-sort-XXXXXX";
    fd_ = ::mkstemp(tmpl.data());
    if (fd_ < 0) {
      *error = "cannot create a temporary file in " + tmpl.substr(0, tmpl.rfind('/')) + " (" +
               std::strerror(errno) + ")";
      return false;
    }
    ::unlink(tmpl.c_str());
    return true;
  }
  bool Append(const std::vector<Item>& run, std::string* error) {
    const char* p = reinterpret_cast<const char*>(run.data());
    size_t left = run.size() * sizeof(Item);
    runs_.push_back({size_, run.size()});
    while (left > 0) {
      const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(size_));
      if (n <= 0) {
        *error = std::string("cannot write the temporary sort file (") + std::strerror(errno) + ")";
        return false;
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    return true;
  }
  struct Run {
    uint64_t offset;
    size_t items;
  };
  const std::vector<Run>& runs() const { return runs_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<Run> runs_;
};

// Reads one run back a block at a time.
class RunReader {
 public:
  static constexpr size_t kBlock = 1024;
  RunReader(int fd, const RunFile::Run& run) : fd_(fd), next_(run.offset), left_(run.items) {}
  // False at the run's end or on a read error (*failed).
  bool Refill(bool* failed) {
    buf_.resize(std::min(left_, kBlock));
    pos_ = 0;
    if (buf_.empty()) return false;
    char* p = reinterpret_cast<char*>(buf_.data());
    size_t want = buf_.size() * sizeof(Item);
    while (want > 0) {
      const ssize_t n = ::pread(fd_, p, want, static_cast<off_t>(next_));
      if (n <= 0) {
        *failed = true;
        buf_.clear();
        return false;
      }
      p += n;
      want -= static_cast<size_t>(n);
      next_ += static_cast<uint64_t>(n);
    }
    left_ -= buf_.size();
    return true;
  }
  const Item& Current() const { return buf_[pos_]; }
  // False at the run's end.
  bool Advance(bool* failed) { return ++pos_ < buf_.size() || Refill(failed); }

 private:
  int fd_;
  uint64_t next_;
  size_t left_;
  std::vector<Item> buf_;
  size_t pos_ = 0;
};

struct OpenRange {
  uint64_t id, start, end;
  uint32_t depth;
};

// Pop order: end first, then the deeper (the child) first.
struct LaterPop {
  bool operator()(const RangeRecord& a, const RangeRecord& b) const {
    return a.end_ns != b.end_ns ? a.end_ns > b.end_ns : a.depth < b.depth;
  }
};

class KinetoStreamer {
 public:
  KinetoStreamer(StringTable* strings, const KinetoStreamCallbacks& cb, size_t batch,
                 size_t run_items)
      : converter_(strings),
        cb_(cb),
        batch_(std::max<size_t>(batch, 1)),
        run_items_(std::max<size_t>(run_items, 2)) {}

  bool Run(const std::string& path, std::string* error, bool* unsupported);

 private:
  // The records the converter appended for one event, as items.
  void Drain();
  void Push(const Item& item);
  bool Spill();
  bool Sweep(std::string* error);
  void OnItem(const Item& item);
  void OnRange(const Item& item);
  void OnApi(const Item& item);
  void EmitClosedBefore(uint64_t t);
  void Flush();

  KinetoConverter converter_;
  KinetoStreamCallbacks cb_;
  size_t batch_, run_items_;
  std::vector<Item> run_;
  RunFile file_;
  bool spilled_ = false;
  std::string spill_error_;
  CorrelationBits gpu_corr_;
  bool sparse_corr_ = false;
  uint64_t ranges_ = 0, kernels_ = 0, memcpys_ = 0, memsets_ = 0, api_calls_ = 0, end_ = 0;

  // The sweep.
  ProcessTrace* proc_ = nullptr;
  size_t pending_records_ = 0;
  uint64_t next_range_id_ = 1;
  std::unordered_map<uint32_t, std::vector<OpenRange>> stacks_;  // thread -> open ranges
  std::priority_queue<RangeRecord, std::vector<RangeRecord>, LaterPop> closing_;
  uint64_t partial_overlaps_ = 0;
};

void KinetoStreamer::Push(const Item& item) {
  run_.push_back(item);
  if (run_.size() >= run_items_ && spill_error_.empty() && !Spill()) run_.clear();
}

bool KinetoStreamer::Spill() {
  if (!spilled_) {
    if (!file_.Open(&spill_error_)) return false;
    spilled_ = true;
  }
  std::stable_sort(run_.begin(), run_.end(), Less);
  if (!file_.Append(run_, &spill_error_)) return false;
  run_.clear();
  return true;
}

void KinetoStreamer::Drain() {
  ProcessTrace& p = converter_.process();
  if (!p.ranges.empty()) {
    for (const RangeRecord& r : p.ranges) {
      Push({r.start_ns, r.end_ns, 0, r.category, r.name, r.thread, r.domain, ItemKind::kRange});
      end_ = std::max(end_, r.end_ns);
    }
    ranges_ += p.ranges.size();
    p.ranges.clear();
  }
  if (!p.api_calls.empty()) {
    for (const ApiRecord& a : p.api_calls) {
      Push({a.start_ns, a.end_ns, a.correlation_id, a.cbid, a.name, a.thread,
            static_cast<uint32_t>(a.domain), ItemKind::kApi});
    }
    api_calls_ += p.api_calls.size();
    p.api_calls.clear();
  }
  auto gpu = [&](uint64_t corr) {
    if (!gpu_corr_.Set(corr)) sparse_corr_ = true;
  };
  if (!p.kernels.empty()) {
    for (const KernelRecord& k : p.kernels) {
      Push({k.start_ns, k.end_ns, k.correlation_id, 0, k.name, k.stream, k.launch_config,
            ItemKind::kKernel});
      gpu(k.correlation_id);
      end_ = std::max(end_, k.end_ns);
    }
    kernels_ += p.kernels.size();
    p.kernels.clear();
  }
  if (!p.memcpys.empty()) {
    for (const MemcpyRecord& m : p.memcpys) {
      Push({m.start_ns, m.end_ns, m.correlation_id, m.bytes, m.copy_kind, m.stream, 0,
            ItemKind::kMemcpy});
      gpu(m.correlation_id);
    }
    memcpys_ += p.memcpys.size();
    p.memcpys.clear();
  }
  if (!p.memsets.empty()) {
    for (const MemsetRecord& m : p.memsets) {
      Push({m.start_ns, m.end_ns, m.correlation_id, m.bytes, 0, m.stream, 0, ItemKind::kMemset});
      gpu(m.correlation_id);
    }
    memsets_ += p.memsets.size();
    p.memsets.clear();
  }
  // The stream format has no memory-usage record (only the Chrome export,
  // from the whole-trace importer, draws them).
  p.memory_usage.clear();
}

void KinetoStreamer::Flush() {
  if (pending_records_ == 0) return;
  cb_.on_batch(*proc_);
  proc_->ranges.clear();
  proc_->kernels.clear();
  proc_->memcpys.clear();
  proc_->memsets.clear();
  proc_->api_calls.clear();
  proc_->launches.clear();
  pending_records_ = 0;
}

void KinetoStreamer::EmitClosedBefore(uint64_t t) {
  // A range ending at t is handed out only once the sweep is past t: a
  // zero-length range at t still takes launches at t (InnermostOpenAt).
  while (!closing_.empty() && closing_.top().end_ns < t) {
    proc_->ranges.push_back(closing_.top());
    closing_.pop();
    ++pending_records_;
  }
}

void KinetoStreamer::OnRange(const Item& item) {
  RangeRecord r;
  r.kind = RangeKind::kPushPop;
  r.thread = item.track;
  r.name = item.name;
  r.domain = item.aux;
  r.category = static_cast<uint32_t>(item.extra);
  r.start_ns = item.start;
  r.end_ns = item.end;
  // AssignRangeIdsAndNesting, one range at a time.
  r.id = next_range_id_++;
  std::vector<OpenRange>& stack = stacks_[r.thread];
  while (!stack.empty() && stack.back().end <= r.start_ns) stack.pop_back();
  if (!stack.empty()) {
    if (stack.back().end < r.end_ns) ++partial_overlaps_;
    r.parent_id = stack.back().id;
    r.depth = stack.back().depth + 1;
  }
  stack.push_back({r.id, r.start_ns, r.end_ns, r.depth});
  closing_.push(r);
}

void KinetoStreamer::OnApi(const Item& item) {
  ApiRecord a;
  a.start_ns = item.start;
  a.end_ns = item.end;
  a.domain = static_cast<ApiDomain>(item.aux);
  a.cbid = static_cast<uint32_t>(item.extra);
  a.thread = item.track;
  a.correlation_id = item.corr;
  a.name = item.name;
  proc_->api_calls.push_back(a);
  ++pending_records_;
  if (a.correlation_id == 0 || !gpu_corr_.Has(a.correlation_id)) return;
  LaunchRecord l;
  l.correlation_id = a.correlation_id;
  l.time_ns = a.start_ns;
  l.thread = a.thread;
  l.domain = a.domain;
  // RangeIndex::InnermostOpenAt: the stack holds the chain of the last
  // range started at or before t; the innermost one still open wins.
  if (auto it = stacks_.find(a.thread); it != stacks_.end()) {
    const uint64_t t = a.start_ns;
    for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
      if ((r->start <= t && t < r->end) || (r->start == t && r->end == t)) {
        l.range_id = r->id;
        break;
      }
    }
  }
  proc_->launches.push_back(l);
  ++pending_records_;
}

void KinetoStreamer::OnItem(const Item& item) {
  EmitClosedBefore(item.start);
  switch (item.kind) {
    case ItemKind::kRange:
      OnRange(item);
      break;
    case ItemKind::kApi:
      OnApi(item);
      break;
    case ItemKind::kKernel: {
      KernelRecord k;
      k.start_ns = item.start;
      k.end_ns = item.end;
      k.correlation_id = item.corr;
      k.stream = item.track;
      k.name = item.name;
      k.launch_config = item.aux;
      proc_->kernels.push_back(k);
      ++pending_records_;
      break;
    }
    case ItemKind::kMemcpy: {
      MemcpyRecord m;
      m.start_ns = item.start;
      m.end_ns = item.end;
      m.correlation_id = item.corr;
      m.stream = item.track;
      m.bytes = item.extra;
      m.copy_kind = item.name;
      proc_->memcpys.push_back(m);
      ++pending_records_;
      break;
    }
    case ItemKind::kMemset: {
      MemsetRecord m;
      m.start_ns = item.start;
      m.end_ns = item.end;
      m.correlation_id = item.corr;
      m.stream = item.track;
      m.bytes = item.extra;
      proc_->memsets.push_back(m);
      ++pending_records_;
      break;
    }
  }
  if (pending_records_ >= batch_) Flush();
}

bool KinetoStreamer::Sweep(std::string* error) {
  if (!spilled_) {
    std::stable_sort(run_.begin(), run_.end(), Less);
    for (const Item& item : run_) OnItem(item);
    std::vector<Item>().swap(run_);
    return true;
  }
  if (!run_.empty() && !Spill()) {
    *error = spill_error_;
    return false;
  }
  std::vector<Item>().swap(run_);
  // k-way merge; ties go to the earlier run (file order).
  std::vector<RunReader> readers;
  readers.reserve(file_.runs().size());
  bool failed = false;
  auto later = [&](size_t a, size_t b) {
    const Item& x = readers[a].Current();
    const Item& y = readers[b].Current();
    if (Less(y, x)) return true;
    if (Less(x, y)) return false;
    return a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (const RunFile::Run& run : file_.runs()) {
    readers.emplace_back(file_.fd(), run);
    if (readers.back().Refill(&failed)) heap.push(readers.size() - 1);
  }
  while (!heap.empty() && !failed) {
    const size_t r = heap.top();
    heap.pop();
    OnItem(readers[r].Current());
    if (readers[r].Advance(&failed)) heap.push(r);
  }
  if (failed) {
    *error = std::string("cannot read the temporary sort file back (") + std::strerror(errno) + ")";
    return false;
  }
  return true;
}

bool KinetoStreamer::Run(const std::string& path, std::string* error, bool* unsupported) {
  PrefetchingGzipReader reader;
  if (!reader.Open(path, error)) return false;
  KinetoTraceInfo info;
  std::string tok_error;
  run_.reserve(std::min<size_t>(run_items_, 1u << 16));
  const bool ok = TokenizeKinetoJson([&](char* out, size_t size) { return reader.Read(out, size); },
                                     [&](const KinetoEvent& e) {
                                       converter_.Add(e);
                                       Drain();
                                     },
                                     &info, &tok_error);
  reader.Close();
  const GzipFile& gz = reader.file();
  if (gz.failed()) {
    *error = path + ": " + gz.failure() + " after " + std::to_string(gz.bytes_read()) +
             " decompressed bytes";
    return false;
  }
  if (!ok) {
    *error = path + ": " + tok_error;
    return false;
  }
  if (!spill_error_.empty() || sparse_corr_) {
    *error = path + ": " +
             (sparse_corr_ ? std::string("correlation ids too large to keep one bit each")
                           : spill_error_);
    if (unsupported != nullptr) *unsupported = true;
    return false;
  }
  converter_.FinishDefinitions(info, path);
  ProcessTrace& process = converter_.process();
  proc_ = &process;
  if (!Sweep(error)) {
    *error = path + ": " + *error;
    return false;
  }
  EmitClosedBefore(UINT64_MAX);
  while (!closing_.empty()) {  // ranges ending at UINT64_MAX
    process.ranges.push_back(closing_.top());
    closing_.pop();
    ++pending_records_;
  }
  Flush();
  if (partial_overlaps_ != 0)
    process.counters["import_partially_overlapping_ranges"] += partial_overlaps_;
  process.footer = KinetoFooter(ranges_, kernels_, memcpys_, memsets_, api_calls_, end_, info);
  cb_.on_process(process);
  proc_ = nullptr;
  return true;
}

}  // namespace

bool StreamKinetoJson(const std::string& path, StringTable* strings,
                      const KinetoStreamCallbacks& callbacks, std::string* error, bool* unsupported,
                      size_t batch_records, size_t run_items) {
  if (unsupported != nullptr) *unsupported = false;
  KinetoStreamer streamer(strings, callbacks, batch_records, run_items);
  return streamer.Run(path, error, unsupported);
}

}  // namespace tracer::analysis::importers
