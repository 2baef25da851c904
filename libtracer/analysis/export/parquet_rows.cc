#include "libtracer/analysis/export/parquet_rows.h"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "libtracer/analysis/export/column_batch.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/tables/demangle.h"

namespace tracer::analysis::exporters {
namespace {

using Type = ColumnBatch::Type;

// A table's batch that flushes itself every kParquetBatchRows rows.
class TableWriter {
 public:
  TableWriter(std::string table, int64_t rank, uint32_t process, std::FILE* out)
      : batch_(std::move(table), rank, process), out_(out) {}
  size_t Col(std::string name, Type type, bool nullable = false) {
    return batch_.AddColumn(std::move(name), type, nullable);
  }
  ColumnBatch& b() { return batch_; }
  void EndRow() {
    batch_.EndRow();
    if (batch_.rows() >= kParquetBatchRows) Flush();
  }
  void Flush() { ok_ = batch_.Flush(out_) && ok_; }
  bool ok() const { return ok_; }

 private:
  ColumnBatch batch_;
  std::FILE* out_;
  bool ok_ = true;
};

uint64_t OsTid(const ProcessTrace& p, uint32_t thread) {
  return thread < p.threads.size() && p.threads[thread].defined ? p.threads[thread].os_tid : thread;
}

const char* KindName(OpKind k) {
  return k == OpKind::kKernel ? "kernel" : k == OpKind::kMemcpy ? "memcpy" : "memset";
}

class ProcessRows {
 public:
  ProcessRows(const AnalyzedTrace& analyzed, size_t index, uint32_t process_id,
              const reports::Steps* steps, const std::vector<uint32_t>* model_local,
              DatasetNames* names, std::FILE* out)
      : t_(analyzed.trace()),
        pa_(analyzed.process(index)),
        p_(*pa_.process),
        rank_(p_.header.rank >= 0 ? p_.header.rank : -1),
        process_(process_id),
        out_(out),
        analyzed_(analyzed),
        index_(index),
        steps_(steps),
        model_local_(model_local),
        names_(names),
        map_(t_.strings.size(), -1),
        kernel_mapped_(t_.strings.size(), false) {}

  bool Write() { return Processes() && Threads() && Ranges() && Ops() && Api() && PmSamples(); }

 private:
  TableWriter Table(const char* name) { return TableWriter(name, rank_, process_, out_); }
  bool Done(TableWriter& w) {
    w.Flush();
    return w.ok();
  }

  bool Processes() {
    TableWriter w = Table("processes");
    const size_t c_process = w.Col("process", Type::kInt64), c_pid = w.Col("pid", Type::kInt64),
                 c_label = w.Col("label", Type::kString), c_host = w.Col("host", Type::kString),
                 c_source = w.Col("source", Type::kString),
                 c_file = w.Col("source_file", Type::kString),
                 c_world = w.Col("world_size", Type::kInt64, true),
                 c_local = w.Col("local_rank", Type::kInt64, true),
                 c_device = w.Col("device", Type::kString, true),
                 c_version = w.Col("tracer_version", Type::kString),
                 c_step = w.Col("step_range", Type::kString, true);
    ColumnBatch& b = w.b();
    const HeaderInfo& h = p_.header;
    b.Int(c_process, process_);
    b.Int(c_pid, h.pid);
    b.Str(c_label, analyzed_.ProcessLabel(index_));
    b.Str(c_host, h.host);
    b.Str(c_source, h.source);
    b.Str(c_file, p_.source_file);
    h.world_size > 0 ? b.Int(c_world, h.world_size) : b.Null(c_world);
    h.local_rank >= 0 ? b.Int(c_local, h.local_rank) : b.Null(c_local);
    h.device.empty() ? b.Null(c_device) : b.Str(c_device, h.device);
    b.Str(c_version, h.tracer_version);
    steps_ != nullptr ? b.Str(c_step, steps_->name) : b.Null(c_step);
    w.EndRow();
    return Done(w);
  }

