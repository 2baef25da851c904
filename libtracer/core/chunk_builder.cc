#include "libtracer/core/chunk_builder.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "libtracer/core/frame_crc.h"
#include "libtracer/core/trace_fields.h"
#include "libtracer/core/wire_writer.h"

namespace tracer {

using wire::AppendBytes;
using wire::AppendSint;
using wire::AppendUint;
using Enc = ColumnBatch::Encoding;
namespace f = fields;

// Column batches write column c as field c + 1 (SerializeAndClear), so the
// rows built below list their values in field order; checked here against
// trace.proto.
static_assert(f::KernelBatch::kStartDelta == 1 && f::KernelBatch::kDuration == 2 &&
              f::KernelBatch::kName == 3 && f::KernelBatch::kStream == 4 &&
              f::KernelBatch::kCorrelationDelta == 5 && f::KernelBatch::kLaunchConfig == 6);
static_assert(f::MemcpyBatch::kStartDelta == 1 && f::MemcpyBatch::kDuration == 2 &&
              f::MemcpyBatch::kBytes == 3 && f::MemcpyBatch::kCopyKind == 4 &&
              f::MemcpyBatch::kStream == 5 && f::MemcpyBatch::kCorrelationDelta == 6 &&
              f::MemcpyBatch::kFlags == 7);
static_assert(f::MemsetBatch::kStartDelta == 1 && f::MemsetBatch::kDuration == 2 &&
              f::MemsetBatch::kBytes == 3 && f::MemsetBatch::kValue == 4 &&
              f::MemsetBatch::kStream == 5 && f::MemsetBatch::kCorrelationDelta == 6 &&
              f::MemsetBatch::kFlags == 7);
static_assert(f::ApiBatch::kStartDelta == 1 && f::ApiBatch::kDuration == 2 &&
              f::ApiBatch::kDomain == 3 && f::ApiBatch::kCbid == 4 && f::ApiBatch::kThread == 5 &&
              f::ApiBatch::kCorrelationDelta == 6 && f::ApiBatch::kReturnValue == 7 &&
              f::ApiBatch::kName == 8);
static_assert(f::LaunchBatch::kCorrelationDelta == 1 && f::LaunchBatch::kTimeDelta == 2 &&
              f::LaunchBatch::kThread == 3 && f::LaunchBatch::kRangeId == 4 &&
              f::LaunchBatch::kCbid == 5 && f::LaunchBatch::kDomain == 6);
// PayloadValue::Type is written as PayloadKind.
static_assert(static_cast<int>(PayloadValue::Type::kU64) == 1 &&
              static_cast<int>(PayloadValue::Type::kI64) == 2 &&
              static_cast<int>(PayloadValue::Type::kF64) == 3);
// VarintColumns writes column c as field c + 1; self_parent_rows is the
// sparse field after the columns.
static_assert(f::RangeBatch::kThread == 1 && f::RangeBatch::kPayload == 15 &&
              f::RangeBatch::kSelfParentRows == 16);
static_assert(f::MarkBatch::kThread == 1 && f::MarkBatch::kPayload == 8);
// FinishFrame appends the definition and row lists in field-number order
// from these ranges; the arrays in chunk_builder.h are indexed by them.
static_assert(f::Chunk::kHeader == 1 && f::Chunk::kStrings == 2 && f::Chunk::kThreads == 3 &&
              f::Chunk::kStreams == 4 && f::Chunk::kLaunchConfigs == 5 && f::Chunk::kDomains == 6 &&
              f::Chunk::kCategories == 7);
static_assert(f::Chunk::kRanges == 10 && f::Chunk::kMarks == 11 && f::Chunk::kKernels == 12 &&
              f::Chunk::kMemcpys == 13 && f::Chunk::kMemsets == 14 && f::Chunk::kApiCalls == 15 &&
              f::Chunk::kLaunches == 16 && f::Chunk::kSynchronizations == 17 &&
              f::Chunk::kOverheads == 18 && f::Chunk::kGraphNodes == 19 &&
              f::Chunk::kPmSamples == 20 && f::Chunk::kGraphLaunches == 21 &&
              f::Chunk::kRangeBatch == 22 && f::Chunk::kMarkBatch == 23 &&
              f::Chunk::kCounterDeltas == 30 && f::Chunk::kFooter == 31);

ColumnBatch::ColumnBatch(std::vector<Encoding> encodings)
    : encodings_(std::move(encodings)), previous_(encodings_.size(), 0) {}

void ColumnBatch::AddRow(const uint64_t* values) {
  const size_t n = encodings_.size();
  const size_t base = rows_ * n;
  if (base + n > cells_.size()) cells_.resize(std::max<size_t>(cells_.size() * 2, 64 * n));
  uint64_t* out = cells_.data() + base;
  for (size_t c = 0; c < n; ++c) {
    if (encodings_[c] == Enc::kDelta) {
      out[c] = wire::ZigZag(static_cast<int64_t>(values[c] - previous_[c]));
      previous_[c] = values[c];
    } else {
      out[c] = values[c];
    }
  }
  ++rows_;
}

void ColumnBatch::SerializeAndClear(std::string* out) {
  const size_t n = encodings_.size();
  for (size_t c = 0; c < n; ++c) {
    bool all_zero = true;
    for (size_t r = 0; r < rows_; ++r) {
      if (cells_[r * n + c] != 0) {
        all_zero = false;
        break;
      }
    }
    // An all-zero column is left out: the reader treats a missing column as
    // zeros (trace.proto COLUMNAR BATCHES).
    if (!all_zero) {
      // Varints straight into a pre-sized buffer: one append per value costs
      // more than the encoding itself (bench/cupti decode+encode).
      scratch_.resize(rows_ * 10);
      char* p = scratch_.data();
      for (size_t r = 0; r < rows_; ++r) {
        uint64_t v = cells_[r * n + c];
        while (v >= 0x80) {
          *p++ = static_cast<char>((v & 0x7F) | 0x80);
          v >>= 7;
        }
        *p++ = static_cast<char>(v);
      }
      scratch_.resize(static_cast<size_t>(p - scratch_.data()));
      AppendBytes(out, static_cast<uint32_t>(c + 1), scratch_);
    }
    previous_[c] = 0;
  }
  rows_ = 0;
}

static_assert(f::RangeBatch::kPayload <= VarintColumns::kMaxColumns &&
              f::MarkBatch::kPayload <= VarintColumns::kMaxColumns);

namespace {

// VarintColumns' dense-column mask from field numbers (column = field - 1).
constexpr uint64_t DenseColumns(std::initializer_list<uint32_t> fields) {
  uint64_t mask = 0;
  for (uint32_t f : fields) mask |= uint64_t{1} << (f - 1);
  return mask;
}

}  // namespace

ChunkBuilder::ChunkBuilder()
    : kernels_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta, Enc::kPlain}),
      memcpys_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
                Enc::kPlain}),
      memsets_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
                Enc::kPlain}),
      apis_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
             Enc::kPlain, Enc::kPlain}),
      launches_({Enc::kDelta, Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain}),
      ranges_(f::RangeBatch::kPayload, /*keep_first_column=*/true,
              DenseColumns({f::RangeBatch::kThread, f::RangeBatch::kStartDelta,
                            f::RangeBatch::kDuration, f::RangeBatch::kIdDelta,
                            f::RangeBatch::kParentOffset, f::RangeBatch::kName,
                            f::RangeBatch::kDomain, f::RangeBatch::kDepth, f::RangeBatch::kColor})),
      marks_(f::MarkBatch::kPayload, /*keep_first_column=*/true,
             DenseColumns({f::MarkBatch::kThread, f::MarkBatch::kTimeDelta, f::MarkBatch::kName})) {
}

