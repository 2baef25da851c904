#include "trace_handle.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdlib>
#include <utility>
#include <variant>

#include "columns.h"
#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/importers/range_names.h"
#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/regex_rules.h"
#include "libtracer/analysis/reports/record_selection.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/tables/core_tables.h"
#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::python {
namespace {

// Python reports an error by raising: nanobind turns a TraceError thrown
// here into tracer.TraceError. The one throw of the module, at its boundary;
// the library below hands its expected failures up as a Status.
[[noreturn]] void Raise(const std::string& message) { throw TraceError(message); }
void RaiseIfError(const Status& status) {
  if (!status.ok()) Raise(status.message());
}

using analysis::AnalyzedTrace;
using analysis::OpKind;
using analysis::ProcessTrace;

void ParseMainThread(const std::string& s, analysis::AttributionOptions* o) {
  if (!analysis::ParseMainThreadOption(s, o)) {
    Raise("main_thread: expected 'auto', 'off' or an OS thread id, got '" + s + "'");
  }
}

// --rank / --pid, as `tracer report` applies them (before names are
// normalised).
void SelectProcesses(const std::vector<int64_t>& ranks, const std::vector<int64_t>& pids,
                     analysis::Trace* trace) {
  analysis::ProcessSelection processes;
  processes.ranks = ranks;
  processes.pids = pids;
  if (const std::string e = analysis::SelectProcesses(processes, trace); !e.empty()) {
    Raise(e);
  }
}

// --steps / --time (after names are normalised: operator ranges are never
// the step); the note the tables carry.
std::string SelectRecords(const std::string& steps, const std::string& time,
                          const std::string& step_range,
                          const analysis::AttributionOptions& attribution, analysis::Trace* trace) {
  const auto selected =
      analysis::reports::SelectRecords({steps, time, step_range}, attribution, trace);
  RaiseIfError(selected.status());
  return *selected;
}

const char* CopyKindName(uint32_t kind) {
  static const char* const kNames[] = {
      "memcpy (unknown)", "memcpy HtoD", "memcpy DtoH", "memcpy HtoA", "memcpy AtoH", "memcpy AtoA",
      "memcpy AtoD",      "memcpy DtoA", "memcpy DtoD", "memcpy HtoH", "memcpy PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "memcpy (unknown)";
}

int64_t OsTid(const ProcessTrace& p, uint32_t thread) {
  return thread < p.threads.size() ? static_cast<int64_t>(p.threads[thread].os_tid) : 0;
}

// Per-process columns every record table starts with.
struct ProcessColumns {
  std::vector<int32_t> process, rank;
  std::vector<int64_t> pid;
  void Push(size_t index, const ProcessTrace& p) {
    process.push_back(static_cast<int32_t>(index));
    rank.push_back(p.header.rank);
    pid.push_back(p.header.pid);
  }
  void Reserve(size_t n) {
    process.reserve(n);
    rank.reserve(n);
    pid.reserve(n);
  }
  void MoveTo(ColumnSet* out) {
    out->Add("process", std::move(process));
    out->Add("rank", std::move(rank));
    out->Add("pid", std::move(pid));
  }
};

const char* KindName(analysis::ColumnKind k) {
  switch (k) {
    case analysis::ColumnKind::kText:
      return "text";
    case analysis::ColumnKind::kCount:
      return "count";
    case analysis::ColumnKind::kDuration:
      return "duration";
    case analysis::ColumnKind::kPercent:
      return "percent";
    case analysis::ColumnKind::kRatio:
      return "ratio";
    case analysis::ColumnKind::kNumber:
      return "number";
    case analysis::ColumnKind::kBytes:
      return "bytes";
  }
  return "text";
}

// One report table column as (name, kind, values, valid): int64 when every
// cell is an integer, float64 when one is a double (the JSON output's
// numbers), a list of str / None for text.
nb::tuple ReportColumn(const analysis::Table& t, size_t c) {
  bool any_double = false, any_text = false;
  for (const auto& row : t.rows) {
    if (c >= row.size()) continue;
    any_double |= std::holds_alternative<double>(row[c]);
    any_text |= std::holds_alternative<std::string>(row[c]);
  }
  const analysis::Column& col = t.columns[c];
  if (any_text || col.kind == analysis::ColumnKind::kText) {
    nb::list values;
    for (const auto& row : t.rows) {
      const analysis::Cell* cell = c < row.size() ? &row[c] : nullptr;
      if (cell == nullptr || std::holds_alternative<std::monostate>(*cell)) {
        values.append(nb::none());
      } else if (const auto* s = std::get_if<std::string>(cell)) {
        values.append(nb::str(s->data(), s->size()));
      } else if (const auto* i = std::get_if<int64_t>(cell)) {
        values.append(nb::int_(*i));
      } else {
        values.append(nb::float_(std::get<double>(*cell)));
      }
    }
    return nb::make_tuple(col.name, KindName(col.kind), values, nb::none());
  }
  std::vector<uint8_t> valid(t.rows.size(), 0);
  if (any_double) {
    std::vector<double> values(t.rows.size(), 0);
    for (size_t r = 0; r < t.rows.size(); ++r) {
      if (c >= t.rows[r].size()) continue;
      const analysis::Cell& cell = t.rows[r][c];
      if (const auto* i = std::get_if<int64_t>(&cell)) {
        values[r] = static_cast<double>(*i);
        valid[r] = 1;
      } else if (const auto* d = std::get_if<double>(&cell); d != nullptr && std::isfinite(*d)) {
        // The JSON output writes a non-finite number as null.
        values[r] = *d;
        valid[r] = 1;
      }
    }
    return nb::make_tuple(col.name, KindName(col.kind), ToNumpy(std::move(values)),
                          ToNumpy(std::move(valid)));
  }
  std::vector<int64_t> values(t.rows.size(), 0);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (c >= t.rows[r].size()) continue;
    if (const auto* i = std::get_if<int64_t>(&t.rows[r][c])) {
      values[r] = *i;
      valid[r] = 1;
    }
  }
  return nb::make_tuple(col.name, KindName(col.kind), ToNumpy(std::move(values)),
                        ToNumpy(std::move(valid)));
}

analysis::SortKey ParseSort(const std::string& s) {
  if (s == "total") return analysis::SortKey::kTotal;
  if (s == "count") return analysis::SortKey::kCount;
  if (s == "avg") return analysis::SortKey::kAvg;
  if (s == "name") return analysis::SortKey::kName;
  Raise("sort: unknown key '" + s + "' (total, count, avg, name)");
}

}  // namespace

