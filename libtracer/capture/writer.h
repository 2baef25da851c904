// The background writer: every flush interval (and on demand) it drains
// every thread's ring through the EventDecoder, polls the registered
// RecordSources (it is their RecordSink), defines strings/threads/domains/
// streams on first use, encodes with ChunkBuilder and appends frames to the
// file. At shutdown: final drain, ranges still open closed as UNCLOSED, and a
// footer with totals. Application threads never wait on it except in Flush
// and Stop; RequestDrain (a forked child's top-level pops) only wakes it.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "libtracer/capture/capture_window.h"
#include "libtracer/capture/event_decoder.h"
#include "libtracer/capture/record_sink.h"
#include "libtracer/capture/trace_file.h"
#include "libtracer/core/chunk_builder.h"

namespace tracer {

class ThreadRegistry;
class ThreadState;

// Counter names with this prefix are drops: the footer lists them under
// dropped_by_cause without the prefix (e.g. "dropped.cupti_dropped" ->
// "cupti_dropped"); counter_deltas keep the full name. Other counters go to
// the footer's stats.
inline constexpr std::string_view kDroppedPrefix = "dropped.";

class Writer final : public RecordSink, private EventDecoder::Output {
 public:
  Writer(ThreadRegistry* threads, uint32_t flush_interval_ms);
  ~Writer() override;

  // Writes the magic and the header frame synchronously (the file exists and
  // is valid from the start) to the first of `paths` that is not in use by
  // another process of this run (TraceFile::Open); file().path() is the one
  // chosen. False when a path is refused, or all are in use.
  bool Begin(const std::vector<std::string>& paths, const HeaderInfo& header, std::string* error);
  bool Begin(const std::string& path, const HeaderInfo& header, std::string* error) {
    return Begin(std::vector<std::string>{path}, header, error);
  }
  // Whether Begin replaces a file an earlier run left (TRACER_FORCE_OVERWRITE).
  void set_force_overwrite(bool force) { force_overwrite_ = force; }
  // Test hook: Begin on an open descriptor.
  bool BeginOnFd(int fd, const HeaderInfo& header);
  void StartThread();
  void AddSource(RecordSource* source);
  // The capture window of a named range: once its first recorded instance is
  // known, the counter capture_range_first_occurrence (its 1-based
  // occurrence) is written, so that reports number steps as the program does.
  // Called before StartThread; the window must outlive the writer thread.
  void WatchCaptureWindow(const CaptureWindow* window) { capture_window_ = window; }

  // Wakes the writer and waits until it drained what was appended before the
  // call; false on timeout.
  bool Flush(uint32_t timeout_ms);
  // Asks the writer thread for a drain soon (within about a millisecond when
  // a core is free; at most one drain per kMinRequestedGapNs), for an
  // application thread that must not wait: no lock, no write(), no
  // allocation; at most one futex wake per drain (nothing when a request is
  // already pending).
  void RequestDrain() noexcept;
  static constexpr uint64_t kMinRequestedGapNs = 1000000;
  // Asks the writer thread to fault in ring pages ahead of their producers
  // soon (ThreadRing::PrefaultAhead on every ring), without a drain: a
  // producer on its ring's first lap got near the end of what is populated.
  // Same contract as RequestDrain (no lock, no write(), no allocation, at
  // most one futex wake per pass). A writer in the middle of a drain
  // populates within kDrainEventsPerPopulateCheck events.
  void RequestPopulate() noexcept;
  static constexpr size_t kDrainEventsPerPopulateCheck = 4096;
  // Final drain and footer, then the file is closed. False when the writer
  // thread did not finish within timeout_ms (it is then abandoned).
  bool Stop(uint32_t timeout_ms);

  // One drain pass (the writer thread's body; tests call it directly). When
  // it throws (out of memory), the frame being built may be inconsistent:
  // the file is closed where it is (complete up to its last frame, no
  // footer), later passes write nothing, and the exception propagates.
  void DrainOnce(bool final);

  const TraceFile& file() const { return file_; }