void ChunkBuilder::SetHeader(const HeaderInfo& h) {
  std::string& m = header_;
  m.clear();
  AppendUint(&m, f::Header::kFormatVersion, h.format_version);
  wire::AppendNonEmptyBytes(&m, f::Header::kTracerVersion, h.tracer_version);
  wire::AppendNonEmptyBytes(&m, f::Header::kHost, h.host);
  AppendUint(&m, f::Header::kPid, h.pid);
  wire::AppendInt32(&m, f::Header::kRank, h.rank);
  if (!h.clock_description.empty()) {
    scratch_.clear();
    AppendBytes(&scratch_, f::ClockInfo::kDescription, h.clock_description);
    AppendBytes(&m, f::Header::kClock, scratch_);
  }
  AppendUint(&m, f::Header::kSessionStartWallNs, h.session_start_wall_ns);
  AppendUint(&m, f::Header::kSessionStartTraceNs, h.session_start_trace_ns);
  for (const auto& [k, v] : h.config) {
    scratch_.clear();
    AppendBytes(&scratch_, f::KeyValue::kKey, k);
    wire::AppendNonEmptyBytes(&scratch_, f::KeyValue::kValue, v);
    AppendBytes(&m, f::Header::kConfig, scratch_);
  }
  for (const auto& arg : h.command_line) AppendBytes(&m, f::Header::kCommandLine, arg);
  AppendUint(&m, f::Header::kParentPid, h.parent_pid);
  wire::AppendNonEmptyBytes(&m, f::Header::kSource, h.source);
  wire::AppendInt32(&m, f::Header::kWorldSize, h.world_size);
  if (h.local_rank >= 0) {  // written even when 0: the field has presence
    wire::AppendTag(&m, f::Header::kLocalRank, wire::kVarint);
    wire::AppendVarint(&m, static_cast<uint64_t>(h.local_rank));
  }
  wire::AppendNonEmptyBytes(&m, f::Header::kDevice, h.device);
  wire::AppendNonEmptyBytes(&m, f::Header::kCudaVisibleDevices, h.cuda_visible_devices);
  ++items_;
}