TraceHandle::TraceHandle(const LoadOptions& options)
    : trace_(std::make_unique<analysis::Trace>()), step_range_(options.step_range) {
  ParseMainThread(options.main_thread, &attribution_);
  analysis::RangeNameRules names;
  names.set_keep_raw(options.raw_names);
  if (!options.name_rules.empty()) {
    RaiseIfError(names.AddUserRulesFile(options.name_rules));
  }
  {
    nb::gil_scoped_release unlocked;
    for (const std::string& path : options.paths) {
      std::string error;
      if (!analysis::LoadInput(path, trace_.get(), &error)) Raise(error);
    }
  }
  SelectProcesses(options.ranks, options.pids, trace_.get());
  {
    nb::gil_scoped_release unlocked;
    analysis::NormalizeRangeNames(trace_.get(), names);
  }
  selection_note_ =
      SelectRecords(options.steps, options.time, options.step_range, attribution_, trace_.get());
  nb::gil_scoped_release unlocked;
  analyzed_ = std::make_unique<AnalyzedTrace>(*trace_, attribution_);
  int64_t offset = 0;
  for (const ProcessTrace& p : trace_->processes) {
    range_offset_.push_back(offset);
    offset += static_cast<int64_t>(p.ranges.size());
  }
}

nb::list TraceHandle::Processes() const {
  nb::list out;
  for (size_t i = 0; i < trace_->processes.size(); ++i) {
    const ProcessTrace& p = trace_->processes[i];
    nb::dict d;
    d["process"] = i;
    d["label"] = analyzed_->ProcessLabel(i);
    d["rank"] = p.header.rank;
    d["pid"] = p.header.pid;
    d["world_size"] = p.header.world_size;
    d["local_rank"] = p.header.local_rank;
    d["host"] = p.header.host;
    d["device"] = p.header.device;
    d["source"] = p.header.source;
    d["file"] = p.source_file;
    d["ranges"] = p.ranges.size();
    d["kernels"] = p.kernels.size();
    d["memcpys"] = p.memcpys.size();
    d["memsets"] = p.memsets.size();
    d["api_calls"] = p.api_calls.size();
    d["pm_samples"] = p.pm_samples.size();
    out.append(d);
  }
  return out;
}