  // RecordSink (called on the writer thread, inside DrainOnce).
  uint32_t InternString(std::string_view text) override;
  uint32_t StreamId(uint32_t device, uint32_t context, uint64_t stream) override;
  uint32_t LaunchConfigId(const LaunchConfigRecord& config) override;
  uint32_t ThreadIdForPthread(uint64_t pthread_id) override;
  void Kernel(const KernelRecord& r) override;
  void Memcpy(const MemcpyRecord& r) override;
  void Memset(const MemsetRecord& r) override;
  void Api(const ApiRecord& r) override;
  void Sync(const SyncRecord& r) override;
  void Overhead(const OverheadRecord& r) override;
  void GraphLaunch(const GraphLaunchRecord& r) override;
  void PmSample(const PmSampleRecord& r) override;
  void Count(std::string_view counter, uint64_t delta) override;

 private:
  struct ThreadInfo {
    uint64_t os_tid = 0;
    uint64_t pthread_id = 0;
    uint32_t name = 0;
    bool defined = false;
    bool had_events = false;
    // Its ring's last drain (SteadyNs) and whether the rate since the one
    // before makes it a busy ring, whose pages it keeps (ThreadRing::Drain).
    uint64_t last_drain_ns = 0;
    bool keep_pages = false;
  };
  // A thread recording faster than this (events per second; a range is two)
  // keeps its ring's pages: faulting them in again every lap costs the
  // writer about 7 ns an event, a third of what it can spend on a thread
  // pushing flat out. Below it (2 M ranges/s is twice the worst realistic
  // rate of bench/capture/burst_bench), rings hand read pages back and their
  // resident memory follows what they hold.
  static constexpr uint64_t kKeepPagesEventsPerSecond = 8'000'000;
  // A drain that read at least this many events from one ring makes the
  // writer drain again after kBusyPollNs rather than at the flush interval
  // or when a ring passes its fill mark: a thread recording fast is drained
  // in small batches that stay in cache, and the writer, waking often,
  // gets a core promptly on a loaded machine.
  static constexpr size_t kBusyDrainEvents = 4096;
  static constexpr uint64_t kBusyPollNs = 1'000'000;
  // ... and keeps draining every kBusyPollNs until a pass reads fewer than
  // this from every ring: a thread still recording a range every few
  // microseconds keeps its ring nearly empty, so a writer left unscheduled
  // for a while on a loaded machine has the whole ring as slack.
  static constexpr size_t kQuietDrainEvents = 256;
  // A pass that read at least this many events from one ring (the thread
  // recorded for a few hundred microseconds since the last) is followed by
  // the next at once: while a thread records flat out the writer stays
  // runnable, so on a loaded machine it keeps its share of a core instead
  // of queueing for one after every sleep.
  static constexpr size_t kRedrainEvents = 16384;

  // EventDecoder::Output
  void Range(const RangeRecord& r) override;
  void Mark(const MarkRecord& r) override;
  void Launch(const LaunchRecord& r) override;
  void GraphNode(const GraphNodeSnapshotRecord& r) override;
  void ThreadName(uint32_t thread, uint32_t name) override;

  void Loop();
  // The writer thread's guard fallback: Flush and Stop stop waiting for it.
  void MarkFinished() noexcept;
  void Wake() noexcept;
  // Waits (futex) until wake_seq_ differs from seen, or timeout_ns.
  void WaitForWake(uint32_t seen, uint64_t timeout_ns) noexcept;
  void EnsureString(uint32_t id);
  bool StringDefined(uint32_t id) const {
    return id < strings_defined_.size() && strings_defined_[id];
  }
  void EnsureThread(uint32_t id);
  void EnsureDomain(uint32_t id);
  enum Kind {
    kRanges,
    kMarks,
    kLaunches,
    kGraphNodes,
    kKernels,
    kMemcpys,
    kMemsets,
    kApiCalls,
    kSyncs,
    kOverheads,
    kGraphLaunches,
    kPmSamples,
    kNumKinds
  };
  void Record(Kind kind) { ++records_by_kind_[kind]; }
  void MaybeCutFrame();
  void EmitFrame();
  // Drains t's ring through the decoder, then its counters.
  void DrainThread(ThreadState* t);
  // ThreadRing::PrefaultAhead on t's ring (the writer thread, under
  // drain_mu_); says once, at debug level, when the kernel cannot populate.
  void PrefaultRing(ThreadState* t) noexcept;
  // PrefaultRing on each of `rings`, after clearing populate_requested_.
  void PopulateRings(const std::vector<ThreadState*>& rings) noexcept;
  // A pass of PopulateRings over the live threads, outside a drain.
  void PopulatePass();
  void CollectThreadCounters(ThreadState* t);
  // The one line that says how many NVTX events full rings dropped, why, and
  // the `tracer run` option that avoids it (at the first drop, and at exit).
  std::string RingFullLine(uint64_t dropped, bool at_exit) const;
  // Threads that exited and were drained: their definitions are settled and
  // their per-thread memory released, then the registry reuses their states.
  void RetireThreads();
  bool IsRetired(uint32_t id) const { return id < retired_ids_.size() && retired_ids_[id]; }
  void EmitCounterDeltas();
  // Counts of GlobalMisuse() (misuse_counters.h) since the last drain.
  void CollectMisuseCounters();
  void WriteFooter(uint64_t end_ns, uint64_t unclosed);

