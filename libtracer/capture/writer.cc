#include "libtracer/capture/writer.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "libtracer/capture/config.h"
#include "libtracer/capture/definitions.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/log.h"
#include "libtracer/capture/misuse_counters.h"
#include "libtracer/capture/run_id.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/thread_state.h"
#include "libtracer/core/clock.h"
#include "libtracer/core/string_table.h"

namespace tracer {
namespace {

// The writer's own schedule runs on real time, not the trace clock (which a
// test build may replay from a recording).
uint64_t SteadyNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
// 4096 -> "4K", 33554432 -> "32M" (as the size options are written).
std::string SizeText(uint64_t bytes) {
  if (bytes != 0 && bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes != 0 && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes != 0 && bytes % (uint64_t{1} << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}
constexpr const char* kThreadCounterNames[4] = {
    "dropped.nvtx_ring_full", "dropped.nvtx_stack_overflow", "nvtx_pop_without_push",
    "dropped.nvtx_after_session_end"};
}  // namespace

Writer::Writer(ThreadRegistry* threads, uint32_t flush_interval_ms)
    : threads_(threads), flush_interval_ms_(flush_interval_ms), decoder_(this) {
  // A forked child's counts start from what its parent had counted.
  misuse_seen_[0] = GlobalMisuse().invalid_string_handle.load(std::memory_order_relaxed);
  misuse_seen_[1] = GlobalMisuse().invalid_range_id.load(std::memory_order_relaxed);
  misuse_seen_[2] = GlobalMisuse().invalid_domain_handle.load(std::memory_order_relaxed);
}

Writer::~Writer() {
  if (thread_.joinable()) thread_.detach();
}

bool Writer::Begin(const std::vector<std::string>& paths, const HeaderInfo& header,
                   std::string* error) {
  // Encoded before the file is created: running out of memory here must not
  // leave an empty file behind.
  std::string bytes;
  AppendFileMagic(&bytes);
  builder_.SetHeader(header);
  builder_.FinishFrame(&bytes);
  const int64_t run_start = ProcessStartWallNs();
  for (const std::string& path : paths) {
    switch (file_.Open(path, ThisRunId(), run_start, error, force_overwrite_)) {
      case TraceFile::OpenResult::kInUse:
        continue;
      case TraceFile::OpenResult::kRefused:
        return false;
      case TraceFile::OpenResult::kOpened:
        if (!file_.Append(bytes)) {
          *error = "cannot write '" + path + "'";
          return false;
        }
        return true;
    }
  }
  *error = "cannot create a trace file: '" + (paths.empty() ? std::string() : paths.front()) +
           "' and the names derived from it are being written by other processes";
  return false;
}

bool Writer::BeginOnFd(int fd, const HeaderInfo& header) {
  file_.Adopt(fd, "fd:" + std::to_string(fd));
  std::string bytes;
  AppendFileMagic(&bytes);
  builder_.SetHeader(header);
  builder_.FinishFrame(&bytes);
  return file_.Append(bytes);
}

void Writer::StartThread() {
  thread_ = std::thread([this] {
    Guarded(
        "writer thread", "the trace ends at the last frame written", [this] { Loop(); },
        [this]() noexcept { MarkFinished(); });
  });
}

void Writer::MarkFinished() noexcept {
  // A std::mutex only throws on misuse; if it ever did, terminating here is
  // the lesser evil than a Stop that waits forever.
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  done_cv_.notify_all();
}

void Writer::AddSource(RecordSource* source) {
  std::lock_guard<std::mutex> lock(sources_mu_);
  sources_.push_back(source);
}

void Writer::Wake() noexcept {
  wake_seq_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_seq_), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

void Writer::WaitForWake(uint32_t seen, uint64_t timeout_ns) noexcept {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000ull);
  // Returns at once when wake_seq_ moved since `seen` (no lost wake-up).
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_seq_), FUTEX_WAIT_PRIVATE, seen, &ts,
          nullptr, 0);
}