nb::list TraceHandle::Ranges() const {
  size_t n = 0;
  for (const ProcessTrace& p : trace_->processes) n += p.ranges.size();
  ProcessColumns proc;
  proc.Reserve(n);
  std::vector<int64_t> tid, start, end, duration, parent;
  std::vector<int32_t> depth, domain, name, raw_name, kind;
  std::vector<int64_t> gpu_start, gpu_end, gpu_proj, gpu_busy, kernel_ns, gpu_ops, kernels;
  std::vector<uint8_t> has_end, has_gpu;
  for (auto* v : {&tid, &start, &end, &duration, &parent, &gpu_start, &gpu_end, &gpu_proj,
                  &gpu_busy, &kernel_ns, &gpu_ops, &kernels}) {
    v->reserve(n);
  }
  const size_t strings = trace_->strings.size();
  Dictionary domains(0), names(strings), raw_names(strings), kinds(0);
  {
    nb::gil_scoped_release unlocked;
    for (size_t pi = 0; pi < trace_->processes.size(); ++pi) {
      const ProcessTrace& p = trace_->processes[pi];
      const analysis::ProcessAnalysis& pa = analyzed_->process(pi);
      const analysis::Projection& projection = pa.projection();
      for (uint32_t i = 0; i < p.ranges.size(); ++i) {
        const RangeRecord& r = p.ranges[i];
        proc.Push(pi, p);
        tid.push_back(OsTid(p, r.thread));
        domain.push_back(domains.ByText(analyzed_->DomainName(pi, r.domain)));
        name.push_back(names.ById(r.name, analyzed_->RangeName(r)));
        const uint32_t raw = r.raw_name != 0 ? r.raw_name : r.name;
        raw_name.push_back(raw_names.ById(raw, trace_->strings.Get(raw)));
        kind.push_back(kinds.ByText(r.kind == RangeKind::kStartEnd ? "start_end" : "push_pop"));
        depth.push_back(static_cast<int32_t>(pa.ranges.Depth(i)));
        const uint32_t par = pa.ranges.Parent(i);
        parent.push_back(par == analysis::kNoRange ? -1 : range_offset_[pi] + par);
        start.push_back(static_cast<int64_t>(r.start_ns));
        end.push_back(static_cast<int64_t>(r.end_ns));
        const bool closed = (r.flags & kRangeFlagUnclosed) == 0 && r.end_ns >= r.start_ns;
        has_end.push_back(closed);
        duration.push_back(closed ? static_cast<int64_t>(r.end_ns - r.start_ns) : 0);
        const analysis::InstanceProjection* proj = projection.Of(i);
        has_gpu.push_back(proj != nullptr);
        const analysis::GpuSpan s = proj != nullptr ? proj->total : analysis::GpuSpan{};
        gpu_start.push_back(static_cast<int64_t>(s.start_ns));
        gpu_end.push_back(static_cast<int64_t>(s.end_ns));
        gpu_proj.push_back(static_cast<int64_t>(s.span_ns()));
        gpu_busy.push_back(static_cast<int64_t>(s.busy_ns));
        kernel_ns.push_back(static_cast<int64_t>(s.kernel_ns));
        gpu_ops.push_back(static_cast<int64_t>(s.op_count));
        kernels.push_back(static_cast<int64_t>(s.kernel_count));
      }
    }
  }
  ColumnSet out;
  proc.MoveTo(&out);
  out.Add("tid", std::move(tid));
  out.AddDictionary("domain", std::move(domain), domains);
  out.AddDictionary("name", std::move(name), names);
  out.AddDictionary("raw_name", std::move(raw_name), raw_names);
  out.AddDictionary("kind", std::move(kind), kinds);
  out.Add("depth", std::move(depth));
  out.Add("parent", std::move(parent));
  out.Add("start_ns", std::move(start));
  out.Add("end_ns", std::move(end));
  out.AddNullable("cpu_ns", std::move(duration), std::move(has_end));
  std::vector<uint8_t> g = has_gpu;
  out.AddNullable("gpu_start_ns", std::move(gpu_start), std::vector<uint8_t>(g));
  out.AddNullable("gpu_end_ns", std::move(gpu_end), std::vector<uint8_t>(g));
  out.AddNullable("gpu_proj_ns", std::move(gpu_proj), std::vector<uint8_t>(g));
  out.AddNullable("gpu_busy_ns", std::move(gpu_busy), std::vector<uint8_t>(g));
  out.AddNullable("kernel_ns", std::move(kernel_ns), std::vector<uint8_t>(g));
  out.AddNullable("gpu_ops", std::move(gpu_ops), std::vector<uint8_t>(g));
  out.AddNullable("kernels", std::move(kernels), std::move(has_gpu));
  return out.release();
}

