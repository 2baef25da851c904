#include "libtracer/core/chunk_builder.h"

#include <zlib.h>

#include <algorithm>

#include "libtracer/core/wire_writer.h"

namespace tracer {

using wire::AppendBytes;
using wire::AppendSint;
using wire::AppendUint;
using Enc = ColumnBatch::Encoding;

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

ChunkBuilder::ChunkBuilder()
    : kernels_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta, Enc::kPlain}),
      memcpys_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
                Enc::kPlain}),
      memsets_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
                Enc::kPlain}),
      apis_({Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kDelta,
             Enc::kPlain, Enc::kPlain}),
      launches_({Enc::kDelta, Enc::kDelta, Enc::kPlain, Enc::kPlain, Enc::kPlain, Enc::kPlain}) {}

namespace {

void AppendPayload(std::string* out, uint32_t field, const PayloadValue& p, std::string* scratch) {
  if (p.type == PayloadValue::Type::kNone) return;
  scratch->clear();
  switch (p.type) {
    case PayloadValue::Type::kU64:
      wire::AppendTag(scratch, 1, wire::kVarint);
      wire::AppendVarint(scratch, p.u64);
      break;
    case PayloadValue::Type::kI64:
      wire::AppendTag(scratch, 2, wire::kVarint);
      wire::AppendVarint(scratch, static_cast<uint64_t>(p.i64));
      break;
    case PayloadValue::Type::kF64: {
      wire::AppendTag(scratch, 3, wire::kFixed64);
      char buf[8];
      std::memcpy(buf, &p.f64, 8);
      scratch->append(buf, 8);
      break;
    }
    default:
      break;
  }
  AppendBytes(out, field, *scratch);
}

}  // namespace

void ChunkBuilder::SetHeader(const HeaderInfo& h) {
  std::string& m = header_;
  m.clear();
  AppendUint(&m, 1, h.format_version);
  wire::AppendNonEmptyBytes(&m, 2, h.tracer_version);
  wire::AppendNonEmptyBytes(&m, 3, h.host);
  AppendUint(&m, 4, h.pid);
  wire::AppendInt32(&m, 5, h.rank);
  if (!h.clock_description.empty()) {
    scratch_.clear();
    AppendBytes(&scratch_, 1, h.clock_description);
    AppendBytes(&m, 6, scratch_);
  }
  AppendUint(&m, 7, h.session_start_wall_ns);
  AppendUint(&m, 8, h.session_start_trace_ns);
  for (const auto& [k, v] : h.config) {
    scratch_.clear();
    AppendBytes(&scratch_, 1, k);
    wire::AppendNonEmptyBytes(&scratch_, 2, v);
    AppendBytes(&m, 9, scratch_);
  }
  for (const auto& arg : h.command_line) AppendBytes(&m, 10, arg);
  AppendUint(&m, 11, h.parent_pid);
  wire::AppendNonEmptyBytes(&m, 12, h.source);
  ++items_;
}

namespace {

void AppendCounters(std::string* out, uint32_t field, const CounterList& counters,
                    std::string* scratch) {
  for (const auto& [name, value] : counters) {
    scratch->clear();
    AppendBytes(scratch, 1, name);
    AppendUint(scratch, 2, value);
    AppendBytes(out, field, *scratch);
  }
}

}  // namespace

void ChunkBuilder::SetFooter(const FooterInfo& f) {
  std::string& m = footer_;
  m.clear();
  AppendUint(&m, 1, f.session_end_trace_ns);
  AppendCounters(&m, 2, f.records_by_kind, &scratch_);
  AppendCounters(&m, 3, f.dropped_by_cause, &scratch_);
  AppendUint(&m, 4, f.overhead_ns);
  AppendCounters(&m, 5, f.stats, &scratch_);
  // A footer with every field zero still has to be present on the wire.
  if (m.empty()) {
    wire::AppendTag(&m, 1, wire::kVarint);
    wire::AppendVarint(&m, 0);
  }
  ++items_;
}

void ChunkBuilder::AddString(uint32_t id, std::string_view value) {
  scratch_.clear();
  AppendUint(&scratch_, 1, id);
  wire::AppendNonEmptyBytes(&scratch_, 2, value);
  AppendBytes(&defs_[2], 2, scratch_);
  ++items_;
}

void ChunkBuilder::AddThread(const ThreadDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, 1, r.id);
  AppendUint(&scratch_, 2, r.os_tid);
  AppendUint(&scratch_, 3, r.name);
  AppendUint(&scratch_, 4, r.pthread_id);
  AppendBytes(&defs_[3], 3, scratch_);
  ++items_;
}

void ChunkBuilder::AddStream(const StreamDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, 1, r.id);
  AppendUint(&scratch_, 2, r.device);
  AppendUint(&scratch_, 3, r.context);
  AppendUint(&scratch_, 4, r.stream);
  AppendBytes(&defs_[4], 4, scratch_);
  ++items_;
}