void Writer::RequestDrain() noexcept {
  // Read first: while a request is pending, a pop writes no shared line.
  if (drain_requested_.load(std::memory_order_relaxed)) return;
  if (drain_requested_.exchange(true, std::memory_order_acq_rel)) return;
  Wake();
}

void Writer::RequestPopulate() noexcept {
  if (populate_requested_.load(std::memory_order_relaxed)) return;
  if (populate_requested_.exchange(true, std::memory_order_acq_rel)) return;
  Wake();
}

void Writer::PrefaultRing(ThreadState* t) noexcept {
  ThreadRing& ring = t->ring();
  ring.PrefaultAhead();
  if (!ring.populate_supported() && !populate_unsupported_logged_) {
    populate_unsupported_logged_ = true;
    LogOnce("ring-populate", LogLevel::kDebug,
            "the kernel has no MADV_POPULATE_WRITE (Linux 5.14 or later): NVTX buffer pages "
            "are faulted in by the recording threads as they write");
  }
}

void Writer::PopulateRings(const std::vector<ThreadState*>& rings) noexcept {
  populate_requested_.store(false, std::memory_order_release);
  for (ThreadState* t : rings) PrefaultRing(t);
}

void Writer::PopulatePass() {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (finished_writing_) {
    populate_requested_.store(false, std::memory_order_release);
    return;
  }
  threads_->Snapshot(&populate_snapshot_);
  PopulateRings(populate_snapshot_);
}

void Writer::Loop() {
  const uint64_t interval_ns = uint64_t{flush_interval_ms_} * 1000000ull;
  uint64_t last_drain_ns = SteadyNs();
  while (true) {
    uint64_t target;
    bool stopping;
    while (true) {
      const uint32_t seen = wake_seq_.load(std::memory_order_acquire);
      // Before anything else: a producer is about to fault pages in itself.
      // (A request made during the pass moves wake_seq_ past `seen`: the
      // wait below returns at once and the next round takes it.)
      if (populate_requested_.load(std::memory_order_acquire)) PopulatePass();
      {
        std::lock_guard<std::mutex> lock(mu_);
        target = flush_requested_;
        stopping = stop_requested_;
      }
      if (stopping || target > flush_done_) break;
      const uint64_t now = SteadyNs();
      if (busiest_ring_ >= kRedrainEvents) break;
      if (busiest_ring_ >= kBusyDrainEvents) polling_ = true;
      if (busiest_ring_ < kQuietDrainEvents) polling_ = false;
      const uint64_t every = polling_ ? std::min(interval_ns, kBusyPollNs) : interval_ns;
      if (now - last_drain_ns >= every) break;
      uint64_t wait_ns = every - (now - last_drain_ns);
      if (drain_requested_.load(std::memory_order_acquire)) {
        // Requested drains are spaced out: a child ending top-level ranges
        // back to back gets one drain per kMinRequestedGapNs, not one each.
        const uint64_t since = now - last_requested_drain_ns_;
        if (since >= kMinRequestedGapNs) break;
        wait_ns = std::min(wait_ns, kMinRequestedGapNs - since);
      }
      WaitForWake(seen, wait_ns);
    }
    // Cleared before draining: a request made from here on gets a drain of
    // its own.
    if (drain_requested_.exchange(false, std::memory_order_acq_rel)) {
      last_requested_drain_ns_ = SteadyNs();
    }
    DrainOnce(stopping);
    // Here, not on an application thread: the TSC clock's drift correction
    // (a no-op until its interval has passed, or without the TSC).
    RecalibrateTraceClock();
    last_drain_ns = SteadyNs();
    std::lock_guard<std::mutex> lock(mu_);
    if (target > flush_done_) flush_done_ = target;
    if (stopping) finished_ = true;
    done_cv_.notify_all();
    if (stopping) return;
  }
}

bool Writer::Flush(uint32_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (finished_ || !thread_.joinable()) return false;
  uint64_t mine = ++flush_requested_;
  Wake();
  return done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return flush_done_ >= mine || finished_; });
}