nb::list TraceHandle::GpuOps() const {
  size_t n = 0;
  for (const ProcessTrace& p : trace_->processes) {
    n += p.kernels.size() + p.memcpys.size() + p.memsets.size();
  }
  ProcessColumns proc;
  proc.Reserve(n);
  std::vector<int32_t> kind, name, device, range_name;
  std::vector<int64_t> stream, start, end, duration, bytes, correlation, graph, launch_tid,
      launch_ns, range;
  std::vector<uint8_t> has_bytes, launched, inherited;
  for (auto* v : {&stream, &start, &end, &duration, &bytes, &correlation, &graph, &launch_tid,
                  &launch_ns, &range}) {
    v->reserve(n);
  }
  const size_t strings = trace_->strings.size();
  Dictionary kinds(0), names(strings), range_names(strings);
  {
    nb::gil_scoped_release unlocked;
    for (size_t pi = 0; pi < trace_->processes.size(); ++pi) {
      const ProcessTrace& p = trace_->processes[pi];
      const analysis::Attribution& attribution = analyzed_->process(pi).attribution;
      const int32_t op_kind[3] = {kinds.ByText("kernel"), kinds.ByText("memcpy"),
                                  kinds.ByText("memset")};
      auto common = [&](OpKind k, size_t i, uint64_t s, uint64_t e, uint32_t str, uint64_t corr,
                        uint64_t graph_id) {
        proc.Push(pi, p);
        kind.push_back(op_kind[static_cast<int>(k)]);
        const analysis::StreamInfo* info = str < p.streams.size() ? &p.streams[str] : nullptr;
        device.push_back(info != nullptr ? static_cast<int32_t>(info->device) : -1);
        stream.push_back(info != nullptr ? static_cast<int64_t>(info->stream) : 0);
        start.push_back(static_cast<int64_t>(s));
        end.push_back(static_cast<int64_t>(e));
        duration.push_back(static_cast<int64_t>(e - s));
        correlation.push_back(static_cast<int64_t>(corr));
        graph.push_back(static_cast<int64_t>(graph_id));
        const analysis::OpAttribution a = attribution.Of(k, i);
        launched.push_back(a.source != analysis::AttributionSource::kNone);
        launch_tid.push_back(OsTid(p, a.thread));
        launch_ns.push_back(static_cast<int64_t>(a.launch_ns));
        inherited.push_back(a.inherited);
        const auto stack = attribution.Stack(k, i);
        if (stack.empty()) {
          range.push_back(-1);
          range_name.push_back(-1);
        } else {
          range.push_back(range_offset_[pi] + stack.front());
          const RangeRecord& r = p.ranges[stack.front()];
          range_name.push_back(range_names.ById(r.name, analyzed_->RangeName(r)));
        }
      };
      for (size_t i = 0; i < p.kernels.size(); ++i) {
        const KernelRecord& k = p.kernels[i];
        common(OpKind::kKernel, i, k.start_ns, k.end_ns, k.stream, k.correlation_id, k.graph_id);
        name.push_back(names.ById(k.name, trace_->strings.Get(k.name)));
        bytes.push_back(0);
        has_bytes.push_back(0);
      }
      for (size_t i = 0; i < p.memcpys.size(); ++i) {
        const MemcpyRecord& m = p.memcpys[i];
        common(OpKind::kMemcpy, i, m.start_ns, m.end_ns, m.stream, m.correlation_id, m.graph_id);
        name.push_back(names.ByText(CopyKindName(m.copy_kind)));
        bytes.push_back(static_cast<int64_t>(m.bytes));
        has_bytes.push_back(1);
      }
      for (size_t i = 0; i < p.memsets.size(); ++i) {
        const MemsetRecord& m = p.memsets[i];
        common(OpKind::kMemset, i, m.start_ns, m.end_ns, m.stream, m.correlation_id, m.graph_id);
        name.push_back(names.ByText("memset"));
        bytes.push_back(static_cast<int64_t>(m.bytes));
        has_bytes.push_back(1);
      }
    }
  }
  // Demangled full and short names (the kernels table's: short names made
  // unique among the trace's names), once per distinct name.
  Dictionary full_names(0), short_names(0);
  std::vector<int32_t> full_of, short_of;
  const std::vector<std::string_view> recorded_names(names.names().begin(), names.names().end());
  const std::vector<std::string> labels = analysis::UniqueShortNames(recorded_names);
  for (size_t i = 0; i < recorded_names.size(); ++i) {
    full_of.push_back(full_names.ByText(analysis::Demangle(recorded_names[i])));
    short_of.push_back(short_names.ByText(labels[i]));
  }
  std::vector<int32_t> full_code(name.size()), short_code(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    full_code[i] = full_of[name[i]];
    short_code[i] = short_of[name[i]];
  }
  ColumnSet out;
  proc.MoveTo(&out);
  out.AddDictionary("kind", std::move(kind), kinds);
  out.AddDictionary("name", std::move(name), names);
  out.AddDictionary("full_name", std::move(full_code), full_names);
  out.AddDictionary("short_name", std::move(short_code), short_names);
  out.Add("device", std::move(device));
  out.Add("stream", std::move(stream));
  out.Add("start_ns", std::move(start));
  out.Add("end_ns", std::move(end));
  out.Add("duration_ns", std::move(duration));
  out.AddNullable("bytes", std::move(bytes), std::move(has_bytes));
  out.Add("correlation_id", std::move(correlation));
  out.Add("graph_id", std::move(graph));
  std::vector<uint8_t> l = launched;
  out.AddNullable("launch_tid", std::move(launch_tid), std::move(l));
  out.AddNullable("launch_ns", std::move(launch_ns), std::move(launched));
  out.Add("inherited", std::move(inherited));
  out.Add("range", std::move(range));
  out.AddDictionary("range_name", std::move(range_name), range_names);
  return out.release();
}

