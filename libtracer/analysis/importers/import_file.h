// Recognises an importable file by its first bytes (never its extension) and
// runs the matching importer: nsys SQLite exports ("SQLite format 3\0") and
// Kineto Chrome-trace JSON (gzip magic 1f 8b, or text starting with '{' or
// '[' after white space).
#pragma once

#include <string>
#include <string_view>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

enum class ImportFormat { kUnknown, kNsysSqlite, kKinetoJson };

ImportFormat DetectImportFormat(std::string_view first_bytes);

// Runs the importer for the file's format. False with a one-line *error when
// the format is unknown or the import failed.
// report_only: the import may leave out what no `tracer report` table reads
// (nsys: NVTX payloads, colors, categories and end threads, kernel launch
// configurations), columns SQLite reads at a cost whether NULL or not. Never
// for a trace that is written back (tracer import, export, diff).
bool ImportFile(const std::string& path, Trace* trace, std::string* error,
                bool report_only = false);

}  // namespace tracer::analysis::importers
