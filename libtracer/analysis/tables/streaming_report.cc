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

namespace {

// The state of one StreamingTables call: the rows every input's processes
// add to, and what the result says about them.
class StreamingRun {
 public:
  StreamingRun(const ReportOptions& o, const AttributionOptions& attribution,
               const RangeNameRules* names)
      : o_(o), attribution_(attribution) {
    rows_.strings = &trace_.strings;
    if (names != nullptr) mapper_.emplace(*names, &trace_.strings);
  }

  // One input, by its format.
  void Read(const StreamingInput& in) {
    current_path_ = &in.path;
    const bool nsys = IsNsysExport(in.path);
    if (nsys || IsKinetoTrace(in.path)) {
      ReadImport(in, nsys);
    } else {
      ReadStream(in);
    }
  }

  // The tables asked for (tables empty: the in-memory defaults).
  StreamingResult Finish(const std::vector<std::string>& tables) {
    if (result_.files_read > 0 && result_.processes_selected == 0) {
      result_.errors.push_back("no process matches --rank / --pid");
      result_.files_read = 0;
    }
    if (result_.files_read == 0) return std::move(result_);
    result_.has_pm_samples = !pm_path_.empty();
    if (tables.empty() && result_.has_pm_samples) LeaveOutMetrics();
    std::erase_if(rows_.range_kernels, [](const auto& kv) { return kv.second.empty(); });
    result_.tables = RenderCoreTables(rows_, tables.empty() ? DefaultTables() : tables, o_);
    return std::move(result_);
  }

 private:
  // One process's aggregation ends: its summary row and exactness.
  void FinishProcess(StreamAggregator& aggregator, const ProcessTrace& process,
                     const std::string& path) {
    ++processes_;
    aggregator.Finish(process, trace_);
    if (!aggregator.inexact_reason().empty())
      result_.inexact.push_back(path + ": " + aggregator.inexact_reason());
    result_.peak_nodes = std::max(result_.peak_nodes, aggregator.stats().peak_nodes);
    result_.peak_pending_launches =
        std::max(result_.peak_pending_launches, aggregator.stats().peak_pending_launches);
  }

  void AddBatch(StreamAggregator& aggregator, const ProcessTrace& batch) {
    result_.has_kernels |= !batch.kernels.empty();
    result_.has_api |= !batch.api_calls.empty();
    result_.has_memory |= !batch.memcpys.empty() || !batch.memsets.empty();
    if (!batch.pm_samples.empty() && pm_path_.empty()) pm_path_ = *current_path_;
    // The readers hand out their own frame read-only: a frame with names to
    // change is copied (into storage reused from frame to frame).
    const bool rename =
        mapper_ && std::any_of(batch.ranges.begin(), batch.ranges.end(), [&](const RangeRecord& r) {
          return mapper_->Map(r.name) != r.name;
        });
    if (!rename) {
      aggregator.AddBatch(batch);
      return;
    }
    renamed_ = batch;
    mapper_->Apply(&renamed_.ranges);
    aggregator.AddBatch(renamed_);
  }

  // An import: its streaming importer hands out processes one after
  // another, in the tracer's record order (nsys_sqlite_stream.h,
  // kineto_json_stream.h).
  void ReadImport(const StreamingInput& in, bool nsys) {
    std::unique_ptr<StreamAggregator> aggregator;
    auto current = [&]() -> StreamAggregator& {
      if (!aggregator) {
        aggregator = std::make_unique<StreamAggregator>(processes_, &rows_, attribution_, o_);
      }
      return *aggregator;
    };
    // --rank / --pid: an unselected process is read past, not aggregated.
    auto on_batch = [&](const ProcessTrace& batch) {
      if (o_.processes.Accepts(batch.header)) AddBatch(current(), batch);
    };
    auto on_process = [&](const ProcessTrace& process) {
      if (o_.processes.Accepts(process.header)) {
        FinishProcess(current(), process, in.path);
        ++result_.processes_selected;
      }
      aggregator.reset();
    };
    std::string error;
    bool unsupported = false;
    if (in.progress) in.progress(0, 1);
    const bool ok = nsys
                        ? importers::StreamNsysSqlite(in.path, &trace_.strings,
                                                      {on_batch, on_process}, &error, &unsupported)
                        : importers::StreamKinetoJson(in.path, &trace_.strings,
                                                      {on_batch, on_process}, &error, &unsupported);
    if (!ok) {
      (unsupported ? result_.inexact : result_.errors).push_back(error);
      return;
    }
    if (in.progress) in.progress(1, 1);
    ++result_.files_read;
  }