nb::list TraceHandle::ApiCalls() const {
  size_t n = 0;
  for (const ProcessTrace& p : trace_->processes) n += p.api_calls.size();
  ProcessColumns proc;
  proc.Reserve(n);
  std::vector<int64_t> tid, start, end, duration, correlation;
  std::vector<int32_t> name, api;
  std::vector<int64_t> ret;
  Dictionary names(trace_->strings.size()), apis(0);
  {
    nb::gil_scoped_release unlocked;
    for (size_t pi = 0; pi < trace_->processes.size(); ++pi) {
      const ProcessTrace& p = trace_->processes[pi];
      for (const ApiRecord& a : p.api_calls) {
        proc.Push(pi, p);
        tid.push_back(OsTid(p, a.thread));
        const std::string_view text = trace_->strings.Get(a.name);
        // As the api table and nsys print it ("cudaMemcpy2D", not CUPTI's
        // "cudaMemcpy2D_v3020").
        name.push_back(text.empty() ? names.ByText("cbid " + std::to_string(a.cbid))
                                    : names.ByText(analysis::ApiDisplayName(text)));
        api.push_back(apis.ByText(a.domain == ApiDomain::kDriver ? "driver" : "runtime"));
        start.push_back(static_cast<int64_t>(a.start_ns));
        end.push_back(static_cast<int64_t>(a.end_ns));
        duration.push_back(static_cast<int64_t>(a.end_ns - a.start_ns));
        correlation.push_back(static_cast<int64_t>(a.correlation_id));
        ret.push_back(a.return_value);
      }
    }
  }
  ColumnSet out;
  proc.MoveTo(&out);
  out.Add("tid", std::move(tid));
  out.AddDictionary("name", std::move(name), names);
  out.AddDictionary("api", std::move(api), apis);
  out.Add("start_ns", std::move(start));
  out.Add("end_ns", std::move(end));
  out.Add("duration_ns", std::move(duration));
  out.Add("correlation_id", std::move(correlation));
  out.Add("return_value", std::move(ret));
  return out.release();
}