void ChunkBuilder::AddLaunchConfig(const LaunchConfigRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, 1, r.id);
  for (int i = 0; i < 3; ++i) AppendUint(&scratch_, 2 + i, r.grid[i]);
  for (int i = 0; i < 3; ++i) AppendUint(&scratch_, 5 + i, r.block[i]);
  AppendUint(&scratch_, 8, r.static_shared_memory);
  AppendUint(&scratch_, 9, r.dynamic_shared_memory);
  AppendUint(&scratch_, 10, r.registers_per_thread);
  AppendBytes(&defs_[5], 5, scratch_);
  ++items_;
}

void ChunkBuilder::AddDomain(const DomainDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, 1, r.id);
  AppendUint(&scratch_, 2, r.name);
  AppendBytes(&defs_[6], 6, scratch_);
  ++items_;
}

void ChunkBuilder::AddCategory(const CategoryDefRecord& r) {
  scratch_.clear();
  AppendUint(&scratch_, 1, r.domain);
  AppendUint(&scratch_, 2, r.category);
  AppendUint(&scratch_, 3, r.name);
  AppendBytes(&defs_[7], 7, scratch_);
  ++items_;
}

// Ranges and marks are row messages written once per NVTX event by the one
// writer thread, so they are encoded into a stack buffer and appended once
// (range_encode_bench: the field-by-field appends cost about twice as much).
void ChunkBuilder::AddRange(const RangeRecord& r) {
  char buf[13 * wire::kMaxUintField];
  char* p = buf;
  p = wire::PutUint(p, 1, r.id);
  p = wire::PutUint(p, 2, r.parent_id);
  p = wire::PutUint(p, 3, r.thread);
  p = wire::PutUint(p, 4, r.name);
  p = wire::PutUint(p, 5, r.domain);
  p = wire::PutUint(p, 6, r.category);
  p = wire::PutUint(p, 7, r.start_ns);
  p = wire::PutUint(p, 8, r.end_ns);
  p = wire::PutUint(p, 9, static_cast<uint64_t>(r.kind));
  p = wire::PutUint(p, 10, r.depth);
  p = wire::PutUint(p, 11, r.end_thread);
  p = wire::PutUint(p, 12, r.flags);
  p = wire::PutUint(p, 13, r.color);
  AppendRowMessage(&rows_[10], 10, std::string_view(buf, static_cast<size_t>(p - buf)), 14,
                   r.payload);
}

void ChunkBuilder::AddMark(const MarkRecord& r) {
  char buf[6 * wire::kMaxUintField];
  char* p = buf;
  p = wire::PutUint(p, 1, r.time_ns);
  p = wire::PutUint(p, 2, r.thread);
  p = wire::PutUint(p, 3, r.name);
  p = wire::PutUint(p, 4, r.domain);
  p = wire::PutUint(p, 5, r.category);
  p = wire::PutUint(p, 6, r.color);
  AppendRowMessage(&rows_[11], 11, std::string_view(buf, static_cast<size_t>(p - buf)), 7,
                   r.payload);
}

void ChunkBuilder::AppendRowMessage(std::string* out, uint32_t field, std::string_view fields,
                                    uint32_t payload_field, const PayloadValue& payload) {
  if (payload.type == PayloadValue::Type::kNone) {
    AppendBytes(out, field, fields);
  } else {
    std::string& m = payload_;  // borrowed as scratch; payload_ is only built in FinishFrame
    m.assign(fields.data(), fields.size());
    AppendPayload(&m, payload_field, payload, &scratch_);
    AppendBytes(out, field, m);
  }
  ++items_;
}

void ChunkBuilder::AddKernel(const KernelRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.name,
                          r.stream,   r.correlation_id,      r.launch_config};
  AppendGraphRef(&kernel_graph_refs_, 7, kernels_.rows(), r.graph_id, r.graph_node_id);
  kernels_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AppendGraphRef(std::string* out, uint32_t field, size_t row, uint64_t graph_id,
                                  uint64_t graph_node_id) {
  if (graph_id == 0 && graph_node_id == 0) return;
  scratch_.clear();
  AppendUint(&scratch_, 1, row);
  AppendUint(&scratch_, 2, graph_id);
  AppendUint(&scratch_, 3, graph_node_id);
  AppendBytes(out, field, scratch_);
}

void ChunkBuilder::AddMemcpy(const MemcpyRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.bytes, r.copy_kind,
                          r.stream,   r.correlation_id,      r.flags};
  AppendGraphRef(&memcpy_graph_refs_, 8, memcpys_.rows(), r.graph_id, r.graph_node_id);
  memcpys_.AddRow(row);
  ++items_;
}

