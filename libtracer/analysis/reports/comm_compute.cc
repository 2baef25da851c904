#include "libtracer/analysis/reports/comm_compute.h"

#include <algorithm>
#include <map>
#include <regex>
#include <vector>

#include "libtracer/analysis/aggregate/intervals.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis::reports {
namespace {

// Length of the intersection of two merged interval lists.
uint64_t Intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  uint64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t lo = std::max(a[i].first, b[j].first);
    const uint64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) total += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

std::vector<GpuOpClass> ClassesOf(const ReportModel& model) {
  std::map<uint32_t, GpuOpClass> by_name;
  std::vector<GpuOpClass> out;
  out.reserve(model.ops().size());
  for (const OpFact& op : model.ops()) {
    if (op.kind != OpKind::kKernel) {
      out.push_back(GpuOpClass::kMemory);
      continue;
    }
    auto it = by_name.find(op.name);
    if (it == by_name.end()) {
      it = by_name.emplace(op.name, ClassifyGpuOp(op.kind, Demangle(model.Name(op.name)))).first;
    }
    out.push_back(it->second);
  }
  return out;
}

void Accumulate(const CommCompute& c, CommCompute* sum) {
  sum->ops += c.ops;
  sum->span += c.span;
  sum->busy += c.busy;
  sum->compute += c.compute;
  sum->comm += c.comm;
  sum->overlap += c.overlap;
  sum->memory += c.memory;
}

}  // namespace

GpuOpClass ClassifyGpuOp(OpKind kind, std::string_view name) {
  if (kind != OpKind::kKernel) return GpuOpClass::kMemory;
  // HTA's regular expressions (hta/utils/utils.py), applied the same way
  // (re.match: anchored at the start).
  static const std::regex kComm("^nccl.*Kernel");
  static const std::regex kMemory("(^Memcpy)|(^Memset)|(^dma)");
  static const std::regex kNotCompute("(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)");
  const std::string s(name);
  const auto flags = std::regex_constants::match_continuous;
  if (std::regex_search(s, kComm, flags)) return GpuOpClass::kCommunication;
  if (std::regex_search(s, kMemory, flags)) return GpuOpClass::kMemory;
  if (!std::regex_search(s, kNotCompute, flags)) return GpuOpClass::kCompute;
  return GpuOpClass::kOther;
}

CommCompute BreakdownOf(const ReportModel& model, std::span<const uint32_t> ops,
                        std::span<const GpuOpClass> op_class) {
  CommCompute c;
  if (ops.empty()) return c;
  std::vector<Interval> all, compute, comm, memory;
  uint64_t first = UINT64_MAX, last = 0;
  for (uint32_t i : ops) {
    const OpFact& op = model.ops()[i];
    const Interval iv{op.start_ns, op.end_ns};
    first = std::min(first, op.start_ns);
    last = std::max(last, op.end_ns);
    all.push_back(iv);
    switch (op_class[i]) {
      case GpuOpClass::kCompute:
        compute.push_back(iv);
        break;
      case GpuOpClass::kCommunication:
        comm.push_back(iv);
        break;
      case GpuOpClass::kMemory:
        memory.push_back(iv);
        break;
      case GpuOpClass::kOther:
        break;
    }
  }
  c.ops = ops.size();
  c.span = last - first;
  c.busy = MergeIntervals(&all);
  c.compute = MergeIntervals(&compute);
  c.comm = MergeIntervals(&comm);
  c.memory = MergeIntervals(&memory);
  c.overlap = Intersection(comm, compute);
  return c;
}

