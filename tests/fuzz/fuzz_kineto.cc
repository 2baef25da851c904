// libFuzzer target: the Kineto (PyTorch profiler) JSON importer, plain or
// gzipped (the importer tells them apart by content), then the analysis and
// the ranges and kernels tables of what it imported.
#include <cstddef>
#include <cstdint>

#include "libtracer/analysis/importers/kineto_json_importer.h"
#include "tests/fuzz/fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tracer::fuzz::ImportAnalyzeRender("kineto", data, size,
                                           tracer::analysis::importers::ImportKinetoJson);
}