namespace {

void AppendCounters(std::string* out, uint32_t field, const CounterList& counters,
                    std::string* scratch) {
  for (const auto& [name, value] : counters) {
    scratch->clear();
    AppendBytes(scratch, f::Counter::kName, name);
    AppendUint(scratch, f::Counter::kValue, value);
    AppendBytes(out, field, *scratch);
  }
}

}  // namespace

void ChunkBuilder::SetFooter(const FooterInfo& footer) {
  std::string& m = footer_;
  m.clear();
  AppendUint(&m, f::Footer::kSessionEndTraceNs, footer.session_end_trace_ns);
  AppendCounters(&m, f::Footer::kRecordsByKind, footer.records_by_kind, &scratch_);
  AppendCounters(&m, f::Footer::kDroppedByCause, footer.dropped_by_cause, &scratch_);
  AppendUint(&m, f::Footer::kOverheadNs, footer.overhead_ns);
  AppendCounters(&m, f::Footer::kStats, footer.stats, &scratch_);
  // A footer with every field zero still has to be present on the wire.
  if (m.empty()) {
    wire::AppendTag(&m, f::Footer::kSessionEndTraceNs, wire::kVarint);
    wire::AppendVarint(&m, 0);
  }
  ++items_;
}

void ChunkBuilder::AddString(uint32_t id, std::string_view value) {
  scratch_.clear();
  AppendUint(&scratch_, f::StringDef::kId, id);
  wire::AppendNonEmptyBytes(&scratch_, f::StringDef::kValue, value);
  AppendBytes(&defs_[f::Chunk::kStrings], f::Chunk::kStrings, scratch_);
  ++items_;
}

