// A fast pre-scan of a stream's frames that counts the records of each kind
// without parsing them (walks the protobuf wire format of trace.proto's
// Chunk), so the reader can size its vectors once instead of growing them:
// growth copies and page faults were a third of the read time of a
// 1 M-kernel stream. Counts are hints: they are bounded by the bytes
// scanned, and garbage only makes them wrong, never unsafe.
#pragma once

#include <cstddef>
#include <string_view>

namespace tracer::analysis {

struct RecordCountHint {
  size_t ranges = 0, kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, launches = 0;
};

// Adds the counts of one Chunk payload to *hint.
void AddRecordCountHint(std::string_view payload, RecordCountHint* hint);

}  // namespace tracer::analysis