nb::list TraceHandle::PmSamples() const {
  ProcessColumns proc;
  std::vector<int32_t> device, metric;
  std::vector<int64_t> start, end;
  std::vector<double> value;
  Dictionary metrics(trace_->strings.size());
  for (size_t pi = 0; pi < trace_->processes.size(); ++pi) {
    const ProcessTrace& p = trace_->processes[pi];
    for (const PmSampleRecord& s : p.pm_samples) {
      proc.Push(pi, p);
      device.push_back(static_cast<int32_t>(s.device));
      metric.push_back(metrics.ById(s.metric, trace_->strings.Get(s.metric)));
      start.push_back(static_cast<int64_t>(s.start_ns));
      end.push_back(static_cast<int64_t>(s.end_ns));
      value.push_back(s.value);
    }
  }
  ColumnSet out;
  proc.MoveTo(&out);
  out.Add("device", std::move(device));
  out.AddDictionary("metric", std::move(metric), metrics);
  out.Add("start_ns", std::move(start));
  out.Add("end_ns", std::move(end));
  out.Add("value", std::move(value));
  return out.release();
}

nb::list TraceHandle::Report(const ReportRequest& request) const {
  analysis::ReportOptions options;
  options.top = request.top;
  options.filter = request.filter;
  options.domain = request.domain;
  options.by_process = request.by_process;
  options.sort = ParseSort(request.sort);
  std::string group_keys;
  for (const std::string& key : analysis::reports::SplitComma(request.by)) {
    if (key == "rank" || key == "process") {
      options.by_process = true;
    } else {
      group_keys += (group_keys.empty() ? "" : ",") + key;
    }
  }
  RaiseIfError(analysis::RangeFilter::Check(options));
  for (const std::string& t : request.tables) {
    if (analysis::FindCoreTable(t) == nullptr && !analysis::reports::IsExtraTable(t)) {
      Raise("unknown table '" + t +
            "' (summary, ranges, kernels, range-kernels, gpu, memory, api, groups, "
            "timeline, phases, categories, gaps, top, ranks, comm)");
    }
  }
  analysis::AttributionOptions attribution = attribution_;
  if (!request.main_thread.empty()) ParseMainThread(request.main_thread, &attribution);

  // A further selection cuts a copy; the loaded trace stays whole.
  const analysis::Trace* trace = trace_.get();
  std::unique_ptr<analysis::Trace> cut;
  std::string note = selection_note_;
  const bool reselect = !request.ranks.empty() || !request.pids.empty() || !request.steps.empty() ||
                        !request.time.empty();
  if (reselect) {
    cut = std::make_unique<analysis::Trace>(*trace_);
    const std::string step_range = request.step_range.empty() ? step_range_ : request.step_range;
    SelectProcesses(request.ranks, request.pids, cut.get());
    const std::string more =
        SelectRecords(request.steps, request.time, step_range, attribution, cut.get());
    if (!more.empty()) note = note.empty() ? more : note + "; " + more;
    trace = cut.get();
  }
  std::unique_ptr<AnalyzedTrace> own;
  const AnalyzedTrace* analyzed = analyzed_.get();
  if (reselect || request.main_thread.size() > 0) {
    nb::gil_scoped_release unlocked;
    own = std::make_unique<AnalyzedTrace>(*trace, attribution);
    analyzed = own.get();
  }

  std::vector<analysis::Table> tables;
  {
    nb::gil_scoped_release unlocked;
    std::vector<std::string> core_names;
    for (const std::string& t : request.tables) {
      if (analysis::FindCoreTable(t) != nullptr) core_names.push_back(t);
    }
    std::vector<analysis::Table> core = analysis::CoreTables(*analyzed, core_names, options);
    size_t next_core = 0;
    for (const std::string& t : request.tables) {
      if (analysis::FindCoreTable(t) != nullptr) tables.push_back(std::move(core[next_core++]));
      if (analysis::reports::IsExtraTable(t)) {
        analysis::reports::ExtraTableOptions extra;
        extra.groups_file = request.groups_file;
        extra.step_range = request.step_range.empty() ? step_range_ : request.step_range;
        extra.iteration = request.iteration;
        extra.phase_rules_file = request.phase_rules;
        extra.category_rules_file = request.category_rules;
        if (request.top > 0) extra.top = request.top;
        extra.by = group_keys;
        extra.report = options;
        auto built = analysis::reports::BuildExtraTables(*analyzed, {t}, extra);
        RaiseIfError(built.status());
        for (auto& x : *built) tables.push_back(std::move(x));
      }
    }
  }
  nb::list out;
  for (analysis::Table& t : tables) {
    if (!note.empty()) t.notes.push_back(note);
    nb::list columns;
    for (size_t c = 0; c < t.columns.size(); ++c) columns.append(ReportColumn(t, c));
    out.append(nb::make_tuple(t.name, t.title, columns, nb::cast(t.notes)));
  }
  return out;
}

}  // namespace tracer::python
