#include "libtracer/analysis/importers/load_input.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/read/reader.h"

namespace tracer::analysis {

bool LoadInput(const std::string& path, Trace* trace, std::string* error,
               const ReadProgress& progress, importers::ImportFields fields) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  char head[16] = {};
  in.read(head, sizeof(head));
  const std::string_view first(head, static_cast<size_t>(in.gcount()));
  if (LooksLikeTraceStream(first)) return ReadTraceFile(path, trace, error, progress);
  // nsys SQLite exports and Kineto JSON (analysis/importers/).
  if (importers::DetectImportFormat(first) != importers::ImportFormat::kUnknown) {
    return importers::ImportFile(path, trace, error, fields);
  }
  *error = path +
           ": unknown input format (expected a tracer stream, an nsys SQLite export or a "
           "Kineto JSON trace)";
  return false;
}

}  // namespace tracer::analysis
