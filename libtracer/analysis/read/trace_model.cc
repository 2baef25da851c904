#include "libtracer/analysis/read/trace_model.h"

#include <algorithm>

namespace tracer::analysis {

std::string ProcessLabelOf(const ProcessTrace& p) {
  std::string label = "pid " + std::to_string(p.header.pid);
  if (p.header.rank >= 0) label = "rank " + std::to_string(p.header.rank) + " (" + label + ")";
  return label;
}

bool ProcessSelection::Accepts(const HeaderInfo& h) const {
  const bool rank_ok =
      ranks.empty() || std::find(ranks.begin(), ranks.end(), int64_t{h.rank}) != ranks.end();
  const bool pid_ok =
      pids.empty() || std::find(pids.begin(), pids.end(), int64_t{h.pid}) != pids.end();
  return rank_ok && pid_ok;
}

std::string SelectProcesses(const ProcessSelection& selection, Trace* trace) {
  if (selection.empty()) return "";
  std::string held;
  for (const ProcessTrace& p : trace->processes) {
    held += (held.empty() ? "" : ", ") + ProcessLabelOf(p);
  }
  std::erase_if(trace->processes,
                [&](const ProcessTrace& p) { return !selection.Accepts(p.header); });
  if (!trace->processes.empty()) return "";
  return "no process matches --rank / --pid (the input holds " +
         (held.empty() ? std::string("none") : held) +
         "; a process without a rank matches no --rank)";
}

}  // namespace tracer::analysis