  bool Threads() {
    TableWriter w = Table("threads");
    const size_t c_process = w.Col("process", Type::kInt64), c_tid = w.Col("tid", Type::kInt64),
                 c_name = w.Col("name", Type::kString), c_main = w.Col("main", Type::kBool);
    for (uint32_t i = 0; i < p_.threads.size(); ++i) {
      const ThreadInfo& th = p_.threads[i];
      if (!th.defined) continue;
      w.b().Int(c_process, process_);
      w.b().Int(c_tid, static_cast<int64_t>(th.os_tid));
      w.b().Str(c_name, t_.strings.Get(th.name));
      w.b().Bool(c_main, i == pa_.attribution.main_thread());
      w.EndRow();
    }
    return Done(w);
  }

  // The dataset id of string id (a trace's own), mapped once per id.
  int64_t Name(uint32_t id, bool kernel = false) {
    if (id >= map_.size()) id = 0;  // not a string of this trace: ""
    int64_t& m = map_[id];
    if (m < 0 || (kernel && !kernel_mapped_[id])) {
      m = names_->Id(t_.strings.Get(id), kernel);
      if (kernel) kernel_mapped_[id] = true;
    }
    return m;
  }

  bool Ranges() {
    std::vector<int64_t> step_of(p_.ranges.size(), -1);
    if (steps_ != nullptr) {
      for (const auto& proc : steps_->by_process) {
        if (proc.process != index_) continue;
        for (size_t i = 0; i < proc.instances.size(); ++i) {
          step_of[(*model_local_)[proc.instances[i]]] = static_cast<int64_t>(proc.numbers[i]);
        }
      }
    }
    TableWriter w = Table("ranges");
    const size_t c_process = w.Col("process", Type::kInt64), c_id = w.Col("range_id", Type::kInt64),
                 c_parent = w.Col("parent_id", Type::kInt64, true),
                 c_depth = w.Col("depth", Type::kInt64), c_tid = w.Col("tid", Type::kInt64),
                 c_kind = w.Col("kind", Type::kString), c_domain = w.Col("domain_id", Type::kInt64),
                 c_name = w.Col("name_id", Type::kInt64),
                 c_raw = w.Col("raw_name_id", Type::kInt64),
                 c_start = w.Col("start_ns", Type::kInt64), c_end = w.Col("end_ns", Type::kInt64),
                 c_cpu = w.Col("cpu_ns", Type::kInt64),
                 c_gstart = w.Col("gpu_start_ns", Type::kInt64, true),
                 c_gend = w.Col("gpu_end_ns", Type::kInt64, true),
                 c_gspan = w.Col("gpu_span_ns", Type::kInt64, true),
                 c_gbusy = w.Col("gpu_busy_ns", Type::kInt64, true),
                 c_ops = w.Col("gpu_ops", Type::kInt64), c_kern = w.Col("kernels", Type::kInt64),
                 c_kns = w.Col("kernel_ns", Type::kInt64),
                 c_step = w.Col("step", Type::kInt64, true);
    const Projection& projection = pa_.projection();
    for (uint32_t i = 0; i < p_.ranges.size(); ++i) {
      const RangeRecord& r = p_.ranges[i];
      ColumnBatch& b = w.b();
      b.Int(c_process, process_);
      b.Int(c_id, i);
      const uint32_t parent = pa_.ranges.Parent(i);
      parent == kNoRange ? b.Null(c_parent) : b.Int(c_parent, parent);
      b.Int(c_depth, pa_.ranges.Depth(i));
      b.Int(c_tid, static_cast<int64_t>(OsTid(p_, r.thread)));
      b.Str(c_kind, r.kind == RangeKind::kPushPop ? "push_pop" : "start_end");
      uint32_t domain = 0;
      if (r.domain != 0) {
        auto it = p_.domain_names.find(r.domain);
        if (it != p_.domain_names.end()) domain = it->second;
      }
      b.Int(c_domain, Name(domain));
      b.Int(c_name, Name(r.name));
      b.Int(c_raw, Name(r.raw_name != 0 ? r.raw_name : r.name));
      b.Int(c_start, static_cast<int64_t>(r.start_ns));
      b.Int(c_end, static_cast<int64_t>(r.end_ns));
      b.Int(c_cpu, static_cast<int64_t>(r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0));
      if (const InstanceProjection* proj = projection.Of(i)) {
        const GpuSpan& g = proj->total;
        b.Int(c_gstart, static_cast<int64_t>(g.start_ns));
        b.Int(c_gend, static_cast<int64_t>(g.end_ns));
        b.Int(c_gspan, static_cast<int64_t>(g.span_ns()));
        b.Int(c_gbusy, static_cast<int64_t>(g.busy_ns));
        b.Int(c_ops, static_cast<int64_t>(g.op_count));
        b.Int(c_kern, static_cast<int64_t>(g.kernel_count));
        b.Int(c_kns, static_cast<int64_t>(g.kernel_ns));
      } else {
        for (size_t c : {c_gstart, c_gend, c_gspan, c_gbusy}) b.Null(c);
        for (size_t c : {c_ops, c_kern, c_kns}) b.Int(c, 0);
      }
      step_of[i] >= 0 ? b.Int(c_step, step_of[i]) : b.Null(c_step);
      w.EndRow();
    }
    return Done(w);
  }

