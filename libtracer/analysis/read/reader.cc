#include "libtracer/analysis/read/reader.h"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "libtracer/analysis/read/frame_scanner.h"
#include "libtracer/analysis/read/record_count_hint.h"
#include "libtracer/core/chunk_builder.h"
#include "proto/trace.pb.h"

namespace tracer::analysis {
namespace {

// Thread, stream and launch-config ids index ProcessTrace's dense vectors.
// The writer hands them out from 1 upwards, so small ids keep their value;
// a larger one (a broken or hostile writer: one id of 2^24 - 1 cost 1.6 GB)
// gets the next free slot from kDirectIds on, in order of first use. The
// vectors then grow with the number of distinct ids, never with their
// values, and every reference to an id maps the same way: nothing is lost,
// so nothing needs saying.
// The capture's range stack holds this many levels (ThreadState::kMaxDepth);
// deeper pushes are counted, not recorded. A push/pop range recorded deeper
// (a writer before that rule, or a crafted file: 100 k levels made the
// report count 199,744 events at depths up to 32,510) is left out the same
// way and counted; GPU work launched inside it then counts toward its
// innermost kept ancestor (the range open on its thread at launch time).
constexpr uint32_t kMaxRecordedDepth = 256;

class CompactIds {
 public:
  static constexpr uint32_t kDirectIds = 4096;
  uint32_t Map(uint64_t file_id) {
    if (file_id < kDirectIds) return static_cast<uint32_t>(file_id);
    auto [it, inserted] =
        remapped_.emplace(file_id, kDirectIds + static_cast<uint32_t>(remapped_.size()));
    return it->second;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> remapped_;
};

PayloadValue ToPayload(const proto::Payload& p) {
  PayloadValue v;
  switch (p.value_case()) {
    case proto::Payload::kU64:
      v.type = PayloadValue::Type::kU64;
      v.u64 = p.u64();
      break;
    case proto::Payload::kI64:
      v.type = PayloadValue::Type::kI64;
      v.i64 = p.i64();
      break;
    case proto::Payload::kF64:
      v.type = PayloadValue::Type::kF64;
      v.f64 = p.f64();
      break;
    default:
      break;
  }
  return v;
}

CounterList ToCounters(const google::protobuf::RepeatedPtrField<proto::Counter>& cs) {
  CounterList out;
  out.reserve(static_cast<size_t>(cs.size()));
  for (const auto& c : cs) out.emplace_back(c.name(), c.value());
  return out;
}

// Accessor for one column of a batch: missing (empty) columns read as zeros.
template <typename Repeated>
uint64_t At(const Repeated& col, int i) {
  return i < col.size() ? static_cast<uint64_t>(col.Get(i)) : 0;
}

// Decodes one file into a ProcessTrace. String ids stay file-local until
// Finish() remaps them, so a string defined after its first use (a writer
// bug) still resolves.
class FileDecoder {
 public:
  FileDecoder(ProcessTrace* p, StringTable* strings) : p_(p), strings_(strings) {}

