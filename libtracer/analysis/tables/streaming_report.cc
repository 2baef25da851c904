#include "libtracer/analysis/tables/streaming_report.h"

#include <algorithm>
#include <fstream>
#include <memory>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/kineto_json_stream.h"
#include "libtracer/analysis/importers/nsys_sqlite_stream.h"
#include "libtracer/analysis/read/frame_scanner.h"
#include "libtracer/analysis/tables/stream_aggregator.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "proto/trace.pb.h"

namespace tracer::analysis {

const std::vector<std::string>& StreamableTables() {
  static const std::vector<std::string> kTables = {"summary", "ranges", "kernels", "range-kernels",
                                                   "gpu",     "memory", "api"};
  return kTables;
}

bool IsStreamableTable(std::string_view name) {
  const auto& t = StreamableTables();
  return std::find(t.begin(), t.end(), name) != t.end();
}

bool IsRecordedStream(const std::string& path) {
  FrameScanner scanner(path);
  std::string error;
  std::string_view payload;
  if (!scanner.Open(&error) || scanner.Next(&payload) != FrameScanner::Result::kFrame) return false;
  proto::Chunk chunk;
  return chunk.ParseFromArray(payload.data(), static_cast<int>(payload.size())) &&
         chunk.has_header() &&
         (chunk.header().source().empty() || chunk.header().source() == "tracer");
}

bool IsNsysExport(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof(head));
  return importers::DetectImportFormat(std::string_view(head, static_cast<size_t>(in.gcount()))) ==
         importers::ImportFormat::kNsysSqlite;
}

bool IsKinetoTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof(head));
  const std::string_view first(head, static_cast<size_t>(in.gcount()));
  return !LooksLikeTraceStream(first) &&
         importers::DetectImportFormat(first) == importers::ImportFormat::kKinetoJson;
}

StreamingResult StreamingTables(const std::vector<StreamingInput>& inputs,
                                const std::vector<std::string>& tables, const ReportOptions& o,
                                const AttributionOptions& attribution) {
  StreamingResult result;
  Trace trace;  // only its string table grows: distinct names
  TableRows rows;
  rows.strings = &trace.strings;
  std::vector<SummaryRow> summary;
  std::vector<std::string> notes;
  size_t processes = 0;  // the row key with --by-process, as the whole trace's index
  // One process's aggregation ends: its summary row and exactness.
  auto finish = [&](StreamAggregator& aggregator, const ProcessTrace& process,
                    const std::string& path) {
    ++processes;
    rows.process_labels.push_back(ProcessLabelOf(process));
    summary.push_back(aggregator.Finish(process, trace, o, &notes));
    if (!aggregator.inexact_reason().empty())
      result.inexact.push_back(path + ": " + aggregator.inexact_reason());
    result.peak_nodes = std::max(result.peak_nodes, aggregator.stats().peak_nodes);
    result.peak_pending_launches =
        std::max(result.peak_pending_launches, aggregator.stats().peak_pending_launches);
  };
  auto add_batch = [&](StreamAggregator& aggregator, const ProcessTrace& batch) {
    result.has_kernels |= !batch.kernels.empty();
    result.has_api |= !batch.api_calls.empty();
    result.has_memory |= !batch.memcpys.empty() || !batch.memsets.empty();
    aggregator.AddBatch(batch);
  };
  for (const StreamingInput& in : inputs) {
    const bool nsys = IsNsysExport(in.path);
    if (nsys || IsKinetoTrace(in.path)) {
      // An import: its streaming importer hands out processes one after
      // another, in the tracer's record order (nsys_sqlite_stream.h,
      // kineto_json_stream.h).
      std::unique_ptr<StreamAggregator> aggregator;
      auto current = [&]() -> StreamAggregator& {
        if (!aggregator) {
          aggregator =
              std::make_unique<StreamAggregator>(o.by_process ? processes : 0, &rows, attribution);
        }
        return *aggregator;
      };
      auto on_batch = [&](const ProcessTrace& batch) { add_batch(current(), batch); };
      auto on_process = [&](const ProcessTrace& process) {
        finish(current(), process, in.path);
        aggregator.reset();
      };
      std::string error;
      bool unsupported = false;
      if (in.progress) in.progress(0, 1);
      const bool ok =
          nsys ? importers::StreamNsysSqlite(in.path, &trace.strings, {on_batch, on_process},
                                             &error, &unsupported)
               : importers::StreamKinetoJson(in.path, &trace.strings, {on_batch, on_process},
                                             &error, &unsupported);
      if (!ok) {
        if (unsupported) {
          result.inexact.push_back(error);
        } else {
          result.errors.push_back(error);
        }
        continue;
      }
      if (in.progress) in.progress(1, 1);
      ++result.files_read;
      continue;
    }
    StreamAggregator aggregator(o.by_process ? processes : 0, &rows, attribution);
    ProcessTrace process;
    std::string error;
    bool foreign = false;
    const bool ok = StreamTraceFile(
        in.path, &trace.strings, &process,
        [&](const ProcessTrace& batch) {
          // Streams written by `tracer import` have no launch records and
          // not the recorded order (nsys exports are read above instead).
          if (batch.header.source != "tracer") foreign = true;
          if (foreign) return;
          add_batch(aggregator, batch);
        },
        &result.warnings, &error, in.progress);
    if (!ok) {
      result.errors.push_back(error);
      continue;
    }
    if (foreign) {
      result.errors.push_back(in.path + ": written by an importer (" + process.header.source +
                              "), not recorded by the tracer; the streaming path needs the "
                              "tracer's record order (drop --stream)");
      continue;
    }
    ++result.files_read;
    finish(aggregator, process, in.path);
  }
  if (result.files_read == 0) return result;

  std::vector<std::string> chosen = tables;
  if (chosen.empty()) {
    chosen = {"summary", "ranges"};
    if (result.has_kernels) chosen.insert(chosen.end(), {"kernels", "gpu"});
    if (result.has_memory) chosen.push_back("memory");
    if (result.has_api) chosen.push_back("api");
  }
  std::erase_if(rows.range_kernels, [](const auto& kv) { return kv.second.empty(); });
  for (const std::string& t : chosen) {
    if (t == "summary") result.tables.push_back(RenderSummaryTable(summary, notes));
    if (t == "ranges") result.tables.push_back(RenderRangesTable(rows, o));
    if (t == "kernels") result.tables.push_back(RenderKernelsTable(rows, o));
    if (t == "range-kernels") result.tables.push_back(RenderRangeKernelsTable(rows, o));
    if (t == "gpu") result.tables.push_back(RenderGpuProjectionTable(rows, o));
    if (t == "memory") result.tables.push_back(RenderMemoryOpsTable(rows, o));
    if (t == "api") result.tables.push_back(RenderApiTable(rows, o));
  }
  return result;
}

}  // namespace tracer::analysis
