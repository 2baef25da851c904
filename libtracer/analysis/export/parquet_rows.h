// The rows of the Parquet dataset (`tracer export --format parquet`,
// docs/parquet.md): one trace's processes as column batches
// (column_batch.h) for each table: processes, threads, names, ranges,
// stacks, gpu_ops, api_calls, pm_samples. Attribution (which range
// instances a GPU op counts toward) and the GPU projection of each range
// instance are the report's (model/attribution.h, model/projection.h), so a
// query over the dataset gives the report's numbers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::exporters {

// The schema version stored in every file's metadata (tracer.schema_version)
// and in _tracer_dataset.json; python/tracer/parquet_writer.py declares the
// columns of this version.
inline constexpr int kParquetSchemaVersion = 1;

// Rows per batch (and per Parquet row group): the memory the export holds
// beyond the trace it reads.
inline constexpr size_t kParquetBatchRows = 128 * 1024;

// The dataset's names: one id per distinct string over every input (id 0 =
// ""), so that queries group by integers and join the names table once at
// the end. Held for the whole export: memory grows with distinct names, not
// records (the bound of `tracer report --stream`).
class DatasetNames {
 public:
  DatasetNames();
  // kernel: the string names a kernel (gets a short label).
  int64_t Id(std::string_view name, bool kernel);
  // The names table (not partitioned by rank), after the last input.
  bool Write(std::FILE* out);

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<const std::string*> names_;  // by id; keys of ids_
  std::vector<uint8_t> kernel_;
};

// Writes every process of trace, numbering them from first_process (the
// `process` column; a process whose header has no rank goes to partition
// rank=-1); names go to *names, which the caller writes after the last
// trace. Returns false with *error set when the pipe fails.
bool WriteParquetBatches(const Trace& trace, uint32_t first_process,
                         const AttributionOptions& attribution, DatasetNames* names, std::FILE* out,
                         std::string* error);

}  // namespace tracer::analysis::exporters
