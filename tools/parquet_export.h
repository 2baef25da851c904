// `tracer export --format parquet -o DIR`: the Parquet dataset of
// docs/parquet.md, written by python/tracer/parquet_writer.py (pyarrow) from
// the column batches this CLI streams to it over a pipe, one input file at a
// time.
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/importers/range_names.h"

namespace tracer::cli {

struct ParquetExportArgs {
  std::vector<std::string> files;
  std::string output;  // the dataset folder
  bool force_overwrite = false;
};

// Returns the exit code; every failure is one "tracer export: ..." line.
int RunParquetExport(const ParquetExportArgs& args, const analysis::RangeNameRules& names);

}  // namespace tracer::cli