void ChunkBuilder::AddThread(const ThreadDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, f::ThreadDef::kId, r.id);
  AppendUint(&scratch_, f::ThreadDef::kOsTid, r.os_tid);
  AppendUint(&scratch_, f::ThreadDef::kName, r.name);
  AppendUint(&scratch_, f::ThreadDef::kPthreadId, r.pthread_id);
  AppendBytes(&defs_[f::Chunk::kThreads], f::Chunk::kThreads, scratch_);
  ++items_;
}

void ChunkBuilder::AddStream(const StreamDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, f::StreamDef::kId, r.id);
  AppendUint(&scratch_, f::StreamDef::kDevice, r.device);
  AppendUint(&scratch_, f::StreamDef::kContext, r.context);
  AppendUint(&scratch_, f::StreamDef::kStream, r.stream);
  AppendBytes(&defs_[f::Chunk::kStreams], f::Chunk::kStreams, scratch_);
  ++items_;
}

void ChunkBuilder::AddLaunchConfig(const LaunchConfigRecord& r) {
  scratch_.clear();
  using L = f::LaunchConfigDef;
  AppendUint(&scratch_, L::kId, r.id);
  AppendUint(&scratch_, L::kGridX, r.grid[0]);
  AppendUint(&scratch_, L::kGridY, r.grid[1]);
  AppendUint(&scratch_, L::kGridZ, r.grid[2]);
  AppendUint(&scratch_, L::kBlockX, r.block[0]);
  AppendUint(&scratch_, L::kBlockY, r.block[1]);
  AppendUint(&scratch_, L::kBlockZ, r.block[2]);
  AppendUint(&scratch_, L::kStaticSharedMemory, r.static_shared_memory);
  AppendUint(&scratch_, L::kDynamicSharedMemory, r.dynamic_shared_memory);
  AppendUint(&scratch_, L::kRegistersPerThread, r.registers_per_thread);
  AppendBytes(&defs_[f::Chunk::kLaunchConfigs], f::Chunk::kLaunchConfigs, scratch_);
  ++items_;
}

void ChunkBuilder::AddDomain(const DomainDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, f::DomainDef::kId, r.id);
  AppendUint(&scratch_, f::DomainDef::kName, r.name);
  AppendBytes(&defs_[f::Chunk::kDomains], f::Chunk::kDomains, scratch_);
  ++items_;
}

void ChunkBuilder::AddCategory(const CategoryDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, f::CategoryDef::kDomain, r.domain);
  AppendUint(&scratch_, f::CategoryDef::kCategory, r.category);
  AppendUint(&scratch_, f::CategoryDef::kName, r.name);
  AppendBytes(&defs_[f::Chunk::kCategories], f::Chunk::kCategories, scratch_);
  ++items_;
}

// Ranges and marks arrive once per NVTX event on the one writer thread:
// each value goes straight into its column (range_encode_bench).
namespace {

// The payload's 8 bytes as the PAYLOAD column holds them (its u64, i64
// and f64 share them), 0 without one.
uint64_t PayloadBits(const PayloadValue& p) {
  const auto type = static_cast<uint8_t>(p.type);
  return type - 1u < 3u ? p.u64 : 0;
}

}  // namespace

void ChunkBuilder::AddSelfParentRow() { wire::AppendVarint(&self_parent_rows_, ranges_.rows()); }