bool Writer::Stop(uint32_t timeout_ms) {
  if (!thread_.joinable()) {
    DrainOnce(true);
    return true;
  }
  bool done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    stop_requested_ = true;
    Wake();
    done =
        done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return finished_; });
  }
  if (done) {
    thread_.join();
  } else {
    thread_.detach();  // stuck (e.g. blocked write): give up, never hang the host
  }
  return done;
}

void Writer::DrainOnce(bool final) {
  std::lock_guard<std::mutex> lock(drain_mu_);
  if (finished_writing_) return;
  try {
    uint64_t begin = NowNs();

    threads_->Snapshot(&snapshot_);
    retired_.clear();
    busiest_ring_ = 0;
    for (ThreadState* t : snapshot_) {
      // exited is read before the drain: everything the thread appended
      // before exiting is then visible to this drain.
      bool exited = t->exited.load(std::memory_order_acquire);
      DrainThread(t);
      if (exited) retired_.push_back(t);
    }

    std::vector<RecordSource*> sources;
    {
      std::lock_guard<std::mutex> slock(sources_mu_);
      sources = sources_;
    }
    for (RecordSource* s : sources) {
      s->Drain(*this, final);
      MaybeCutFrame();
    }
    CollectMisuseCounters();
    if (capture_window_ && !capture_start_counted_) {
      if (const uint64_t n = capture_window_->first_recorded_occurrence(); n != 0) {
        Count("capture_range_first_occurrence", n);
        capture_start_counted_ = true;
      }
    }

    category_scratch_.clear();
    categories_emitted_ =
        GlobalDefinitions().CategoriesSince(categories_emitted_, &category_scratch_);
    for (const CategoryDefRecord& c : category_scratch_) {
      EnsureString(c.name);
      EnsureDomain(c.domain);
      builder_.AddCategory(c);
    }

    if (final) {
      // Threads go on while the process exits: what they appended during
      // the passes above (pops of ranges found open there, say) is still written,
      // and what they could not record any more is counted, as late as can
      // be before the footer. A fresh snapshot: threads started meanwhile
      // count too.
      threads_->Snapshot(&snapshot_);
      for (ThreadState* t : snapshot_) DrainThread(t);
    }
    uint64_t unclosed = 0;
    if (final) unclosed = decoder_.Finish(NowNs());
    EmitCounterDeltas();
    busy_ns_ += NowNs() - begin;
    if (final) {
      WriteFooter(NowNs(), unclosed);
      finished_writing_ = true;
      file_.Close();
    } else {
      EmitFrame();
    }
    if (final) {
      retired_.clear();  // nothing is written after the footer
    } else {
      RetireThreads();
    }
  } catch (...) {
    // The builder may hold half a record: keep what is on disk, write no more.
    finished_writing_ = true;
    file_.Close();
    throw;
  }
}

void Writer::DrainThread(ThreadState* t) {
  const uint32_t id = t->id();
  auto& info = thread_info_[id];
  if (info.os_tid == 0) {
    info.os_tid = t->os_tid();
    info.pthread_id = t->pthread_id();
    if (info.name == 0) info.name = GlobalDefinitions().OsThreadName(info.os_tid);
  }
  // Ring events hold clock ticks: converted with the calibration of the
  // time they were read (a re-calibration since is in the map's history).
  RefreshTickMap(decoder_.tick_map(), &tick_map_generation_);
  size_t n = 0;
  t->ring().Drain(
      [&](const Event& e) {
        decoder_.Consume(id, e);
        if (++n % kDrainEventsPerPopulateCheck == 0) {
          MaybeCutFrame();
          // A long drain (a ring holding megabytes) does not keep other
          // producers, or this one, waiting for their pages.
          if (populate_requested_.load(std::memory_order_relaxed)) PopulateRings(snapshot_);
        }
      },
      info.keep_pages);
  ThreadInfo& after = thread_info_[id];  // the reference may have moved
  if (n > 0) after.had_events = true;
  busiest_ring_ = std::max(busiest_ring_, n);
  const uint64_t now = SteadyNs();
  if (after.last_drain_ns != 0 && now > after.last_drain_ns) {
    after.keep_pages =
        static_cast<double>(n) * 1e9 >= static_cast<double>(kKeepPagesEventsPerSecond) *
                                            static_cast<double>(now - after.last_drain_ns);
  }
  after.last_drain_ns = now;
  PrefaultRing(t);
  CollectThreadCounters(t);
  MaybeCutFrame();
}

