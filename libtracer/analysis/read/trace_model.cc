#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

std::string ProcessLabelOf(const ProcessTrace& p) {
  std::string label = "pid " + std::to_string(p.header.pid);
  if (p.header.rank >= 0) label = "rank " + std::to_string(p.header.rank) + " (" + label + ")";
  return label;
}

}  // namespace tracer::analysis
