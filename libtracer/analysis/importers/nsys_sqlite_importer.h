// Importer of Nsight Systems SQLite exports (`nsys export --type sqlite`),
// every schema variant met so far: the 2020 exports (NVTX_EVENTS.text,
// DomainStrings, no PROCESSES table) and schema 3.x (textId, PROCESSES,
// META_DATA_EXPORT). Columns are looked up by name, so a variant differing
// only in extra columns needs nothing; a missing column the importer needs is
// a clear error naming table and column.
//
// Mapping to the model (trace_model.h):
//   * one ProcessTrace per process found in the activity and NVTX tables
//     (pid from globalPid / globalTid, see nsys_global_id.h), header.source =
//     "nsys-sqlite", header.pid = that pid; timestamps stay nsys session ns.
//   * CUPTI_ACTIVITY_KIND_KERNEL -> kernels (name = demangledName, as nsys's
//     cuda_gpu_kern_sum groups), MEMCPY, MEMSET, SYNCHRONIZATION.
//   * CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver, eventClass 0 / 1) ->
//     api_calls with name = nameId's string; cbid is unknown (0).
//   * NVTX_EVENTS: eventType 59 push/pop and 60 start/end -> ranges (text or
//     StringIds[textId]); 34 -> marks; 75 domain create -> domain names; 33
//     -> category names. Push/pop parents are recovered by time per thread.
//     Ranges without an end are unclosed (flag) and end at the last
//     timestamp of the export.
//   * CUDA_GPU_MEMORY_USAGE_EVENTS (--cuda-memory-usage=true) -> memory_usage,
//     running totals of the bytes allocated per device (nsys_memory_usage.h).
//   * ThreadNames -> thread names; thread ids are assigned per process.
//   * PROCESSES.name -> header.command_line (the model has no process name);
//     TARGET_INFO_SESSION_START_TIME.utcEpochNs -> session_start_wall_ns.
//   * Counters: import_* (records without pid, skipped NVTX event types,
//     unclosed ranges, partially overlapping ranges).
//
// Reading: libsqlite3 reads the schema and the small tables; the rows of the
// tables it imports are decoded straight from a mapping of the file
// (sqlite_table_scan.h), the columns it reads only, as the import steps
// through them. A table or a file the direct reading does not handle (WAL,
// an index, a value of an unexpected type...) is read through SQL instead,
// from the row where it gave up: the same records either way.
#pragma once

#include <string>

#include "libtracer/analysis/importers/import_fields.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

// How the rows of the large tables are read: straight from the file where
// the export allows it (sqlite_table_scan.h; each table falls back to SQL by
// itself), or all through SQL: the reference the direct reading must equal
// (tests, benchmarks).
enum class NsysRowReader { kDirect, kSql };

// Appends the processes of the export at path to trace. False with a
// one-line *error when the file is not a readable nsys export.
// fields: ImportFile's (with kReported the fields no report table reads
// stay zero).
bool ImportNsysSqlite(const std::string& path, Trace* trace, std::string* error,
                      ImportFields fields = ImportFields::kAll,
                      NsysRowReader reader = NsysRowReader::kDirect);

}  // namespace tracer::analysis::importers
