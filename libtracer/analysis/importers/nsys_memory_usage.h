// CUDA memory usage of an Nsight Systems export: the table
// CUDA_GPU_MEMORY_USAGE_EVENTS that `nsys profile --cuda-memory-usage=true`
// records, one row per CUDA allocation or free, made into running totals of
// the bytes allocated and not yet freed, per process and device: the
// MemoryUsageSample counters the Chrome export draws (trace_model.h).
//
// Schema: NVIDIA Nsight Systems Post-Collection Analysis Guide, "SQLite
// Schema Reference" (2026.4 release, export schema 3.28.1):
//   CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId,
//     address, pc, bytes, memKind, memoryOperationType -- all NOT NULL --,
//     name, correlationId, streamId, localMemoryPool*, importedMemoryPool*)
//   memKind REFERENCES ENUM_CUDA_MEM_KIND(id), memoryOperationType
//   REFERENCES ENUM_CUDA_DEV_MEM_EVENT_OPER(id); both enum tables are
//   (id, name, label).
// The enum values are read from the export's own ENUM tables, by symbol
// name, when it has them (an nsys 2026.2 export writes them even without
// the events table); otherwise the values those tables hold there:
//   ENUM_CUDA_MEM_KIND 0 PAGEABLE, 1 PINNED, 2 DEVICE, 3 ARRAY, 4 MANAGED,
//     5 DEVICE_STATIC, 6 MANAGED_STATIC, 7 UNKNOWN (CUDA_MEMOPR_MEMORY_KIND_*)
//   ENUM_CUDA_DEV_MEM_EVENT_OPER 0 ALLOCATION, 1 DEALLOCATION
//     (CUDA_DEV_MEM_EVENT_OPR_*)
// These are nsys's own numbers, not CUPTI's CUpti_ActivityMemoryKind /
// CUpti_ActivityMemoryOperationType (which start at 0 = unknown / invalid).
//
// Mapping: device, array and device-static memory -> the device's counter
// (device = deviceId); managed and managed-static -> the device's managed
// counter (managed = true); pageable and pinned host memory -> the host
// counter (device = -1). A free is matched to the live allocation of the
// same process at the same address and takes that allocation's bytes, so a
// total is always the sum of the allocations recorded and not yet freed; a
// free of memory allocated before the capture began changes nothing and is
// counted (import_memory_frees_unmatched).
//
// Rows that cannot be used (a required value NULL, negative bytes, an
// unknown operation or memory kind) are skipped and counted in their
// process's counters (import_memory_events_skipped_<why>), never an error.
// The table is optional; when it lacks a required column, or cannot be
// read, the import goes on without memory usage and says so in one warning.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libtracer/analysis/importers/nsys_schema.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

struct NsysMemoryUsage {
  // By nsys pid (NsysPid of globalPid): samples in time order, counters.
  std::map<uint32_t, std::vector<MemoryUsageSample>> samples;
  std::map<uint32_t, std::map<std::string, uint64_t>> counters;
  uint64_t rows_without_pid = 0;  // skipped: no process to count them in
  std::string warning;            // non-empty: the table was not (fully) read
};

// Reads CUDA_GPU_MEMORY_USAGE_EVENTS of the open export; empty when it has
// no such table.
NsysMemoryUsage ReadNsysMemoryUsage(NsysSchema* schema);

}  // namespace tracer::analysis::importers
