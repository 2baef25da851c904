// Summary: one row per process (what was read, what was lost, how GPU ops
// were attributed), with the explanations as notes.
#include <algorithm>
#include <cstdio>
#include <map>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {
namespace {

// Dropped records by cause: the footer's totals when the file was closed
// cleanly, else the sum of the counter deltas whose name says "drop".
std::map<std::string, uint64_t> Dropped(const ProcessTrace& p) {
  std::map<std::string, uint64_t> out;
  if (p.footer) {
    for (const auto& [name, v] : p.footer->dropped_by_cause) out[name] += v;
  }
  if (out.empty()) {
    for (const auto& [name, v] : p.counters) {
      if (name.find("drop") != std::string::npos && v > 0) out[name] += v;
    }
  }
  return out;
}

}  // namespace

bool HasGpuData(const Trace& trace) {
  for (const auto& p : trace.processes) {
    if (!p.kernels.empty() || !p.memcpys.empty() || !p.memsets.empty() || !p.api_calls.empty()) {
      return true;
    }
  }
  return false;
}

SummaryRow SummaryRowOf(const ProcessTrace& p, std::vector<std::string>* notes) {
  SummaryRow row;
  row.process = ProcessLabelOf(p);
  row.source = p.header.source;
  row.file = p.source_file;
  row.closed = p.footer.has_value();
  for (const auto& th : p.threads) row.threads += th.defined ? 1 : 0;
  std::string causes;
  for (const auto& [name, v] : Dropped(p)) {
    row.dropped += static_cast<int64_t>(v);
    causes += (causes.empty() ? "" : ", ") + name + " " + std::to_string(v);
  }
  const std::string who = row.process + ": ";
  if (!p.footer && p.header.source == "tracer") {
    // A full disk ends a file the same way as a kill: the writer logged which
    // when it happened; the file cannot tell.
    notes->push_back(who +
                     "no footer: the program was killed, its disk filled up (see the "
                     "tracer's log), or it is still running; every record up to the last "
                     "complete chunk is used");
  }
  if (!causes.empty()) notes->push_back(who + "dropped records by cause: " + causes);
  // The writer nests a range under the innermost range it saw open: a
  // dropped push leaves the ranges inside it one level up.
  if (causes.find("nvtx_ring_full") != std::string::npos) {
    notes->push_back(who +
                     "NVTX events were dropped with a full thread buffer: a range whose push "
                     "was dropped is missing, and the ranges inside it show one level up "
                     "(at depth 0 under a lost top-level range)");
  }
  // Only for a process of a multi-process job: a single process's device
  // (CUDA_VISIBLE_DEVICES) alone says nothing worth a line.
  if (p.header.world_size > 0 || p.header.local_rank >= 0) {
    const HeaderInfo& h = p.header;
    std::string where = "rank " + (h.rank >= 0 ? std::to_string(h.rank) : std::string("?"));
    if (h.world_size > 0) where += " of " + std::to_string(h.world_size);
    if (h.local_rank >= 0) where += ", local rank " + std::to_string(h.local_rank);
    if (!h.host.empty()) where += ", host " + h.host;
    if (!h.device.empty()) where += ", device " + h.device;
    notes->push_back(who + where);
  }
  return row;
}

Table RenderSummaryTable(TableRows& all, const ReportOptions& /*o*/) {
  const std::vector<SummaryRow>& rows = all.summary;
  Table table;
  table.name = "summary";
  table.title =
      "Summary (GPU ops: Unattributed = no launch record found; Outside ranges = launched "
      "outside every range; Inherited = worker-thread launches also counted toward the "
      "main thread's open ranges)";
  table.columns = {{"process", ColumnKind::kText, "Process"},
                   {"source", ColumnKind::kText, "Source"},
                   {"file", ColumnKind::kText, "File"},
                   {"complete", ColumnKind::kText, "Closed"},
                   {"threads", ColumnKind::kCount, "Threads"},
                   {"ranges", ColumnKind::kCount, "Ranges"},
                   {"marks", ColumnKind::kCount, "Marks"},
                   {"kernels", ColumnKind::kCount, "Kernels"},
                   {"memcpys", ColumnKind::kCount, "Memcpys"},
                   {"memsets", ColumnKind::kCount, "Memsets"},
                   {"api_calls", ColumnKind::kCount, "API calls"},
                   {"unattributed_ops", ColumnKind::kCount, "Unattributed"},
                   {"ops_outside_ranges", ColumnKind::kCount, "Outside ranges"},
                   {"inherited_ops", ColumnKind::kCount, "Inherited"},
                   {"main_thread", ColumnKind::kText, "Main thread"},
                   {"dropped", ColumnKind::kCount, "Dropped"}};
  for (const SummaryRow& r : rows) {
    table.rows.push_back({Text(r.process), Text(r.source), Text(r.file),
                          Text(r.closed ? "yes" : "no"), Int(r.threads), Int(r.ranges),
                          Int(r.marks), Int(r.kernels), Int(r.memcpys), Int(r.memsets),
                          Int(r.api_calls),
                          IntOrEmpty(r.unattributed.has_value(), r.unattributed.value_or(0)),
                          IntOrEmpty(r.outside_ranges.has_value(), r.outside_ranges.value_or(0)),
                          IntOrEmpty(r.inherited.has_value(), r.inherited.value_or(0)),
                          Text(r.main_thread), Int(r.dropped)});
  }
  table.notes = all.summary_notes;
  table.notes.insert(table.notes.end(), all.notes.begin(), all.notes.end());
  return table;
}

}  // namespace tracer::analysis