void Writer::RetireThreads() {
  if (retired_.empty()) return;
  for (ThreadState* t : retired_) {
    const uint32_t id = t->id();
    auto it = thread_info_.find(id);
    if (it != thread_info_.end()) {
      // Defined now if it recorded anything: a start/end range it began may
      // end later on another thread and still name it.
      if (it->second.had_events) EnsureThread(id);
      if (it->second.defined) {
        retired_by_pthread_[it->second.pthread_id] = id;
        retired_by_pthread32_[static_cast<uint32_t>(it->second.pthread_id)] = id;
      }
      thread_info_.erase(it);
    }
    if (id >= retired_ids_.size())
      retired_ids_.resize(std::max<size_t>(id + 1, retired_ids_.size() * 2));
    retired_ids_[id] = true;
    if (last_defined_thread_ == id) last_defined_thread_ = 0;
    decoder_.ThreadExited(id);
    thread_counter_seen_.erase(t);
    // A new thread may get this pthread_t: CUPTI records then name it.
    pthread_ids_.erase(t->pthread_id());
    pthread_ids_.erase(static_cast<uint32_t>(t->pthread_id()));
  }
  threads_->Recycle(retired_);
  retired_.clear();
}

void Writer::CollectThreadCounters(ThreadState* t) {
  ThreadCounters& c = t->counters();
  uint64_t now[4] = {c.ring_full.load(std::memory_order_relaxed),
                     c.stack_overflow.load(std::memory_order_relaxed),
                     c.pop_without_push.load(std::memory_order_relaxed),
                     c.after_session_end.load(std::memory_order_relaxed)};
  auto& seen = thread_counter_seen_[t];
  const uint64_t seen_ring_full_before = seen[0];
  for (int i = 0; i < 4; ++i) {
    if (now[i] > seen[i]) {
      Count(kThreadCounterNames[i], now[i] - seen[i]);
      seen[i] = now[i];
    }
  }
  if (now[0] <= seen_ring_full_before) return;
  if (t->ring().capacity() * sizeof(Event) < RingBudget::RingBytes(threads_->ring_bytes())) {
    ring_full_past_limit_ = true;
  }
  if (!ring_full_logged_) {
    ring_full_logged_ = true;
    const auto it = counters_.find(kThreadCounterNames[0]);
    const uint64_t so_far = it == counters_.end() ? now[0] : it->second;
    LogOnce("ring-full", LogLevel::kWarn, RingFullLine(so_far, false));
  }
}

std::string Writer::RingFullLine(uint64_t dropped, bool at_exit) const {
  // The option and a value that would have avoided it: four times the
  // buffer (or the limit, when the full rings were small because the limit
  // was reached), within the options' ranges.
  const bool limit = ring_full_past_limit_;
  const uint64_t now = limit ? threads_->ring_limit() : threads_->ring_bytes();
  const uint64_t next = std::min(now * 4, limit ? kMaxBufferLimit : kMaxBufferSize);
  std::string line = std::to_string(dropped) + " NVTX events dropped" +
                     (at_exit ? " in all" : " so far") +
                     " (nvtx_ring_full): a thread's event buffer was full, ";
  if (limit) {
    line += "as threads started after all buffers together reached the limit (" + SizeText(now) +
            ") got small ones; ";
    line += next > now ? "rerun with `tracer run --buffer-limit " + SizeText(next) +
                             "` (TRACER_BUFFER_LIMIT)"
                       : std::string("`tracer run --buffer-limit`");
  } else {
    line += "the thread recorded faster than the writer drained its " + SizeText(now) + " buffer; ";
    line += next > now ? "rerun with `tracer run --buffer-size " + SizeText(next) +
                             "` (TRACER_BUFFER_SIZE)"
                       : std::string("`tracer run --buffer-size`");
  }
  if (next <= now) line += " is at its largest: record fewer ranges (--domains-exclude)";
  if (!at_exit) line += "; the total is logged at exit";
  return line;
}

