// Recognises an importable file by its first bytes (never its extension) and
// runs the matching importer: nsys SQLite exports ("SQLite format 3\0") and
// Kineto Chrome-trace JSON (gzip magic 1f 8b, or text starting with '{' or
// '[' after white space).
#pragma once

#include <string>
#include <string_view>

#include "libtracer/analysis/importers/import_fields.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

enum class ImportFormat { kUnknown, kNsysSqlite, kKinetoJson };

ImportFormat DetectImportFormat(std::string_view first_bytes);

// Runs the importer for the file's format. False with a one-line *error when
// the format is unknown or the import failed.
// fields: see ImportFields (kReported never for a trace written back).
bool ImportFile(const std::string& path, Trace* trace, std::string* error,
                ImportFields fields = ImportFields::kAll);

}  // namespace tracer::analysis::importers
