// Which fields an import fills, so a caller says at its call site what it
// reads the trace for (ImportFile, LoadInput, LoadInputs).
#pragma once

namespace tracer::analysis::importers {

enum class ImportFields {
  // Everything the format carries: for a trace written back (tracer import,
  // export, diff).
  kAll,
  // What some `tracer report` table reads: the importer may leave out the
  // rest (nsys: NVTX payloads, colors and categories, kernel launch
  // configurations, which SQLite reads at a cost whether NULL or not), and
  // those fields stay zero.
  kReported,
};

}  // namespace tracer::analysis::importers
