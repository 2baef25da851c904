// `tracer export --format sqlite`: writes a Trace as an SQLite database with
// the tables and columns of an Nsight Systems export (schema 3.x, checked
// against a real nsys 2026.2 export), so that SQL written for
// nsys exports (per-range kernel sums, for instance) runs unchanged:
//   StringIds, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME (runtime
//   and driver calls, eventClass 0 / 1), CUPTI_ACTIVITY_KIND_MEMCPY,
//   CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
//   NVTX_EVENTS (59 push/pop, 60 start/end, 34 mark, 75 domain create),
//   ThreadNames, PROCESSES, TARGET_INFO_CUDA_STREAM,
//   TARGET_INFO_SESSION_START_TIME, META_DATA_EXPORT, ENUM_NSYS_EVENT_TYPE,
//   ENUM_NSYS_EVENT_CLASS, ENUM_CUDA_MEMCPY_OPER.
// globalPid / globalTid use nsys's serialized GlobalId (NsysGlobalId).
// Columns we have no data for are NULL, or 0 where nsys declares NOT NULL.
#pragma once

#include <cstdint>
#include <string>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::exporters {

// nsys GlobalId: bits 55..48 VM id (1, as nsys writes for the host), 47..24
// pid, 23..0 tid (0 for a globalPid).
inline int64_t NsysGlobalId(uint64_t pid, uint64_t tid) {
  return static_cast<int64_t>((uint64_t{1} << 48) | ((pid & 0xFFFFFF) << 24) | (tid & 0xFFFFFF));
}

// Replaces path with a new database. False with a one-line *error naming
// the file on failure.
bool WriteSqlite(const Trace& trace, const std::string& path, std::string* error);

}  // namespace tracer::analysis::exporters