  // gpu_ops, then the distinct stacks they name.
  bool Ops() {
    const Attribution& a = pa_.attribution;
    TableWriter w = Table("gpu_ops");
    const size_t c_process = w.Col("process", Type::kInt64), c_kind = w.Col("kind", Type::kString),
                 c_index = w.Col("op_id", Type::kInt64),
                 c_name = w.Col("name_id", Type::kInt64, true),
                 c_start = w.Col("start_ns", Type::kInt64), c_end = w.Col("end_ns", Type::kInt64),
                 c_dur = w.Col("duration_ns", Type::kInt64),
                 c_device = w.Col("device", Type::kInt64, true),
                 c_stream = w.Col("stream", Type::kInt64, true),
                 c_corr = w.Col("correlation_id", Type::kInt64),
                 c_bytes = w.Col("bytes", Type::kInt64, true),
                 c_copy = w.Col("copy_kind", Type::kInt64, true),
                 c_graph = w.Col("graph_id", Type::kInt64, true),
                 c_ltid = w.Col("launch_tid", Type::kInt64, true),
                 c_lns = w.Col("launch_ns", Type::kInt64, true),
                 c_range = w.Col("range_id", Type::kInt64, true),
                 c_stack = w.Col("stack_id", Type::kInt64),
                 c_source = w.Col("attribution", Type::kString),
                 c_inh = w.Col("inherited", Type::kBool);
    static const char* const kSources[] = {"none", "graph_node", "graph_launch", "launch_record",
                                           "api_record"};
    std::vector<int32_t> own_depth(a.distinct_stacks(), -1);
    auto row = [&](OpKind kind, size_t i, std::optional<uint32_t> name, uint64_t start,
                   uint64_t end, uint32_t stream, uint64_t corr, std::optional<uint64_t> bytes,
                   std::optional<uint32_t> copy, uint64_t graph) {
      ColumnBatch& b = w.b();
      b.Int(c_process, process_);
      b.Str(c_kind, KindName(kind));
      b.Int(c_index, static_cast<int64_t>(i));
      name ? b.Int(c_name, Name(*name, true)) : b.Null(c_name);
      b.Int(c_start, static_cast<int64_t>(start));
      b.Int(c_end, static_cast<int64_t>(end));
      b.Int(c_dur, static_cast<int64_t>(end - start));
      const bool has_stream =
          stream != 0 && stream < p_.streams.size() && p_.streams[stream].defined;
      has_stream ? b.Int(c_device, p_.streams[stream].device) : b.Null(c_device);
      has_stream ? b.Int(c_stream, static_cast<int64_t>(p_.streams[stream].stream))
                 : b.Null(c_stream);
      b.Int(c_corr, static_cast<int64_t>(corr));
      bytes ? b.Int(c_bytes, static_cast<int64_t>(*bytes)) : b.Null(c_bytes);
      copy ? b.Int(c_copy, *copy) : b.Null(c_copy);
      graph != 0 ? b.Int(c_graph, static_cast<int64_t>(graph)) : b.Null(c_graph);
      const OpAttribution at = a.Of(kind, i);
      at.thread != 0 ? b.Int(c_ltid, static_cast<int64_t>(OsTid(p_, at.thread))) : b.Null(c_ltid);
      at.launch_ns != 0 ? b.Int(c_lns, static_cast<int64_t>(at.launch_ns)) : b.Null(c_lns);
      at.range != kNoRange ? b.Int(c_range, at.range) : b.Null(c_range);
      const uint32_t s = a.StackId(kind, i);
      if (own_depth[s] < 0) own_depth[s] = static_cast<int32_t>(a.OwnDepth(kind, i));
      b.Int(c_stack, s);
      b.Str(c_source, kSources[static_cast<int>(at.source)]);
      b.Bool(c_inh, at.inherited);
      w.EndRow();
    };
    for (size_t i = 0; i < p_.kernels.size(); ++i) {
      const KernelRecord& k = p_.kernels[i];
      row(OpKind::kKernel, i, k.name, k.start_ns, k.end_ns, k.stream, k.correlation_id,
          std::nullopt, std::nullopt, k.graph_id);
    }
    for (size_t i = 0; i < p_.memcpys.size(); ++i) {
      const MemcpyRecord& m = p_.memcpys[i];
      row(OpKind::kMemcpy, i, std::nullopt, m.start_ns, m.end_ns, m.stream, m.correlation_id,
          m.bytes, m.copy_kind, m.graph_id);
    }
    for (size_t i = 0; i < p_.memsets.size(); ++i) {
      const MemsetRecord& m = p_.memsets[i];
      row(OpKind::kMemset, i, std::nullopt, m.start_ns, m.end_ns, m.stream, m.correlation_id,
          m.bytes, std::nullopt, m.graph_id);
    }
    if (!Done(w)) return false;

    TableWriter st = Table("stacks");
    const size_t s_process = st.Col("process", Type::kInt64),
                 s_id = st.Col("stack_id", Type::kInt64), s_pos = st.Col("position", Type::kInt64),
                 s_range = st.Col("range_id", Type::kInt64), s_own = st.Col("own", Type::kBool);
    for (uint32_t s = 0; s < a.distinct_stacks(); ++s) {
      if (own_depth[s] < 0) continue;  // no op names it
      const std::span<const uint32_t> entries = a.StackAt(s);
      for (size_t pos = 0; pos < entries.size(); ++pos) {
        st.b().Int(s_process, process_);
        st.b().Int(s_id, s);
        st.b().Int(s_pos, static_cast<int64_t>(pos));
        st.b().Int(s_range, entries[pos]);
        st.b().Bool(s_own, static_cast<int32_t>(pos) < own_depth[s]);
        st.EndRow();
      }
    }
    return Done(st);
  }