void Writer::CollectMisuseCounters() {
  const uint64_t now[3] = {GlobalMisuse().invalid_string_handle.load(std::memory_order_relaxed),
                           GlobalMisuse().invalid_range_id.load(std::memory_order_relaxed),
                           GlobalMisuse().invalid_domain_handle.load(std::memory_order_relaxed)};
  if (now[0] > misuse_seen_[0]) {
    Count("nvtx_invalid_string_handle", now[0] - misuse_seen_[0]);
    LogOnce("invalid-string-handle", LogLevel::kWarn,
            "an NVTX event named by a registered-string handle the tracer never returned was "
            "recorded with an empty name (counted as nvtx_invalid_string_handle)");
  }
  if (now[1] > misuse_seen_[1]) {
    Count("dropped.nvtx_invalid_range_id", now[1] - misuse_seen_[1]);
    LogOnce("invalid-range-id", LogLevel::kWarn,
            "nvtxRangeEnd was called with an id no nvtxRangeStart returned (or ended twice); "
            "ignored and counted as nvtx_invalid_range_id");
  }
  if (now[2] > misuse_seen_[2]) {
    Count("dropped.nvtx_invalid_domain_handle", now[2] - misuse_seen_[2]);
    LogOnce("invalid-domain-handle", LogLevel::kWarn,
            "an NVTX call passed a domain handle the tracer never returned (or one destroyed); "
            "the call was dropped and counted as nvtx_invalid_domain_handle");
  }
  for (int i = 0; i < 3; ++i) misuse_seen_[i] = std::max(misuse_seen_[i], now[i]);
}

void Writer::EmitCounterDeltas() {
  for (const auto& [name, total] : counters_) {
    uint64_t& written = counters_written_[name];
    if (total > written) {
      builder_.AddCounterDelta(name, total - written);
      written = total;
    }
  }
}

void Writer::MaybeCutFrame() {
  if (builder_.ApproximateBytes() >= kWriterFrameBytes) EmitFrame();
}

// Marks the writer as inside a write of the trace file for the producers'
// stuck-or-starved test (ThreadRing::YieldToWriter).
class WritingTrace {
 public:
  WritingTrace() noexcept {
    g_ring_writer_writing_since_ns.store(std::max<uint64_t>(1, RingCoarseNowNs()),
                                         std::memory_order_relaxed);
  }
  ~WritingTrace() { g_ring_writer_writing_since_ns.store(0, std::memory_order_relaxed); }
  WritingTrace(const WritingTrace&) = delete;
  WritingTrace& operator=(const WritingTrace&) = delete;
};

void Writer::EmitFrame() {
  if (builder_.pending_items() == 0) return;
  frame_.clear();
  builder_.FinishFrame(&frame_);
  WritingTrace writing;
  file_.Append(frame_);
}

void Writer::WriteFooter(uint64_t end_ns, uint64_t unclosed) {
  if (const auto it = counters_.find(kThreadCounterNames[0]);
      it != counters_.end() && it->second > 0 && LogEnabled(LogLevel::kWarn)) {
    Log(LogLevel::kWarn, RingFullLine(it->second, true));
  }
  FooterInfo footer;
  footer.session_end_trace_ns = end_ns;
  static constexpr const char* kKindNames[kNumKinds] = {
      "ranges",  "marks",     "launches",         "graph_nodes", "kernels",        "memcpys",
      "memsets", "api_calls", "synchronizations", "overheads",   "graph_launches", "pm_samples"};
  for (int k = 0; k < kNumKinds; ++k) {
    if (records_by_kind_[k] > 0)
      footer.records_by_kind.emplace_back(kKindNames[k], records_by_kind_[k]);
  }
  for (const auto& [name, n] : counters_) {
    std::string_view sv(name);
    if (sv.substr(0, kDroppedPrefix.size()) == kDroppedPrefix) {
      footer.dropped_by_cause.emplace_back(std::string(sv.substr(kDroppedPrefix.size())), n);
    } else {
      footer.stats.emplace_back(name, n);
    }
  }
  footer.stats.emplace_back("ranges_left_open", unclosed);
  // Thread states allocated: they follow the most threads alive at once
  // (states of exited threads are reused), not the threads ever started.
  footer.stats.emplace_back("thread_states", threads_->allocated());
  footer.overhead_ns = busy_ns_;
  builder_.SetFooter(footer);
  frame_.clear();
  builder_.FinishFrame(&frame_);
  WritingTrace writing;
  file_.Append(frame_);
}