  void Add(const proto::Chunk& c) {
    if (c.has_header()) ReadHeader(c.header());
    for (const auto& s : c.strings()) {
      if (s.id() == 0) continue;
      const uint32_t global = strings_->Intern(s.value());
      if (s.id() < kDenseStrings) {
        // The writer hands string ids out from 1 upwards: a slot per id.
        if (s.id() >= dense_strings_.size()) dense_strings_.resize(s.id() + 1, kNoString);
        dense_strings_[s.id()] = global;
      } else {
        file_strings_[s.id()] = global;
      }
    }
    for (const auto& t : c.threads()) {
      ThreadInfo& ti = Slot(p_->threads, thread_ids_.Map(t.id()));
      ti.defined = true;
      ti.os_tid = t.os_tid();
      ti.pthread_id = t.pthread_id();
      ti.name = t.name();
    }
    for (const auto& s : c.streams()) {
      StreamInfo& si = Slot(p_->streams, stream_ids_.Map(s.id()));
      si.defined = true;
      si.device = s.device();
      si.context = s.context();
      si.stream = s.stream();
    }
    for (const auto& l : c.launch_configs()) {
      const uint32_t id = config_ids_.Map(l.id());
      LaunchConfigRecord& r = Slot(p_->launch_configs, id);
      r.id = id;
      r.grid[0] = l.grid_x();
      r.grid[1] = l.grid_y();
      r.grid[2] = l.grid_z();
      r.block[0] = l.block_x();
      r.block[1] = l.block_y();
      r.block[2] = l.block_z();
      r.static_shared_memory = l.static_shared_memory();
      r.dynamic_shared_memory = l.dynamic_shared_memory();
      r.registers_per_thread = l.registers_per_thread();
    }
    for (const auto& d : c.domains()) p_->domain_names[d.id()] = d.name();
    for (const auto& k : c.categories()) p_->category_names[{k.domain(), k.category()}] = k.name();

    for (const auto& r : c.ranges()) {
      if (r.kind() != proto::RANGE_START_END && r.depth() >= kMaxRecordedDepth) {
        ++too_deep_;
        continue;
      }
      RangeRecord x;
      x.id = r.id();
      x.parent_id = r.parent_id();
      x.thread = thread_ids_.Map(r.thread());
      x.name = r.name();
      x.domain = r.domain();
      x.category = r.category();
      x.start_ns = r.start_ns();
      x.end_ns = r.end_ns() < r.start_ns() ? r.start_ns() : r.end_ns();
      x.kind = r.kind() == proto::RANGE_START_END ? RangeKind::kStartEnd : RangeKind::kPushPop;
      x.depth = r.depth();
      x.end_thread = thread_ids_.Map(r.end_thread());
      x.flags = r.flags();
      x.color = r.color();
      if (r.has_payload()) x.payload = ToPayload(r.payload());
      p_->ranges.push_back(x);
    }
    for (const auto& m : c.marks()) {
      MarkRecord x;
      x.time_ns = m.time_ns();
      x.thread = thread_ids_.Map(m.thread());
      x.name = m.name();
      x.domain = m.domain();
      x.category = m.category();
      x.color = m.color();
      if (m.has_payload()) x.payload = ToPayload(m.payload());
      p_->marks.push_back(x);
    }
    // Version 2: the same records as column batches (after any version-1
    // rows, as trace.proto orders them).
    if (c.has_range_batch()) ReadRangeBatch(c.range_batch());
    if (c.has_mark_batch()) ReadMarkBatch(c.mark_batch());
    if (c.has_kernels()) ReadKernels(c.kernels());
    if (c.has_memcpys()) ReadMemcpys(c.memcpys());
    if (c.has_memsets()) ReadMemsets(c.memsets());
    if (c.has_api_calls()) ReadApis(c.api_calls());
    if (c.has_launches()) ReadLaunches(c.launches());
    for (const auto& s : c.synchronizations()) {
      p_->syncs.push_back({s.start_ns(), std::max(s.start_ns(), s.end_ns()), s.type(),
                           stream_ids_.Map(s.stream()), s.correlation_id(), s.context(),
                           s.event()});
    }
    for (const auto& o : c.overheads()) {
      p_->overheads.push_back({o.start_ns(), std::max(o.start_ns(), o.end_ns()), o.kind(),
                               thread_ids_.Map(o.thread()), o.correlation_id()});
    }
    for (const auto& g : c.graph_nodes()) {
      p_->graph_nodes.push_back({g.graph_id(), g.graph_node_id(), g.range_id(),
                                 thread_ids_.Map(g.thread()), g.time_ns()});
    }
    for (const auto& g : c.graph_launches()) {
      p_->graph_launches.push_back({g.start_ns(), std::max(g.start_ns(), g.end_ns()), g.graph_id(),
                                    stream_ids_.Map(g.stream()), g.correlation_id()});
    }
    for (const auto& s : c.pm_samples()) {
      p_->pm_samples.push_back(
          {s.start_ns(), std::max(s.start_ns(), s.end_ns()), s.device(), s.metric(), s.value()});
    }
    for (const auto& d : c.counter_deltas()) p_->counters[d.name()] += d.value();
    if (c.has_footer()) {
      FooterInfo f;
      f.session_end_trace_ns = c.footer().session_end_trace_ns();
      f.records_by_kind = ToCounters(c.footer().records_by_kind());
      f.dropped_by_cause = ToCounters(c.footer().dropped_by_cause());
      f.overhead_ns = c.footer().overhead_ns();
      f.stats = ToCounters(c.footer().stats());
      p_->footer = std::move(f);
    }
  }