  bool Api() {
    TableWriter w = Table("api_calls");
    const size_t c_process = w.Col("process", Type::kInt64), c_id = w.Col("api_id", Type::kInt64),
                 c_tid = w.Col("tid", Type::kInt64), c_domain = w.Col("domain", Type::kString),
                 c_cbid = w.Col("cbid", Type::kInt64), c_name = w.Col("name_id", Type::kInt64),
                 c_start = w.Col("start_ns", Type::kInt64), c_end = w.Col("end_ns", Type::kInt64),
                 c_dur = w.Col("duration_ns", Type::kInt64),
                 c_corr = w.Col("correlation_id", Type::kInt64),
                 c_ret = w.Col("return_value", Type::kInt64);
    for (size_t i = 0; i < p_.api_calls.size(); ++i) {
      const ApiRecord& r = p_.api_calls[i];
      ColumnBatch& b = w.b();
      b.Int(c_process, process_);
      b.Int(c_id, static_cast<int64_t>(i));
      b.Int(c_tid, static_cast<int64_t>(OsTid(p_, r.thread)));
      b.Str(c_domain, r.domain == ApiDomain::kDriver ? "driver" : "runtime");
      b.Int(c_cbid, r.cbid);
      b.Int(c_name, Name(r.name));
      b.Int(c_start, static_cast<int64_t>(r.start_ns));
      b.Int(c_end, static_cast<int64_t>(r.end_ns));
      b.Int(c_dur, static_cast<int64_t>(r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0));
      b.Int(c_corr, static_cast<int64_t>(r.correlation_id));
      b.Int(c_ret, r.return_value);
      w.EndRow();
    }
    return Done(w);
  }

