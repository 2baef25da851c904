// libFuzzer target: our stream format (framing, protobuf chunks, columnar
// batches) through the in-memory reader, the analysis (range index,
// attribution, projection) and every core table, rendered as text.
// Inputs without the stream magic get it prepended, so mutations reach the
// frame scanner instead of stopping at "bad magic".
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/core/chunk_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracer::analysis;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!LooksLikeTraceStream(bytes)) {
    bytes.insert(0, tracer::kTraceMagic, sizeof(tracer::kTraceMagic));
  }
  Trace trace;
  std::string error;
  if (!ReadTraceBytes(bytes, "fuzz.trace", &trace, &error)) return 0;
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const ReportOptions options;
  std::vector<Table> tables = {SummaryTable(analyzed, options),
                               RangesTable(analyzed, options),
                               KernelsTable(analyzed, options),
                               RangeKernelsTable(analyzed, options),
                               GpuProjectionTable(analyzed, options),
                               MemoryOpsTable(analyzed, options),
                               ApiTable(analyzed, options)};
  const std::string text = RenderTables(tables, OutputFormat::kText);
  (void)text;
  return 0;
}