void ChunkBuilder::AddRareRangeFields(const RangeRecord& r) {
  using R = f::RangeBatch;
  // The columns AddRange (inline, without trace_fields.h) fills.
  static_assert(
      kRangeThread == f::RangeBatch::kThread - 1 &&
      kRangeStartDelta == f::RangeBatch::kStartDelta - 1 &&
      kRangeDuration == f::RangeBatch::kDuration - 1 &&
      kRangeIdDelta == f::RangeBatch::kIdDelta - 1 &&
      kRangeParentOffset == f::RangeBatch::kParentOffset - 1 &&
      kRangeName == f::RangeBatch::kName - 1 && kRangeDomain == f::RangeBatch::kDomain - 1 &&
      kRangeDepth == f::RangeBatch::kDepth - 1 && kRangeColor == f::RangeBatch::kColor - 1);
  // A push/pop range ends on the thread that pushed it: without an end
  // thread it is written as ending there (delta 0), not as -thread, which
  // cost a byte and this path on every range of a capture.
  const uint32_t end_thread =
      r.end_thread == 0 && r.kind == RangeKind::kPushPop ? r.thread : r.end_thread;
  ranges_.Put(R::kCategory - 1, r.category);
  ranges_.Put(R::kKind - 1, static_cast<uint64_t>(r.kind));
  ranges_.Put(R::kEndThreadDelta - 1, wire::ZigZag(int64_t{end_thread} - int64_t{r.thread}));
  ranges_.Put(R::kFlags - 1, r.flags);
  ranges_.Put(R::kPayloadKind - 1, static_cast<uint64_t>(r.payload.type));
  ranges_.Put(R::kPayload - 1, PayloadBits(r.payload));
}

void ChunkBuilder::AddMark(const MarkRecord& r) {
  using M = f::MarkBatch;
  uint64_t* previous = mark_previous_.Of(r.thread);
  marks_.PutDense(M::kThread - 1, r.thread);
  marks_.PutDense(M::kTimeDelta - 1, wire::ZigZag(static_cast<int64_t>(r.time_ns - previous[0])));
  marks_.PutDense(M::kName - 1, r.name);
  marks_.Put(M::kDomain - 1, r.domain);
  marks_.Put(M::kCategory - 1, r.category);
  marks_.Put(M::kColor - 1, r.color);
  marks_.Put(M::kPayloadKind - 1, static_cast<uint64_t>(r.payload.type));
  marks_.Put(M::kPayload - 1, PayloadBits(r.payload));
  marks_.EndRow();
  previous[0] = r.time_ns;
  ++items_;
}

void ChunkBuilder::AddKernel(const KernelRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.name,
                          r.stream,   r.correlation_id,      r.launch_config};
  AppendGraphRef(&kernel_graph_refs_, f::KernelBatch::kGraph, kernels_.rows(), r.graph_id,
                 r.graph_node_id);
  kernels_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AppendGraphRef(std::string* out, uint32_t field, size_t row, uint64_t graph_id,
                                  uint64_t graph_node_id) {
  if (graph_id == 0 && graph_node_id == 0) return;
  scratch_.clear();
  AppendUint(&scratch_, f::GraphRef::kRow, row);
  AppendUint(&scratch_, f::GraphRef::kGraphId, graph_id);
  AppendUint(&scratch_, f::GraphRef::kGraphNodeId, graph_node_id);
  AppendBytes(out, field, scratch_);
}

