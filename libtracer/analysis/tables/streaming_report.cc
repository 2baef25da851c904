#include "libtracer/analysis/tables/streaming_report.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/kineto_json_stream.h"
#include "libtracer/analysis/importers/nsys_sqlite_stream.h"
#include "libtracer/analysis/read/frame_scanner.h"
#include "libtracer/analysis/tables/core_tables.h"
#include "libtracer/analysis/tables/stream_aggregator.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "proto/trace.pb.h"

namespace tracer::analysis {

const std::vector<std::string>& StreamableTables() {
  // Every core table: both paths fill the same rows (row_builder.h).
  static const std::vector<std::string> kTables = [] {
    std::vector<std::string> names;
    for (const CoreTable& t : CoreTableList()) names.emplace_back(t.name);
    return names;
  }();
  return kTables;
}

bool IsStreamableTable(std::string_view name) { return FindCoreTable(name) != nullptr; }

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
                                const AttributionOptions& attribution,
                                const RangeNameRules* names) {
  StreamingResult result;
  Trace trace;  // only its string table grows: distinct names
  TableRows rows;
  rows.strings = &trace.strings;
  size_t processes = 0;  // the process's index, as in the whole trace
  // One process's aggregation ends: its summary row and exactness.
  auto finish = [&](StreamAggregator& aggregator, const ProcessTrace& process,
                    const std::string& path) {
    ++processes;
    aggregator.Finish(process, trace);
    if (!aggregator.inexact_reason().empty())
      result.inexact.push_back(path + ": " + aggregator.inexact_reason());
    result.peak_nodes = std::max(result.peak_nodes, aggregator.stats().peak_nodes);
    result.peak_pending_launches =
        std::max(result.peak_pending_launches, aggregator.stats().peak_pending_launches);
  };
  std::optional<RangeNameMapper> mapper;
  if (names != nullptr) mapper.emplace(*names, &trace.strings);
  ProcessTrace renamed;  // a frame whose range names change; reused
  const std::string* current_path = nullptr;
  std::string pm_path;  // the first input with PM samples
  auto add_batch = [&](StreamAggregator& aggregator, const ProcessTrace& batch) {
    result.has_kernels |= !batch.kernels.empty();
    result.has_api |= !batch.api_calls.empty();
    result.has_memory |= !batch.memcpys.empty() || !batch.memsets.empty();
    if (!batch.pm_samples.empty() && pm_path.empty()) pm_path = *current_path;
    // The readers hand out their own frame read-only: a frame with names to
    // change is copied (into storage reused from frame to frame).
    const bool rename =
        mapper && std::any_of(batch.ranges.begin(), batch.ranges.end(),
                              [&](const RangeRecord& r) { return mapper->Map(r.name) != r.name; });
    if (!rename) {
      aggregator.AddBatch(batch);
      return;
    }
    renamed = batch;
    mapper->Apply(&renamed.ranges);
    aggregator.AddBatch(renamed);
  };
  for (const StreamingInput& in : inputs) {
    current_path = &in.path;
    const bool nsys = IsNsysExport(in.path);
    if (nsys || IsKinetoTrace(in.path)) {
      // An import: its streaming importer hands out processes one after
      // another, in the tracer's record order (nsys_sqlite_stream.h,
      // kineto_json_stream.h).
      std::unique_ptr<StreamAggregator> aggregator;
      auto current = [&]() -> StreamAggregator& {
        if (!aggregator) {
          aggregator = std::make_unique<StreamAggregator>(processes, &rows, attribution, o);
        }
        return *aggregator;
      };
      // --rank / --pid: an unselected process is read past, not aggregated.
      auto on_batch = [&](const ProcessTrace& batch) {
        if (o.processes.Accepts(batch.header)) add_batch(current(), batch);
      };
      auto on_process = [&](const ProcessTrace& process) {
        if (o.processes.Accepts(process.header)) {
          finish(current(), process, in.path);
          ++result.processes_selected;
        }
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
    StreamAggregator aggregator(processes, &rows, attribution, o);
    ProcessTrace process;
    std::string error;
    bool foreign = false;
    const bool selected = o.processes.empty();
    bool skipped = false;  // --rank / --pid leave this process out
    const bool ok = StreamTraceFile(
        in.path, &trace.strings, &process,
        [&](const ProcessTrace& batch) {
          // Streams written by `tracer import` have no launch records and
          // not the recorded order (nsys exports are read above instead).
          if (batch.header.source != "tracer") foreign = true;
          if (!selected && !o.processes.Accepts(batch.header)) skipped = true;
          if (foreign || skipped) return;
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
    if (skipped || !o.processes.Accepts(process.header)) continue;
    ++result.processes_selected;
    finish(aggregator, process, in.path);
  }
  if (result.files_read > 0 && result.processes_selected == 0) {
    result.errors.push_back("no process matches --rank / --pid");
    result.files_read = 0;
  }
  if (result.files_read == 0) return result;

  std::vector<std::string> chosen = tables;
  result.has_pm_samples = !pm_path.empty();
  if (chosen.empty() && result.has_pm_samples) {
    // The default tables of such an input include metrics, which attribute
    // each sample to the GPU spans of every range instance it overlaps: the
    // samples can come anywhere in the file, before or after the instances
    // they overlap, so the bounded path would hold either all samples or all
    // spans. The whole-trace path computes it (the caller reads whole).
    result.inexact.push_back(pm_path +
                             ": it holds PM samples, and the metrics table shown for them is "
                             "computed from the whole trace");
    // The other default tables are exact: a caller that cannot read the
    // input whole (it does not fit memory) shows them without metrics.
    result.metrics_left_out = true;
  }
  if (chosen.empty()) {
    chosen = {"summary", "ranges"};
    if (result.has_kernels) chosen.insert(chosen.end(), {"kernels", "gpu"});
    if (result.has_memory) chosen.push_back("memory");
    if (result.has_api) chosen.push_back("api");
  }
  std::erase_if(rows.range_kernels, [](const auto& kv) { return kv.second.empty(); });
  result.tables = RenderCoreTables(rows, chosen, o);
  return result;
}

}  // namespace tracer::analysis