  // Remaps every string field to the global table. Returns how many
  // references named an undefined string (they become "").
  uint64_t Finish() {
    MapRecordNames();
    MapDefinitionNames();
    return undefined_;
  }
  // Streaming: the records decoded so far (one frame's) get global string ids
  // now, so a string must be defined before its first use (the writer always
  // does so).
  void MapRecordNames() {
    for (auto& r : p_->ranges) r.name = Map(r.name);
    for (auto& m : p_->marks) m.name = Map(m.name);
    p_->kernels.MapNames([&](uint32_t name) { return Map(name); });
    for (auto& a : p_->api_calls) a.name = Map(a.name);
    for (auto& s : p_->pm_samples) s.metric = Map(s.metric);
  }
  void MapDefinitionNames() {
    for (auto& t : p_->threads) t.name = Map(t.name);
    for (auto& [id, name] : p_->domain_names) name = Map(name);
    for (auto& [key, name] : p_->category_names) name = Map(name);
  }
  uint64_t undefined() const { return undefined_; }

  uint64_t ragged_batches() const { return ragged_; }
  uint64_t too_deep() const { return too_deep_; }

 private:
  template <typename T>
  static T& Slot(std::vector<T>& v, uint32_t id) {
    if (v.size() <= id) v.resize(id + 1);
    return v[id];
  }
  uint32_t Map(uint32_t file_id) {
    if (file_id == 0) return 0;
    if (file_id < dense_strings_.size() && dense_strings_[file_id] != kNoString) {
      return dense_strings_[file_id];
    }
    if (file_id < kDenseStrings) {
      ++undefined_;
      return 0;
    }
    auto it = file_strings_.find(file_id);
    if (it != file_strings_.end()) return it->second;
    ++undefined_;
    return 0;
  }

  // Number of rows of a batch: every non-empty column must have the same
  // length; a ragged batch reads missing cells as 0 and is counted.
  template <typename... Cols>
  int Rows(const Cols&... cols) {
    int n = 0;
    ((n = std::max(n, cols.size())), ...);
    bool ragged = false;
    ((ragged |= (cols.size() != 0 && cols.size() != n)), ...);
    if (ragged) ++ragged_;
    return n;
  }

  void ReadHeader(const proto::Header& h) {
    HeaderInfo& x = p_->header;
    x.format_version = h.format_version();
    x.tracer_version = h.tracer_version();
    x.host = h.host();
    x.pid = h.pid();
    x.rank = h.rank();
    x.clock_description = h.clock().description();
    x.session_start_wall_ns = h.session_start_wall_ns();
    x.session_start_trace_ns = h.session_start_trace_ns();
    x.config.clear();
    for (const auto& kv : h.config()) x.config.emplace_back(kv.key(), kv.value());
    x.command_line.assign(h.command_line().begin(), h.command_line().end());
    x.parent_pid = h.parent_pid();
    x.source = h.source().empty() ? "tracer" : h.source();
    // Absent in files written before these fields existed: unknown.
    x.world_size = std::max(h.world_size(), 0);
    x.local_rank = h.has_local_rank() && h.local_rank() >= 0 ? h.local_rank() : -1;
    x.device = h.device();
    x.cuda_visible_devices = h.cuda_visible_devices();
  }

  static PayloadValue BatchPayload(uint64_t kind, uint64_t bits) {
    PayloadValue v;
    switch (kind) {
      case proto::PAYLOAD_U64:
        v.type = PayloadValue::Type::kU64;
        v.u64 = bits;
        break;
      case proto::PAYLOAD_I64:
        v.type = PayloadValue::Type::kI64;
        v.i64 = static_cast<int64_t>(bits);
        break;
      case proto::PAYLOAD_F64:
        v.type = PayloadValue::Type::kF64;
        std::memcpy(&v.f64, &bits, 8);
        break;
      default:  // none, or a kind this reader does not know
        break;
    }
    return v;
  }

