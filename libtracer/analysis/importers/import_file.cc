#include "libtracer/analysis/importers/import_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "libtracer/analysis/importers/kineto_json_importer.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"

namespace tracer::analysis::importers {

ImportFormat DetectImportFormat(std::string_view b) {
  static constexpr std::string_view kSqlite("SQLite format 3\0", 16);
  if (b.starts_with(kSqlite)) return ImportFormat::kNsysSqlite;
  if (b.size() >= 2 && static_cast<unsigned char>(b[0]) == 0x1f &&
      static_cast<unsigned char>(b[1]) == 0x8b) {
    return ImportFormat::kKinetoJson;
  }
  for (char c : b) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[' ? ImportFormat::kKinetoJson : ImportFormat::kUnknown;
  }
  return ImportFormat::kUnknown;
}

bool ImportFile(const std::string& path, Trace* trace, std::string* error, ImportFields fields) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  char head[64] = {};
  in.read(head, sizeof(head));
  switch (DetectImportFormat(std::string_view(head, static_cast<size_t>(in.gcount())))) {
    case ImportFormat::kNsysSqlite:
      return ImportNsysSqlite(path, trace, error, fields);
    case ImportFormat::kKinetoJson:
      return ImportKinetoJson(path, trace, error);
    case ImportFormat::kUnknown:
      break;
  }
  *error = path + ": unknown format (expected an nsys SQLite export or a Kineto JSON trace)";
  return false;
}

}  // namespace tracer::analysis::importers