  // A stream recorded by the tracer: one process.
  void ReadStream(const StreamingInput& in) {
    StreamAggregator aggregator(processes_, &rows_, attribution_, o_);
    ProcessTrace process;
    std::string error;
    bool foreign = false;
    const bool selected = o_.processes.empty();
    bool skipped = false;  // --rank / --pid leave this process out
    const bool ok = StreamTraceFile(
        in.path, &trace_.strings, &process,
        [&](const ProcessTrace& batch) {
          // Streams written by `tracer import` have no launch records and
          // not the recorded order (nsys exports are read as imports).
          if (batch.header.source != "tracer") foreign = true;
          if (!selected && !o_.processes.Accepts(batch.header)) skipped = true;
          if (foreign || skipped) return;
          AddBatch(aggregator, batch);
        },
        &result_.warnings, &error, in.progress);
    if (!ok) {
      result_.errors.push_back(error);
      return;
    }
    if (foreign) {
      result_.errors.push_back(in.path + ": written by an importer (" + process.header.source +
                               "), not recorded by the tracer; the streaming path needs the "
                               "tracer's record order (drop --stream)");
      return;
    }
    ++result_.files_read;
    if (skipped || !o_.processes.Accepts(process.header)) return;
    ++result_.processes_selected;
    FinishProcess(aggregator, process, in.path);
  }

  // The default tables of an input with PM samples include metrics, which
  // attribute each sample to the GPU spans of every range instance it
  // overlaps: the samples can come anywhere in the file, before or after the
  // instances they overlap, so the bounded path would hold either all
  // samples or all spans. The whole-trace path computes it (the caller reads
  // whole).
  void LeaveOutMetrics() {
    result_.inexact.push_back(pm_path_ +
                              ": it holds PM samples, and the metrics table shown for them is "
                              "computed from the whole trace");
    // The other default tables are exact: a caller that cannot read the
    // input whole (it does not fit memory) shows them without metrics.
    result_.metrics_left_out = true;
  }

  // The in-memory defaults, metrics aside.
  std::vector<std::string> DefaultTables() const {
    std::vector<std::string> chosen = {"summary", "ranges"};
    if (result_.has_kernels) chosen.insert(chosen.end(), {"kernels", "gpu"});
    if (result_.has_memory) chosen.push_back("memory");
    if (result_.has_api) chosen.push_back("api");
    return chosen;
  }

  const ReportOptions& o_;
  const AttributionOptions& attribution_;
  StreamingResult result_;
  Trace trace_;  // only its string table grows: distinct names
  TableRows rows_;
  size_t processes_ = 0;  // the next process's index, as in the whole trace
  std::optional<RangeNameMapper> mapper_;
  ProcessTrace renamed_;  // a frame whose range names change; reused
  const std::string* current_path_ = nullptr;
  std::string pm_path_;  // the first input with PM samples
};

}  // namespace

StreamingResult StreamingTables(const std::vector<StreamingInput>& inputs,
                                const std::vector<std::string>& tables, const ReportOptions& o,
                                const AttributionOptions& attribution,
                                const RangeNameRules* names) {
  StreamingRun run(o, attribution, names);
  for (const StreamingInput& in : inputs) run.Read(in);
  return run.Finish(tables);
}

}  // namespace tracer::analysis