void ChunkBuilder::AddMemcpy(const MemcpyRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.bytes, r.copy_kind,
                          r.stream,   r.correlation_id,      r.flags};
  AppendGraphRef(&memcpy_graph_refs_, f::MemcpyBatch::kGraph, memcpys_.rows(), r.graph_id,
                 r.graph_node_id);
  memcpys_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AddMemset(const MemsetRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.bytes, r.value,
                          r.stream,   r.correlation_id,      r.flags};
  AppendGraphRef(&memset_graph_refs_, f::MemsetBatch::kGraph, memsets_.rows(), r.graph_id,
                 r.graph_node_id);
  memsets_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AddApi(const ApiRecord& r) {
  const uint64_t row[] = {r.start_ns,
                          r.end_ns - r.start_ns,
                          static_cast<uint64_t>(r.domain),
                          r.cbid,
                          r.thread,
                          r.correlation_id,
                          r.return_value,
                          r.name};
  apis_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AddLaunch(const LaunchRecord& r) {
  const uint64_t row[] = {r.correlation_id, r.time_ns, r.thread,
                          r.range_id,       r.cbid,    static_cast<uint64_t>(r.domain)};
  launches_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AddSync(const SyncRecord& r) {
  std::string& m = payload_;
  m.clear();
  using S = f::Synchronization;
  AppendUint(&m, S::kStartNs, r.start_ns);
  AppendUint(&m, S::kEndNs, r.end_ns);
  AppendUint(&m, S::kType, r.type);
  AppendUint(&m, S::kStream, r.stream);
  AppendUint(&m, S::kCorrelationId, r.correlation_id);
  AppendUint(&m, S::kContext, r.context);
  AppendUint(&m, S::kEvent, r.event);
  AppendBytes(&rows_[f::Chunk::kSynchronizations], f::Chunk::kSynchronizations, m);
  ++items_;
}

void ChunkBuilder::AddOverhead(const OverheadRecord& r) {
  std::string& m = payload_;
  m.clear();
  using O = f::Overhead;
  AppendUint(&m, O::kStartNs, r.start_ns);
  AppendUint(&m, O::kEndNs, r.end_ns);
  AppendUint(&m, O::kKind, r.kind);
  AppendUint(&m, O::kThread, r.thread);
  AppendUint(&m, O::kCorrelationId, r.correlation_id);
  AppendBytes(&rows_[f::Chunk::kOverheads], f::Chunk::kOverheads, m);
  ++items_;
}

void ChunkBuilder::AddGraphNode(const GraphNodeSnapshotRecord& r) {
  std::string& m = payload_;
  m.clear();
  using G = f::GraphNodeSnapshot;
  AppendUint(&m, G::kGraphId, r.graph_id);
  AppendUint(&m, G::kGraphNodeId, r.graph_node_id);
  AppendUint(&m, G::kRangeId, r.range_id);
  AppendUint(&m, G::kThread, r.thread);
  AppendUint(&m, G::kTimeNs, r.time_ns);
  AppendBytes(&rows_[f::Chunk::kGraphNodes], f::Chunk::kGraphNodes, m);
  ++items_;
}

void ChunkBuilder::AddPmSample(const PmSampleRecord& r) {
  std::string& m = payload_;
  m.clear();
  using P = f::PmSample;
  AppendUint(&m, P::kStartNs, r.start_ns);
  AppendUint(&m, P::kEndNs, r.end_ns);
  AppendUint(&m, P::kDevice, r.device);
  AppendUint(&m, P::kMetric, r.metric);
  wire::AppendDouble(&m, P::kValue, r.value);
  AppendBytes(&rows_[f::Chunk::kPmSamples], f::Chunk::kPmSamples, m);
  ++items_;
}

void ChunkBuilder::AddGraphLaunch(const GraphLaunchRecord& r) {
  std::string& m = payload_;
  m.clear();
  using G = f::GraphLaunch;
  AppendUint(&m, G::kStartNs, r.start_ns);
  AppendUint(&m, G::kEndNs, r.end_ns);
  AppendUint(&m, G::kGraphId, r.graph_id);
  AppendUint(&m, G::kStream, r.stream);
  AppendUint(&m, G::kCorrelationId, r.correlation_id);
  AppendBytes(&rows_[f::Chunk::kGraphLaunches], f::Chunk::kGraphLaunches, m);
  ++items_;
}

void ChunkBuilder::AddCounterDelta(std::string_view name, uint64_t delta) {
  if (delta == 0) return;
  scratch_.clear();
  AppendBytes(&scratch_, f::Counter::kName, name);
  AppendUint(&scratch_, f::Counter::kValue, delta);
  AppendBytes(&rows_[f::Chunk::kCounterDeltas], f::Chunk::kCounterDeltas, scratch_);
  ++items_;
}

size_t ChunkBuilder::ApproximateBytes() const {
  size_t n = header_.size() + footer_.size() + kernel_graph_refs_.size() +
             memcpy_graph_refs_.size() + memset_graph_refs_.size();
  for (const auto& d : defs_) n += d.size();
  for (const auto& r : rows_) n += r.size();
  // Column batches: a few bytes a row.
  n += 10 * (kernels_.rows() + memcpys_.rows() + memsets_.rows() + apis_.rows() + launches_.rows());
  n += ranges_.bytes() + marks_.bytes() + self_parent_rows_.size();
  return n;
}

void ChunkBuilder::FinishFrame(std::string* out) {
  if (items_ == 0) return;
  // The payload is built in place after its 8-byte header (length, CRC-32),
  // filled in at the end: no copy of the frame.
  const size_t start = out->size();
  out->append(8, '\0');
  std::string& payload = *out;
  // Fields in number order, as a conforming serializer would write them.
  wire::AppendNonEmptyBytes(&payload, f::Chunk::kHeader, header_);
  for (uint32_t d = f::Chunk::kStrings; d <= f::Chunk::kCategories; ++d) payload.append(defs_[d]);
  payload.append(rows_[f::Chunk::kRanges]);
  payload.append(rows_[f::Chunk::kMarks]);
  auto append_batch = [&](uint32_t field, ColumnBatch& batch, std::string* extra) {
    if (batch.rows() == 0) return;
    scratch_.clear();
    batch.SerializeAndClear(&scratch_);
    if (extra != nullptr) {
      scratch_.append(*extra);
      extra->clear();
    }
    AppendBytes(&payload, field, scratch_);
  };
  append_batch(f::Chunk::kKernels, kernels_, &kernel_graph_refs_);
  append_batch(f::Chunk::kMemcpys, memcpys_, &memcpy_graph_refs_);
  append_batch(f::Chunk::kMemsets, memsets_, &memset_graph_refs_);
  append_batch(f::Chunk::kApiCalls, apis_, nullptr);
  append_batch(f::Chunk::kLaunches, launches_, nullptr);
  for (uint32_t r = f::Chunk::kSynchronizations; r <= f::Chunk::kGraphLaunches; ++r) {
    payload.append(rows_[r]);
  }
  // The batches are serialized in place too, after their length.
  if (ranges_.rows() > 0) {
    size_t size = ranges_.SerializedSize();
    if (!self_parent_rows_.empty()) {
      size += wire::VarintSize((uint64_t{f::RangeBatch::kSelfParentRows} << 3) |
                               wire::kLengthDelimited) +
              wire::VarintSize(self_parent_rows_.size()) + self_parent_rows_.size();
    }
    wire::AppendTag(&payload, f::Chunk::kRangeBatch, wire::kLengthDelimited);
    wire::AppendVarint(&payload, size);
    ranges_.SerializeAndClear(&payload);
    wire::AppendNonEmptyBytes(&payload, f::RangeBatch::kSelfParentRows, self_parent_rows_);
    self_parent_rows_.clear();
  }
  if (marks_.rows() > 0) {
    wire::AppendTag(&payload, f::Chunk::kMarkBatch, wire::kLengthDelimited);
    wire::AppendVarint(&payload, marks_.SerializedSize());
    marks_.SerializeAndClear(&payload);
  }
  range_previous_.NewBatch();
  mark_previous_.NewBatch();
  payload.append(rows_[f::Chunk::kCounterDeltas]);
  wire::AppendNonEmptyBytes(&payload, f::Chunk::kFooter, footer_);

  const size_t size = out->size() - start - 8;
  const uint32_t crc = FrameCrc32(out->data() + start + 8, size);
  char header[8];
  for (int i = 0; i < 4; ++i) {
    header[i] = static_cast<char>(size >> (8 * i));
    header[4 + i] = static_cast<char>(crc >> (8 * i));
  }
  std::memcpy(out->data() + start, header, 8);

  header_.clear();
  footer_.clear();
  for (auto& d : defs_) d.clear();
  for (auto& r : rows_) r.clear();
  items_ = 0;
}

void AppendFileMagic(std::string* out) { out->append(kTraceMagic, sizeof(kTraceMagic)); }

}  // namespace tracer