void Writer::EnsureString(uint32_t id) {
  if (id == 0) return;
  if (id >= strings_defined_.size()) {
    // Only ids the table handed out may size the vector (an id from outside
    // once made it wrap to a tiny size, or grow by hundreds of MB).
    if (!GlobalStrings().Known(id)) {
      Count("string_id_unknown", 1);
      return;
    }
    strings_defined_.resize(size_t{id} + 1024, false);
  }
  if (strings_defined_[id]) return;
  strings_defined_[id] = true;
  builder_.AddString(id, GlobalStrings().Text(id));
}

void Writer::EnsureDomain(uint32_t id) {
  if (id == 0) return;
  if (id >= domains_defined_.size()) domains_defined_.resize(id + 64, false);
  if (domains_defined_[id]) return;
  domains_defined_[id] = true;
  uint32_t name = GlobalDefinitions().DomainName(static_cast<uint16_t>(id));
  EnsureString(name);
  builder_.AddDomain(DomainDefRecord{id, name});
}

void Writer::EnsureThread(uint32_t id) {
  if (id == 0 || id == last_defined_thread_ || IsRetired(id)) return;
  ThreadInfo& info = thread_info_[id];
  if (info.defined) {
    last_defined_thread_ = id;
    return;
  }
  info.defined = true;
  if (info.name == 0 && info.os_tid != 0) info.name = GlobalDefinitions().OsThreadName(info.os_tid);
  EnsureString(info.name);
  builder_.AddThread(ThreadDefRecord{id, info.os_tid, info.name, info.pthread_id});
  last_defined_thread_ = id;
}

// EventDecoder::Output

void Writer::Range(const RangeRecord& r) {
  // Once per NVTX range: the threads, name and domain are nearly always
  // defined already, so those tests are inline and only a definition calls
  // out (writer_drain_bench).
  if (r.thread != last_defined_thread_) EnsureThread(r.thread);
  if (r.end_thread != 0 && r.end_thread != last_defined_thread_) EnsureThread(r.end_thread);
  // Runs of one name (a thread pushing one range over and over) skip the
  // bit-vector lookup; only a defined name is remembered, so an unknown id
  // is still counted every time.
  if (r.name != last_range_name_) {
    if (!StringDefined(r.name)) EnsureString(r.name);
    if (StringDefined(r.name)) last_range_name_ = r.name;
  }
  if (r.domain != 0 && !(r.domain < domains_defined_.size() && domains_defined_[r.domain])) {
    EnsureDomain(r.domain);
  }
  builder_.AddRange(r);
  Record(kRanges);
}

void Writer::Mark(const MarkRecord& r) {
  EnsureThread(r.thread);
  EnsureString(r.name);
  EnsureDomain(r.domain);
  builder_.AddMark(r);
  Record(kMarks);
}

void Writer::Launch(const LaunchRecord& r) {
  EnsureThread(r.thread);
  builder_.AddLaunch(r);
  Record(kLaunches);
}

void Writer::GraphNode(const GraphNodeSnapshotRecord& r) {
  EnsureThread(r.thread);
  builder_.AddGraphNode(r);
  Record(kGraphNodes);
}

void Writer::ThreadName(uint32_t thread, uint32_t name) {
  ThreadInfo& info = thread_info_[thread];
  if (info.defined) {
    // A thread is defined once per file; a rename after its first record is
    // counted rather than contradicting the definition.
    Count("nvtx_thread_renamed_after_use", 1);
    return;
  }
  info.name = name;
}

// RecordSink