  // Deltas per thread (trace.proto RangeBatch): keyed by the thread value as
  // written, before CompactIds maps it.
  void ReadRangeBatch(const proto::RangeBatch& b) {
    const int n = Rows(b.thread(), b.start_delta(), b.duration(), b.id_delta(), b.parent_offset(),
                       b.name(), b.domain(), b.category(), b.kind(), b.depth(),
                       b.end_thread_delta(), b.flags(), b.color(), b.payload_kind(), b.payload());
    previous_.NewBatch();
    const size_t base = p_->ranges.size();
    p_->ranges.reserve(base + static_cast<size_t>(n));
    // Rows whose parent is themselves (parent_offset 0 with a parent).
    std::vector<uint32_t> self_parent(b.self_parent_rows().begin(), b.self_parent_rows().end());
    std::sort(self_parent.begin(), self_parent.end());
    size_t next_self = 0;
    for (int i = 0; i < n; ++i) {
      const uint64_t thread = At(b.thread(), i);
      uint64_t* previous = previous_.Of(thread);
      // sint64 columns: the parser undoes the zigzag.
      const uint64_t start = previous[0] + At(b.start_delta(), i);
      const uint64_t id = previous[1] + At(b.id_delta(), i);
      previous[0] = start;
      previous[1] = id;
      const auto row = static_cast<uint32_t>(i);
      while (next_self < self_parent.size() && self_parent[next_self] < row) ++next_self;
      const bool self = next_self < self_parent.size() && self_parent[next_self] == row;
      const uint32_t kind = static_cast<uint32_t>(At(b.kind(), i));
      const uint32_t depth = static_cast<uint32_t>(At(b.depth(), i));
      if (kind != proto::RANGE_START_END && depth >= kMaxRecordedDepth) {
        ++too_deep_;
        continue;
      }
      RangeRecord x;
      x.id = id;
      const uint64_t parent_offset = At(b.parent_offset(), i);
      x.parent_id = self ? id : parent_offset == 0 ? 0 : id - parent_offset;
      x.thread = thread_ids_.Map(thread);
      x.name = static_cast<uint32_t>(At(b.name(), i));
      x.domain = static_cast<uint32_t>(At(b.domain(), i));
      x.category = static_cast<uint32_t>(At(b.category(), i));
      x.start_ns = start;
      // A duration past 2^64 - 1 - start wraps; the old form clamped an end
      // before the start to the start, and so does this.
      const uint64_t end = start + At(b.duration(), i);
      x.end_ns = end < start ? start : end;
      x.kind = kind == proto::RANGE_START_END ? RangeKind::kStartEnd : RangeKind::kPushPop;
      x.depth = depth;
      x.end_thread = thread_ids_.Map(static_cast<uint32_t>(
          static_cast<int64_t>(thread) + static_cast<int64_t>(At(b.end_thread_delta(), i))));
      x.flags = static_cast<uint32_t>(At(b.flags(), i));
      x.color = static_cast<uint32_t>(At(b.color(), i));
      x.payload = BatchPayload(At(b.payload_kind(), i), At(b.payload(), i));
      p_->ranges.push_back(x);
    }
  }

  void ReadMarkBatch(const proto::MarkBatch& b) {
    const int n = Rows(b.thread(), b.time_delta(), b.name(), b.domain(), b.category(), b.color(),
                       b.payload_kind(), b.payload());
    previous_.NewBatch();
    const size_t base = p_->marks.size();
    p_->marks.resize(base + static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      MarkRecord& m = p_->marks[base + static_cast<size_t>(i)];
      const uint64_t thread = At(b.thread(), i);
      uint64_t* previous = previous_.Of(thread);
      previous[0] += At(b.time_delta(), i);
      m.time_ns = previous[0];
      m.thread = thread_ids_.Map(thread);
      m.name = static_cast<uint32_t>(At(b.name(), i));
      m.domain = static_cast<uint32_t>(At(b.domain(), i));
      m.category = static_cast<uint32_t>(At(b.category(), i));
      m.color = static_cast<uint32_t>(At(b.color(), i));
      m.payload = BatchPayload(At(b.payload_kind(), i), At(b.payload(), i));
    }
  }

  void ReadKernels(const proto::KernelBatch& b) {
    const int n = Rows(b.start_delta(), b.duration(), b.name(), b.stream(), b.correlation_delta(),
                       b.launch_config());
    const size_t base = p_->kernels.size();
    uint64_t start = 0, corr = 0;
    for (int i = 0; i < n; ++i) {
      KernelRecord k;
      start += At(b.start_delta(), i);
      corr += At(b.correlation_delta(), i);
      k.start_ns = start;
      k.end_ns = start + At(b.duration(), i);
      k.name = static_cast<uint32_t>(At(b.name(), i));
      k.stream = stream_ids_.Map(At(b.stream(), i));
      k.correlation_id = corr;
      k.launch_config = config_ids_.Map(At(b.launch_config(), i));
      p_->kernels.push_back(k);
    }
    for (const auto& g : b.graph()) {
      if (g.row() >= static_cast<uint32_t>(n)) {
        ++ragged_;
        continue;
      }
      KernelRecord k = p_->kernels[base + g.row()];
      k.graph_id = g.graph_id();
      k.graph_node_id = g.graph_node_id();
      p_->kernels.Set(base + g.row(), k);
    }
  }