  ThreadRegistry* threads_;
  const uint32_t flush_interval_ms_;
  TraceFile file_;
  bool force_overwrite_ = false;  // set_force_overwrite
  ChunkBuilder builder_;
  EventDecoder decoder_;
  uint64_t tick_map_generation_ = 0;  // of decoder_.tick_map() (RefreshTickMap)
  std::string frame_;

  std::mutex drain_mu_;  // one DrainOnce at a time
  std::vector<ThreadState*> snapshot_, retired_;
  std::vector<RecordSource*> sources_;
  std::mutex sources_mu_;

  std::vector<bool> strings_defined_;
  uint32_t last_range_name_ = 0;  // defined (Range's shortcut)
  std::vector<bool> domains_defined_;
  std::unordered_map<uint32_t, ThreadInfo> thread_info_;
  std::unordered_map<uint64_t, uint32_t> pthread_ids_;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> stream_ids_;
  std::map<std::vector<uint32_t>, uint32_t> launch_config_ids_;
  size_t categories_emitted_ = 0;
  std::vector<CategoryDefRecord> category_scratch_;

  // Counters: totals so far and the part already written as deltas.
  std::map<std::string, uint64_t, std::less<>> counters_;
  std::map<std::string, uint64_t, std::less<>> counters_written_;
  std::unordered_map<ThreadState*, std::array<uint64_t, 4>> thread_counter_seen_;
  // Threads retired (one bit per thread ever seen): never defined again.
  std::vector<bool> retired_ids_;
  // pthread_t (full and low 32 bits) -> the last retired thread that had it,
  // for CUPTI records that arrive after their thread exited; bounded by the
  // distinct pthread_t values, which the C library reuses.
  std::unordered_map<uint64_t, uint32_t> retired_by_pthread_, retired_by_pthread32_;
  uint64_t records_by_kind_[kNumKinds] = {};
  uint64_t misuse_seen_[3] = {};
  const CaptureWindow* capture_window_ = nullptr;
  bool capture_start_counted_ = false;
  uint32_t last_defined_thread_ = 0;
  uint64_t busy_ns_ = 0;
  size_t busiest_ring_ = 0;  // most events the last pass drained from one ring
  bool polling_ = false;     // draining every kBusyPollNs (kBusyDrainEvents)
  // Some full ring was smaller than TRACER_BUFFER_SIZE: its thread started
  // when the rings had used up TRACER_BUFFER_LIMIT (ring_budget.h).
  bool ring_full_past_limit_ = false;
  bool ring_full_logged_ = false;
  bool finished_writing_ = false;

  // Thread control.
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  // The writer sleeps on this futex word (not a condition variable, whose
  // signal takes an internal lock): Wake bumps it and wakes the thread.
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<bool> drain_requested_{false};
  std::atomic<bool> populate_requested_{false};
  std::vector<ThreadState*> populate_snapshot_;  // PopulatePass
  bool populate_unsupported_logged_ = false;
  uint64_t last_requested_drain_ns_ = 0;  // writer thread only (CLOCK_MONOTONIC)
  uint64_t flush_requested_ = 0;
  uint64_t flush_done_ = 0;
  bool stop_requested_ = false;
  bool finished_ = false;
};

}  // namespace tracer