uint32_t Writer::InternString(std::string_view text) { return GlobalStrings().Intern(text).id; }

uint32_t Writer::StreamId(uint32_t device, uint32_t context, uint64_t stream) {
  auto key = std::make_tuple(device, context, stream);
  auto it = stream_ids_.find(key);
  if (it != stream_ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(stream_ids_.size() + 1);
  stream_ids_.emplace(key, id);
  builder_.AddStream(StreamDefRecord{id, device, context, stream});
  return id;
}

uint32_t Writer::LaunchConfigId(const LaunchConfigRecord& c) {
  std::vector<uint32_t> key = {c.grid[0],
                               c.grid[1],
                               c.grid[2],
                               c.block[0],
                               c.block[1],
                               c.block[2],
                               c.static_shared_memory,
                               c.dynamic_shared_memory,
                               c.registers_per_thread};
  auto it = launch_config_ids_.find(key);
  if (it != launch_config_ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(launch_config_ids_.size() + 1);
  launch_config_ids_.emplace(std::move(key), id);
  LaunchConfigRecord def = c;
  def.id = id;
  builder_.AddLaunchConfig(def);
  return id;
}

uint32_t Writer::ThreadIdForPthread(uint64_t pthread_id) {
  auto it = pthread_ids_.find(pthread_id);
  if (it != pthread_ids_.end()) return it->second;
  uint32_t id = 0;
  // CUPTI's activity records carry pthread_self() cut to 32 bits
  // (CUpti_ActivityAPI::threadId is uint32_t): match on the low half then.
  auto same = [pthread_id](uint64_t full) {
    return pthread_id > 0xFFFFFFFFull ? full == pthread_id
                                      : static_cast<uint32_t>(full) == pthread_id;
  };
  // Live threads first: a pthread_t value is reused after a thread exits.
  for (ThreadState* t : snapshot_) {
    if (same(t->pthread_id()) && !t->exited.load(std::memory_order_relaxed)) id = t->id();
  }
  if (id == 0) {
    for (const auto& [tid, info] : thread_info_) {
      if (same(info.pthread_id)) id = tid;
    }
  }
  if (id == 0) {
    const auto& retired = pthread_id > 0xFFFFFFFFull ? retired_by_pthread_ : retired_by_pthread32_;
    auto r = retired.find(pthread_id);
    if (r != retired.end()) id = r->second;
  }
  if (id == 0) {
    id = threads_->AllocateId();
    ThreadInfo& info = thread_info_[id];
    info.pthread_id = pthread_id;
  }
  pthread_ids_[pthread_id] = id;
  EnsureThread(id);
  return id;
}

void Writer::Kernel(const KernelRecord& r) {
  EnsureString(r.name);
  builder_.AddKernel(r);
  Record(kKernels);
}
void Writer::Memcpy(const MemcpyRecord& r) {
  builder_.AddMemcpy(r);
  Record(kMemcpys);
}
void Writer::Memset(const MemsetRecord& r) {
  builder_.AddMemset(r);
  Record(kMemsets);
}
void Writer::Api(const ApiRecord& r) {
  EnsureThread(r.thread);
  EnsureString(r.name);
  builder_.AddApi(r);
  Record(kApiCalls);
}
void Writer::Sync(const SyncRecord& r) {
  builder_.AddSync(r);
  Record(kSyncs);
}
void Writer::Overhead(const OverheadRecord& r) {
  EnsureThread(r.thread);
  builder_.AddOverhead(r);
  Record(kOverheads);
}
void Writer::GraphLaunch(const GraphLaunchRecord& r) {
  builder_.AddGraphLaunch(r);
  Record(kGraphLaunches);
}
void Writer::PmSample(const PmSampleRecord& r) {
  EnsureString(r.metric);
  builder_.AddPmSample(r);
  Record(kPmSamples);
}

void Writer::Count(std::string_view counter, uint64_t delta) {
  auto it = counters_.find(counter);
  if (it == counters_.end()) it = counters_.emplace(std::string(counter), 0).first;
  it->second += delta;
}

}  // namespace tracer