  void ReadMemcpys(const proto::MemcpyBatch& b) {
    const int n = Rows(b.start_delta(), b.duration(), b.bytes(), b.copy_kind(), b.stream(),
                       b.correlation_delta(), b.flags());
    uint64_t start = 0, corr = 0;
    for (int i = 0; i < n; ++i) {
      MemcpyRecord m;
      start += At(b.start_delta(), i);
      corr += At(b.correlation_delta(), i);
      m.start_ns = start;
      m.end_ns = start + At(b.duration(), i);
      m.bytes = At(b.bytes(), i);
      m.copy_kind = static_cast<uint32_t>(At(b.copy_kind(), i));
      m.stream = stream_ids_.Map(At(b.stream(), i));
      m.correlation_id = corr;
      m.flags = static_cast<uint32_t>(At(b.flags(), i));
      p_->memcpys.push_back(m);
    }
    ReadGraphRefs(b.graph(), n, &p_->memcpys);
  }

  // Sparse graph ids of the last n rows of records.
  template <typename Refs, typename Records>
  void ReadGraphRefs(const Refs& refs, int n, Records* records) {
    const size_t base = records->size() - static_cast<size_t>(n);
    for (const auto& g : refs) {
      if (g.row() >= static_cast<uint32_t>(n)) {
        ++ragged_;
        continue;
      }
      auto& r = (*records)[base + g.row()];
      r.graph_id = g.graph_id();
      r.graph_node_id = g.graph_node_id();
    }
  }

  void ReadMemsets(const proto::MemsetBatch& b) {
    const int n = Rows(b.start_delta(), b.duration(), b.bytes(), b.value(), b.stream(),
                       b.correlation_delta(), b.flags());
    uint64_t start = 0, corr = 0;
    for (int i = 0; i < n; ++i) {
      MemsetRecord m;
      start += At(b.start_delta(), i);
      corr += At(b.correlation_delta(), i);
      m.start_ns = start;
      m.end_ns = start + At(b.duration(), i);
      m.bytes = At(b.bytes(), i);
      m.value = static_cast<uint32_t>(At(b.value(), i));
      m.stream = stream_ids_.Map(At(b.stream(), i));
      m.correlation_id = corr;
      m.flags = static_cast<uint32_t>(At(b.flags(), i));
      p_->memsets.push_back(m);
    }
    ReadGraphRefs(b.graph(), n, &p_->memsets);
  }

  void ReadApis(const proto::ApiBatch& b) {
    const int n = Rows(b.start_delta(), b.duration(), b.domain(), b.cbid(), b.thread(),
                       b.correlation_delta(), b.return_value(), b.name());
    const size_t base = p_->api_calls.size();
    p_->api_calls.resize(base + static_cast<size_t>(n));
    uint64_t start = 0, corr = 0;
    for (int i = 0; i < n; ++i) {
      ApiRecord& a = p_->api_calls[base + static_cast<size_t>(i)];
      start += At(b.start_delta(), i);
      corr += At(b.correlation_delta(), i);
      a.start_ns = start;
      a.end_ns = start + At(b.duration(), i);
      a.domain = At(b.domain(), i) == 1 ? ApiDomain::kDriver : ApiDomain::kRuntime;
      a.cbid = static_cast<uint32_t>(At(b.cbid(), i));
      a.thread = thread_ids_.Map(At(b.thread(), i));
      a.correlation_id = corr;
      a.return_value = static_cast<uint32_t>(At(b.return_value(), i));
      a.name = static_cast<uint32_t>(At(b.name(), i));
    }
  }

  void ReadLaunches(const proto::LaunchBatch& b) {
    const int n =
        Rows(b.correlation_delta(), b.time_delta(), b.thread(), b.range_id(), b.cbid(), b.domain());
    uint64_t time = 0, corr = 0;
    for (int i = 0; i < n; ++i) {
      LaunchRecord l;
      corr += At(b.correlation_delta(), i);
      time += At(b.time_delta(), i);
      l.correlation_id = corr;
      l.time_ns = time;
      l.thread = thread_ids_.Map(At(b.thread(), i));
      l.range_id = At(b.range_id(), i);
      l.cbid = static_cast<uint32_t>(At(b.cbid(), i));
      l.domain = At(b.domain(), i) == 1 ? ApiDomain::kDriver : ApiDomain::kRuntime;
      p_->launches.push_back(l);
    }
  }

