#include "libtracer/analysis/importers/kineto_json_importer.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "libtracer/analysis/importers/gzip_stream.h"
#include "libtracer/analysis/importers/kineto_converter.h"
#include "libtracer/analysis/importers/kineto_tokenizer.h"
#include "libtracer/analysis/importers/range_nesting.h"

namespace tracer::analysis::importers {
namespace {

using namespace std::literals;

template <typename T>
void SortByStart(std::vector<T>* v) {
  std::stable_sort(v->begin(), v->end(),
                   [](const T& a, const T& b) { return a.start_ns < b.start_ns; });
}

// The whole trace: every record kept, ranges nested, ops in start order.
ProcessTrace FinishWhole(KinetoConverter* converter, const KinetoTraceInfo& info,
                         const std::string& path) {
  converter->FinishDefinitions(info, path);
  ProcessTrace& p = converter->process();
  const NestingResult nesting = AssignRangeIdsAndNesting(&p.ranges);
  if (nesting.partial_overlaps != 0) {
    p.counters["import_partially_overlapping_ranges"] += nesting.partial_overlaps;
  }
  StableSortByStart(&p.kernels);
  SortByStart(&p.memcpys);
  SortByStart(&p.memsets);
  SortByStart(&p.api_calls);
  uint64_t end = 0;
  for (const auto& r : p.ranges) end = std::max(end, r.end_ns);
  for (const auto& k : p.kernels) end = std::max(end, k.end_ns);
  p.footer = KinetoFooter(p.ranges.size(), p.kernels.size(), p.memcpys.size(), p.memsets.size(),
                          p.api_calls.size(), end, info);
  return std::move(p);
}

}  // namespace

bool ImportKinetoJson(const std::string& path, Trace* trace, std::string* error) {
  PrefetchingGzipReader reader;
  if (!reader.Open(path, error)) return false;
  KinetoConverter converter(&trace->strings);
  KinetoTraceInfo info;
  std::string tok_error;
  const bool ok =
      TokenizeKinetoJson([&](char* out, size_t size) { return reader.Read(out, size); },
                         [&](const KinetoEvent& e) { converter.Add(e); }, &info, &tok_error);
  reader.Close();
  const GzipFile& file = reader.file();
  if (file.failed()) {
    *error = path + ": " + file.failure() + " after " + std::to_string(file.bytes_read()) +
             " decompressed bytes";
    return false;
  }
  if (!ok) {
    *error = path + ": " + tok_error;
    return false;
  }
  trace->processes.push_back(FinishWhole(&converter, info, path));
  return true;
}

}  // namespace tracer::analysis::importers
