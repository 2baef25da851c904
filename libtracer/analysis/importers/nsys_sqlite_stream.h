// Bounded-memory reading of an Nsight Systems SQLite export, for
// `tracer report --stream` (tables/streaming_report.h): the records of the
// whole-trace importer (nsys_sqlite_importer.h), handed out a few thousand
// at a time in the order the stream aggregator relies on
// (tables/stream_aggregator.h), the order of a stream the tracer recorded.
//
// Reading: one plain read of each activity table first (PrescanTables: the
// process and time columns, and the correlation id and device of GPU work),
// the tables side by side on threads, notes which correlation ids have GPU
// work, one bit each per process (correlation_bits.h), whether the table's
// rows are stored in (process, start) order, as exports mostly are, and what
// SQL would scan each table again for (rows without a process, the last
// timestamp, the processes, their devices, sync counts). Then each table is
// read as stored when it is, else through ORDER BY (pid, start), which
// SQLite sorts on disk (on a thread and connection of its own,
// prefetched_rows.h); NVTX_EVENTS through SQL on this connection; and one
// sweep merges them by time per process. The activity tables are read
// straight from the file where the export allows it (sqlite_table_scan.h:
// the scan holds a few MiB of the file resident, whatever its size), each
// falling back to SQL by itself, from the row where the scan gave up. What
// the sweep holds is the push/pop ranges open on each thread plus the
// ranges closed but not yet handed out; never the records.
//
//   * NVTX push/pop and start/end ranges become RangeRecords when the sweep
//     passes their end (children before parents). Ids, parents and depths
//     are the importer's (range_nesting.h: start order, per-thread stack);
//     an unclosed range ends at the export's last timestamp, as there.
//   * Runtime/driver calls become ApiRecords; one whose correlation id has a
//     kernel, memcpy or memset (the bits above) also gets a LaunchRecord at
//     its start whose range_id is the innermost push/pop range open on its
//     thread then: the range the whole-trace path finds through the API
//     record (RangeIndex::InnermostOpenAt).
//   * Kernels, memcpys, memsets and marks as the importer reads them.
//
// Records the importer files under a fallback process (no globalPid /
// globalTid) depend on the order it reads the tables: such an export is
// refused with *unsupported set, and the caller reads it whole; so is one
// whose correlation ids are too large for the bits (CUPTI's are dense from 1).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

struct NsysStreamCallbacks {
  // One batch of one process's records (definitions so far included, as
  // StreamTraceFile's); the record vectors are cleared after the call.
  BatchCallback on_batch;
  // After a process's last batch: its definitions, header, footer and
  // counters are complete (thread names included). Processes come in pid
  // order, as the importer appends them.
  std::function<void(const ProcessTrace&)> on_process;
};

// False with a one-line *error when the export cannot be read; *unsupported
// (may be null) is then true when it is readable but needs the whole-trace
// importer (see above).
bool StreamNsysSqlite(const std::string& path, StringTable* strings,
                      const NsysStreamCallbacks& callbacks, std::string* error,
                      bool* unsupported = nullptr, size_t batch_records = 4096);

}  // namespace tracer::analysis::importers