  ProcessTrace* p_;
  StringTable* strings_;
  // File string id -> global id: small ids (all of them, from the tracer's
  // writer) by slot, looked up per record; the rest in the map.
  static constexpr uint32_t kDenseStrings = 1u << 20;
  static constexpr uint32_t kNoString = UINT32_MAX;
  std::vector<uint32_t> dense_strings_;
  std::unordered_map<uint32_t, uint32_t> file_strings_;
  CompactIds thread_ids_, stream_ids_, config_ids_;
  PerThreadPrevious previous_;
  uint64_t undefined_ = 0, ragged_ = 0, too_deep_ = 0;
};

}  // namespace

bool LooksLikeTraceStream(std::string_view first_bytes) {
  return first_bytes.size() >= sizeof(kTraceMagic) &&
         std::memcmp(first_bytes.data(), kTraceMagic, sizeof(kTraceMagic)) == 0;
}

namespace {

// The end of a frame read, inline or ahead: the last progress call and the
// warnings for frames that did not parse and for a damaged tail.
void FinishFrames(FrameScanner* scanner, FrameScanner::Result result, uint64_t unparsed,
                  uint64_t first_unparsed_at, const ReadProgress& progress,
                  std::vector<std::string>* warnings) {
  if (progress) progress(scanner->size(), scanner->size());
  if (unparsed > 0) {
    warnings->push_back(scanner->display_name() + ": " + std::to_string(unparsed) +
                        " frame(s) whose payload does not parse skipped (the first at byte " +
                        std::to_string(first_unparsed_at) + "); the frames around them are read");
  }
  if (result == FrameScanner::Result::kDamaged) warnings->push_back(scanner->DamageLine());
}

// The frame loop shared by the in-memory and the streaming reader: decodes
// every intact frame, calls after_frame after each, and turns damage and
// decoding problems into one warning line each.
void DecodeFrames(FrameScanner* scanner, FileDecoder* decoder,
                  const std::function<void()>& after_frame, std::vector<std::string>* warnings,
                  const ReadProgress& progress) {
#if GOOGLE_PROTOBUF_VERSION < 4022000
  // A payload that does not parse (invalid UTF-8 in a string field, say)
  // makes libprotobuf print its own "[libprotobuf ERROR ...]" line; the
  // warning below already says what was lost, once.
  google::protobuf::LogSilencer quiet;
#endif
  proto::Chunk chunk;
  std::string_view payload;
  FrameScanner::Result result;
  uint64_t unparsed = 0, first_unparsed_at = 0;
  while ((result = scanner->Next(&payload)) == FrameScanner::Result::kFrame) {
    chunk.Clear();
    if (!chunk.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      // Its length and CRC are right, so the framing after it is sound:
      // only this frame is lost, not the rest of the file.
      if (unparsed++ == 0) first_unparsed_at = scanner->offset() - 8 - payload.size();
      continue;
    }
    decoder->Add(chunk);
    if (after_frame) after_frame();
    // Every 64 frames: a few hundred calls for a multi-GB file.
    if (progress && (scanner->frames() & 63) == 0) progress(scanner->offset(), scanner->size());
  }
  FinishFrames(scanner, result, unparsed, first_unparsed_at, progress, warnings);
}

// DecodeFrames for the streaming reader: the frames are read, checked and
// parsed on a thread of its own, at most kFramesAhead ahead of the caller,
// which decodes them (string ids, columns) and hands out each one's records
// (after_frame). Reading and parsing are about a third of the bounded
// report's work on a tracer stream; the decoding interns strings into the
// report's table, so it stays on the caller's thread. Same output and
// warnings as DecodeFrames.
void DecodeFramesAhead(FrameScanner* scanner, FileDecoder* decoder,
                       const std::function<void()>& after_frame, std::vector<std::string>* warnings,
                       const ReadProgress& progress) {
  constexpr size_t kFramesAhead = 2;
  struct Parsed {
    std::unique_ptr<proto::Chunk> chunk;
    uint64_t offset = 0, frames = 0;  // the scanner's, after this frame
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Parsed> full;                          // parsed, in file order
  std::vector<std::unique_ptr<proto::Chunk>> free;  // to parse the next ones into
  bool done = false, stop = false;
  uint64_t unparsed = 0, first_unparsed_at = 0;
  FrameScanner::Result result = FrameScanner::Result::kEnd;
  // What the reading thread threw (bad_alloc on a huge frame): rethrown on
  // the caller's thread, as the inline read would have thrown it there.
  std::exception_ptr error;
  for (size_t i = 0; i < kFramesAhead + 1; ++i) free.push_back(std::make_unique<proto::Chunk>());
  std::thread reader;
  try {
    reader = std::thread([&] {
#if GOOGLE_PROTOBUF_VERSION < 4022000
      google::protobuf::LogSilencer quiet;
#endif
      std::string_view payload;
      FrameScanner::Result r = FrameScanner::Result::kEnd;
      std::unique_ptr<proto::Chunk> chunk;
      try {
        while (true) {
          if (!chunk) {
            std::unique_lock<std::mutex> lock(mu);
            cv.wait(lock, [&] { return stop || !free.empty(); });
            if (stop) break;
            chunk = std::move(free.back());
            free.pop_back();
          }
          if ((r = scanner->Next(&payload)) != FrameScanner::Result::kFrame) break;
          chunk->Clear();
          if (!chunk->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
            if (unparsed++ == 0) first_unparsed_at = scanner->offset() - 8 - payload.size();
            continue;
          }
          std::lock_guard<std::mutex> lock(mu);
          full.push_back({std::move(chunk), scanner->offset(), scanner->frames()});
          cv.notify_all();
        }
      } catch (...) {
        error = std::current_exception();  // read under the lock, after done
      }
      std::lock_guard<std::mutex> lock(mu);
      result = stop ? FrameScanner::Result::kEnd : r;
      done = true;
      cv.notify_all();
    });
  } catch (const std::system_error&) {
    // No thread to be had: the same read on this one.
    DecodeFrames(scanner, decoder, after_frame, warnings, progress);
    return;
  }
  // Stops and joins the thread however this function is left (the
  // callback may throw).
  struct Joiner {
    std::thread* t;
    std::mutex* mu;
    std::condition_variable* cv;
    bool* stop;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(*mu);
        *stop = true;
      }
      cv->notify_all();
      t->join();
    }
  } joiner{&reader, &mu, &cv, &stop};
  while (true) {
    Parsed p;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done || !full.empty(); });
      if (full.empty()) break;
      p = std::move(full.front());
      full.pop_front();
    }
    decoder->Add(*p.chunk);
    if (after_frame) after_frame();
    if (progress && (p.frames & 63) == 0) progress(p.offset, scanner->size());
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(std::move(p.chunk));
    cv.notify_all();
  }
  // The reader is done (seen under the lock): what it found is read here.
  if (error) std::rethrow_exception(error);
  FinishFrames(scanner, result, unparsed, first_unparsed_at, progress, warnings);
}