void ChunkBuilder::AddMemset(const MemsetRecord& r) {
  const uint64_t row[] = {r.start_ns, r.end_ns - r.start_ns, r.bytes, r.value,
                          r.stream,   r.correlation_id,      r.flags};
  AppendGraphRef(&memset_graph_refs_, 8, memsets_.rows(), r.graph_id, r.graph_node_id);
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
  AppendUint(&m, 1, r.start_ns);
  AppendUint(&m, 2, r.end_ns);
  AppendUint(&m, 3, r.type);
  AppendUint(&m, 4, r.stream);
  AppendUint(&m, 5, r.correlation_id);
  AppendUint(&m, 6, r.context);
  AppendUint(&m, 7, r.event);
  AppendBytes(&rows_[17], 17, m);
  ++items_;
}

void ChunkBuilder::AddOverhead(const OverheadRecord& r) {
  std::string& m = payload_;
  m.clear();
  AppendUint(&m, 1, r.start_ns);
  AppendUint(&m, 2, r.end_ns);
  AppendUint(&m, 3, r.kind);
  AppendUint(&m, 4, r.thread);
  AppendUint(&m, 5, r.correlation_id);
  AppendBytes(&rows_[18], 18, m);
  ++items_;
}

void ChunkBuilder::AddGraphNode(const GraphNodeSnapshotRecord& r) {
  std::string& m = payload_;
  m.clear();
  AppendUint(&m, 1, r.graph_id);
  AppendUint(&m, 2, r.graph_node_id);
  AppendUint(&m, 3, r.range_id);
  AppendUint(&m, 4, r.thread);
  AppendUint(&m, 5, r.time_ns);
  AppendBytes(&rows_[19], 19, m);
  ++items_;
}

void ChunkBuilder::AddPmSample(const PmSampleRecord& r) {
  std::string& m = payload_;
  m.clear();
  AppendUint(&m, 1, r.start_ns);
  AppendUint(&m, 2, r.end_ns);
  AppendUint(&m, 3, r.device);
  AppendUint(&m, 4, r.metric);
  wire::AppendDouble(&m, 5, r.value);
  AppendBytes(&rows_[20], 20, m);
  ++items_;
}

void ChunkBuilder::AddGraphLaunch(const GraphLaunchRecord& r) {
  std::string& m = payload_;
  m.clear();
  AppendUint(&m, 1, r.start_ns);
  AppendUint(&m, 2, r.end_ns);
  AppendUint(&m, 3, r.graph_id);
  AppendUint(&m, 4, r.stream);
  AppendUint(&m, 5, r.correlation_id);
  AppendBytes(&rows_[21], 21, m);
  ++items_;
}

void ChunkBuilder::AddCounterDelta(std::string_view name, uint64_t delta) {
  if (delta == 0) return;
  scratch_.clear();
  AppendBytes(&scratch_, 1, name);
  AppendUint(&scratch_, 2, delta);
  AppendBytes(&rows_[30], 30, scratch_);
  ++items_;
}

size_t ChunkBuilder::ApproximateBytes() const {
  size_t n = header_.size() + footer_.size() + kernel_graph_refs_.size() +
             memcpy_graph_refs_.size() + memset_graph_refs_.size();
  for (const auto& d : defs_) n += d.size();
  for (const auto& r : rows_) n += r.size();
  // Column batches: a few bytes a row.
  n += 10 * (kernels_.rows() + memcpys_.rows() + memsets_.rows() + apis_.rows() + launches_.rows());
  return n;
}

void ChunkBuilder::FinishFrame(std::string* out) {
  if (items_ == 0) return;
  payload_.clear();
  // Fields in number order, as a conforming serializer would write them.
  wire::AppendNonEmptyBytes(&payload_, 1, header_);
  for (int f = 2; f <= 7; ++f) payload_.append(defs_[f]);
  payload_.append(rows_[10]);
  payload_.append(rows_[11]);
  auto append_batch = [&](uint32_t field, ColumnBatch& batch, std::string* extra) {
    if (batch.rows() == 0) return;
    scratch_.clear();
    batch.SerializeAndClear(&scratch_);
    if (extra != nullptr) {
      scratch_.append(*extra);
      extra->clear();
    }
    AppendBytes(&payload_, field, scratch_);
  };
  append_batch(12, kernels_, &kernel_graph_refs_);
  append_batch(13, memcpys_, &memcpy_graph_refs_);
  append_batch(14, memsets_, &memset_graph_refs_);
  append_batch(15, apis_, nullptr);
  append_batch(16, launches_, nullptr);
  for (int f = 17; f <= 21; ++f) payload_.append(rows_[f]);
  payload_.append(rows_[30]);
  wire::AppendNonEmptyBytes(&payload_, 31, footer_);

  wire::AppendFixed32LE(out, static_cast<uint32_t>(payload_.size()));
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(payload_.data()),
                          static_cast<uInt>(payload_.size()));
  wire::AppendFixed32LE(out, static_cast<uint32_t>(crc));
  out->append(payload_);

  header_.clear();
  footer_.clear();
  for (auto& d : defs_) d.clear();
  for (auto& r : rows_) r.clear();
  items_ = 0;
}

void AppendFileMagic(std::string* out) { out->append(kTraceMagic, sizeof(kTraceMagic)); }

}  // namespace tracer