Table CommComputeTable(const ReportModel& model, const CommOptions& options) {
  const std::vector<GpuOpClass> classes = ClassesOf(model);
  const auto& ranges = model.ranges();
  const size_t processes = model.trace().processes.size();

  Table t;
  t.name = "comm";
  t.title = "Communication vs computation on the GPU (Holistic Trace Analysis definitions)";
  t.columns = {{"process", ColumnKind::kText, "Process"},
               {"kind", ColumnKind::kText, "Kind"},
               {"name", ColumnKind::kText, "Name"},
               {"ops", ColumnKind::kCount, "GPU ops"},
               {"span_ns", ColumnKind::kDuration, "Span"},
               {"busy_ns", ColumnKind::kDuration, "Busy"},
               {"idle_ns", ColumnKind::kDuration, "Idle"},
               {"idle_pct", ColumnKind::kPercent, "Idle %"},
               {"compute_ns", ColumnKind::kDuration, "Compute"},
               {"compute_pct", ColumnKind::kPercent, "Compute %"},
               {"non_compute_ns", ColumnKind::kDuration, "Non-compute"},
               {"comm_ns", ColumnKind::kDuration, "Comm"},
               {"overlap_ns", ColumnKind::kDuration, "Comm-compute overlap"},
               {"overlap_pct", ColumnKind::kPercent, "Overlap % of comm"},
               {"memory_ns", ColumnKind::kDuration, "Memcpy/memset"}};
  auto add = [&](const std::string& process, const std::string& kind, const std::string& name,
                 const CommCompute& c) {
    t.rows.push_back({Cell(process), Cell(kind), Cell(name), Cell(static_cast<int64_t>(c.ops)),
                      Cell(static_cast<int64_t>(c.span)), Cell(static_cast<int64_t>(c.busy)),
                      Cell(static_cast<int64_t>(c.idle())), SharePercent(c.idle(), c.span),
                      Cell(static_cast<int64_t>(c.compute)), SharePercent(c.compute, c.span),
                      Cell(static_cast<int64_t>(c.non_compute())),
                      Cell(static_cast<int64_t>(c.comm)), Cell(static_cast<int64_t>(c.overlap)),
                      SharePercent(c.overlap, c.comm), Cell(static_cast<int64_t>(c.memory))});
  };

  // Whole processes.
  std::vector<std::vector<uint32_t>> ops_of(processes);
  for (uint32_t i = 0; i < model.ops().size(); ++i) ops_of[model.ops()[i].process].push_back(i);
  std::vector<std::string> labels;
  for (size_t p = 0; p < processes; ++p) {
    labels.push_back(ProcessLabelOf(model.trace().processes[p]));
    if (!ops_of[p].empty())
      add(labels[p], "process", "(all GPU ops)", BreakdownOf(model, ops_of[p], classes));
  }

  // Steps: the ops counted toward each step instance (its own launches,
  // its children's, and worker-thread launches it inherits).
  std::string step_note;
  if (const auto found = FindSteps(model, options.step_range); found.ok()) {
    const Steps& steps = *found;
    for (const Steps::OfProcess& proc : steps.by_process) {
      CommCompute sum;
      for (size_t i = 0; i < proc.instances.size(); ++i) {
        const CommCompute c = BreakdownOf(model, model.OpsOf(proc.instances[i]), classes);
        Accumulate(c, &sum);
        add(labels[proc.process], "step", steps.name + " #" + std::to_string(proc.numbers[i]), c);
      }
      add(labels[proc.process], "steps", steps.name + " (sum)", sum);
    }
    step_note = "Steps: " + steps.how + ".";
  } else {
    step_note = "No step rows: " + found.status().message() + ".";
  }

  // Range names: per instance, summed over instances (filter, domain, top).
  const RangeFilter filter(options.ranges);
  std::map<std::pair<uint32_t, uint32_t>, CommCompute> by_name;  // (process, name)
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    const RangeFact& f = ranges[r];
    if (model.OpsOf(r).empty()) continue;
    const auto& domains = model.trace().processes[f.process].domain_names;
    std::string_view domain;
    if (auto it = domains.find(model.trace().processes[f.process].ranges[f.local].domain);
        it != domains.end()) {
      domain = model.trace().strings.Get(it->second);
    }
    if (!filter.AcceptsName(domain, model.Name(f.name))) continue;
    Accumulate(BreakdownOf(model, model.OpsOf(r), classes), &by_name[{f.process, f.name}]);
  }
  std::vector<std::pair<uint64_t, std::pair<uint32_t, uint32_t>>> order;
  for (const auto& [key, c] : by_name) order.emplace_back(c.busy, key);
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return model.Name(a.second.second) < model.Name(b.second.second);
  });
  const size_t top = options.ranges.top > 0 ? options.ranges.top : 20;
  const size_t keep = std::min(top, order.size());
  for (size_t i = 0; i < keep; ++i) {
    const auto key = order[i].second;
    add(labels[key.first], "range", std::string(model.Name(key.second)), by_name[key]);
  }
  t.notes = {
      step_note,
      "Span = last op end - first op start; Busy = union of op intervals over all streams; Idle "
      "= Span - Busy; Compute = union of computation kernels; Non-compute = Busy - Compute; "
      "Comm = union of ^nccl.*Kernel kernels; Overlap = time comm and compute kernels run at "
      "once (% of Comm); Memcpy/memset = union of copies and sets (HTA's definitions, in ns).",
      "Ranges: each instance's ops (children's and inherited included), summed over instances, "
      "most busy first (" +
          std::to_string(keep) + " of " + std::to_string(order.size()) +
          (options.ranges.top > 0 ? "" : "; --top N shows more") + ")."};
  return t;
}

}  // namespace tracer::analysis::reports