void AddDecoderWarnings(const std::string& name, const FileDecoder& decoder,
                        std::vector<std::string>* warnings) {
  if (decoder.too_deep() > 0) {
    warnings->push_back(name + ": " + std::to_string(decoder.too_deep()) +
                        " range(s) recorded deeper than " + std::to_string(kMaxRecordedDepth) +
                        " levels (the capture's nesting limit) left out; GPU work launched "
                        "inside them counts toward their innermost kept ancestor");
  }

  if (decoder.undefined() > 0) {
    warnings->push_back(name + ": " + std::to_string(decoder.undefined()) +
                        " reference(s) to undefined string ids shown as empty names");
  }
  if (decoder.ragged_batches() > 0) {
    warnings->push_back(name + ": " + std::to_string(decoder.ragged_batches()) +
                        " column batch(es) with uneven columns (missing cells read as 0)");
  }
}

}  // namespace

bool ReadTraceBytes(std::string_view bytes, const std::string& display_name, Trace* trace,
                    std::string* error, const ReadProgress& progress) {
  FrameScanner scanner(bytes, display_name);
  if (!scanner.Open(error)) return false;
  ProcessTrace process;
  process.source_file = display_name;
  FileDecoder decoder(&process, &trace->strings);
  // Size the record vectors once (see record_count_hint.h).
  RecordCountHint hint;
  for (size_t at = sizeof(kTraceMagic); bytes.size() - at >= 8;) {
    uint32_t len;
    std::memcpy(&len, bytes.data() + at, 4);
    if (len == 0 || len > kMaxFramePayload || bytes.size() - at - 8 < len) break;
    AddRecordCountHint(bytes.substr(at + 8, len), &hint);
    at += 8 + len;
  }
  process.ranges.reserve(hint.ranges);
  process.kernels.reserve(hint.kernels);
  process.memcpys.reserve(hint.memcpys);
  process.memsets.reserve(hint.memsets);
  process.api_calls.reserve(hint.api_calls);
  process.launches.reserve(hint.launches);
  DecodeFrames(&scanner, &decoder, {}, &trace->warnings, progress);
  decoder.Finish();
  AddDecoderWarnings(display_name, decoder, &trace->warnings);
  trace->processes.push_back(std::move(process));
  return true;
}