  bool PmSamples() {
    TableWriter w = Table("pm_samples");
    const size_t c_process = w.Col("process", Type::kInt64),
                 c_device = w.Col("device", Type::kInt64),
                 c_metric = w.Col("metric_id", Type::kInt64),
                 c_start = w.Col("start_ns", Type::kInt64), c_end = w.Col("end_ns", Type::kInt64),
                 c_value = w.Col("value", Type::kFloat64);
    for (const PmSampleRecord& s : p_.pm_samples) {
      ColumnBatch& b = w.b();
      b.Int(c_process, process_);
      b.Int(c_device, s.device);
      b.Int(c_metric, Name(s.metric));
      b.Int(c_start, static_cast<int64_t>(s.start_ns));
      b.Int(c_end, static_cast<int64_t>(s.end_ns));
      b.Float(c_value, s.value);
      w.EndRow();
    }
    return Done(w);
  }

  const Trace& t_;
  const ProcessAnalysis& pa_;
  const ProcessTrace& p_;
  int64_t rank_;
  uint32_t process_;
  std::FILE* out_;
  const AnalyzedTrace& analyzed_;
  size_t index_;
  const reports::Steps* steps_;
  const std::vector<uint32_t>* model_local_;  // ReportModel range index -> index in p_.ranges
  DatasetNames* names_;
  std::vector<int64_t> map_;  // trace string id -> dataset id, -1 = not yet
  std::vector<bool> kernel_mapped_;
};

}  // namespace

DatasetNames::DatasetNames() { Id("", false); }

int64_t DatasetNames::Id(std::string_view name, bool kernel) {
  auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<int64_t>(names_.size()));
  if (inserted) {
    names_.push_back(&it->first);
    kernel_.push_back(0);
  }
  if (kernel) kernel_[static_cast<size_t>(it->second)] = 1;
  return it->second;
}

bool DatasetNames::Write(std::FILE* out) {
  // Not partitioned: rank kUnpartitioned (column_batch.h).
  TableWriter w("names", ColumnBatch::kUnpartitioned, 0, out);
  const size_t c_id = w.Col("name_id", Type::kInt64), c_name = w.Col("name", Type::kString),
               c_short = w.Col("short_name", Type::kString);
  // Kernel short names made unique among all the dataset's kernels, as the
  // kernels table labels them (demangle.h UniqueShortNames): two template
  // instances never share a short name.
  std::vector<size_t> kernel_ids;
  std::vector<std::string_view> kernel_names;
  for (size_t id = 0; id < names_.size(); ++id) {
    if (kernel_[id] != 0 && !names_[id]->empty()) {
      kernel_ids.push_back(id);
      kernel_names.push_back(*names_[id]);
    }
  }
  const std::vector<std::string> labels = UniqueShortNames(kernel_names);
  size_t next_kernel = 0;
  for (size_t id = 0; id < names_.size(); ++id) {
    const std::string& name = *names_[id];
    w.b().Int(c_id, static_cast<int64_t>(id));
    w.b().Str(c_name, name);
    if (next_kernel < kernel_ids.size() && kernel_ids[next_kernel] == id) {
      w.b().Str(c_short, labels[next_kernel++]);
    } else {
      w.b().Str(c_short, name);
    }
    w.EndRow();
  }
  w.Flush();
  return w.ok();
}

bool WriteParquetBatches(const Trace& trace, uint32_t first_process,
                         const AttributionOptions& attribution, DatasetNames* names, std::FILE* out,
                         std::string* error) {
  const AnalyzedTrace analyzed(trace, attribution);
  std::optional<reports::Steps> steps;
  std::vector<uint32_t> model_local;
  {
    // The step instances, chosen as the ranks table chooses them (steps.h).
    const reports::ReportModel model(analyzed);
    // No step range: the step column stays empty.
    if (auto found = reports::FindSteps(model, ""); found.ok()) steps = std::move(found).value();
    model_local.reserve(model.ranges().size());
    for (const auto& f : model.ranges()) model_local.push_back(f.local);
  }
  for (size_t i = 0; i < analyzed.size(); ++i) {
    ProcessRows rows(analyzed, i, first_process + static_cast<uint32_t>(i),
                     steps ? &*steps : nullptr, &model_local, names, out);
    if (!rows.Write()) {
      *error = "the Parquet writer stopped reading (see its message above)";
      return false;
    }
  }
  return true;
}

}  // namespace tracer::analysis::exporters