bool StreamTraceFile(const std::string& path, StringTable* strings, ProcessTrace* process,
                     const BatchCallback& on_batch, std::vector<std::string>* warnings,
                     std::string* error, const ReadProgress& progress) {
  FrameScanner scanner(path);
  if (!scanner.Open(error)) return false;
  process->source_file = path;
  FileDecoder decoder(process, strings);
  auto after_frame = [&] {
    decoder.MapRecordNames();
    on_batch(*process);
    process->ranges.clear();
    process->marks.clear();
    process->kernels.clear();
    process->memcpys.clear();
    process->memsets.clear();
    process->api_calls.clear();
    process->launches.clear();
    process->syncs.clear();
    process->overheads.clear();
    process->graph_nodes.clear();
    process->graph_launches.clear();
    process->pm_samples.clear();
  };
  DecodeFramesAhead(&scanner, &decoder, after_frame, warnings, progress);
  decoder.MapDefinitionNames();
  AddDecoderWarnings(path, decoder, warnings);
  return true;
}

std::string IncompleteTraceReason(const std::string& path) {
  int fd = -1;
  uint64_t size = 0;
  std::string error;
  if (!OpenTraceFile(path, &fd, &size, &error)) return error;
  auto read_at = [&](uint64_t off, char* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  };
  std::string why;
  char magic[sizeof(kTraceMagic)];
  uint64_t at = sizeof(kTraceMagic), last = 0, frames = 0;
  uint32_t last_len = 0;
  if (!read_at(0, magic, sizeof(magic)) || std::memcmp(magic, kTraceMagic, sizeof(magic)) != 0) {
    why = "not a tracer stream (bad magic)";
  }
  while (why.empty() && at < size) {
    char head[8];
    if (size - at < 8 || !read_at(at, head, 8)) {
      why = "ends inside a frame header";
      break;
    }
    uint32_t len;
    std::memcpy(&len, head, 4);
    if (len == 0 || len > kMaxFramePayload) {
      why = "bad frame length at byte " + std::to_string(at);
    } else if (size - at - 8 < len) {
      why = "ends inside a frame (" + std::to_string(size - at - 8) + " of " + std::to_string(len) +
            " bytes)";
    } else {
      last = at;
      last_len = len;
      at += 8 + uint64_t{len};
      ++frames;
    }
  }
  if (why.empty()) {
    std::string payload(last_len, '\0');
    proto::Chunk chunk;
#if GOOGLE_PROTOBUF_VERSION < 4022000
    google::protobuf::LogSilencer quiet;
#endif
    if (frames == 0 || !read_at(last + 8, payload.data(), last_len) ||
        !chunk.ParseFromString(payload) || !chunk.has_footer()) {
      why = "no footer after " + std::to_string(frames) + " frame(s)";
    }
  }
  ::close(fd);
  return why;
}

bool ReadTraceFile(const std::string& path, Trace* trace, std::string* error,
                   const ReadProgress& progress) {
  int fd = -1;
  uint64_t file_size = 0;
  if (!OpenTraceFile(path, &fd, &file_size, error)) return false;
  const size_t size = static_cast<size_t>(file_size);
  // Mapped, not copied: the reader makes one pass over the bytes.
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) {
    *error = path + ": cannot map (" + std::strerror(errno) + ")";
    return false;
  }
  ::madvise(data, size, MADV_SEQUENTIAL);
  // The pages already decoded are dropped as the records fill up, so that
  // the file and the records it became are never both resident (the file is
  // about 6 bytes per record; a dropped page of this read-only private
  // mapping would be read again from the file, never lost).
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uint64_t released = 0;
  const ReadProgress release = [&](uint64_t done, uint64_t total) {
    const uint64_t upto = done / page * page;
    if (upto > released) {
      ::madvise(static_cast<char*>(data) + released, static_cast<size_t>(upto - released),
                MADV_DONTNEED);
      released = upto;
    }
    if (progress) progress(done, total);
  };
  const bool ok = ReadTraceBytes(std::string_view(static_cast<const char*>(data), size), path,
                                 trace, error, release);
  ::munmap(data, size);
  return ok;
}

}  // namespace tracer::analysis
