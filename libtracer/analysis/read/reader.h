// Reader of our own stream format (proto/trace.proto, FILE LAYOUT): appends
// one ProcessTrace to a Trace, remapping the file's string ids into the
// trace's global StringTable, decoding the columnar batches and summing the
// counter deltas.
//
// Damage handling: a torn or corrupt tail (length out of range, payload cut
// short, CRC mismatch) keeps every record of the frames before it and adds
// ONE line to trace->warnings naming the file, the byte offset and what was
// lost. An intact frame (length and CRC right) whose payload does not parse
// is skipped alone, with one line counting such frames. Only "not a trace at all" (missing file,
// unreadable, bad magic) fails. Never asserts or crashes on any input.
//
// Memory: ReadTraceFile's model holds every record; StreamTraceFile hands
// out one frame's records at a time (docs/design.md section 5: bounded reading).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

// Reads the stream file at path. Returns false with a one-line *error when
// the file cannot be read or is not a tracer stream; trace is then unchanged.
// Told now and then how far reading got (bytes done of total), last with
// done == total, so a CLI can draw a progress bar for large inputs.
using ReadProgress = std::function<void(uint64_t done, uint64_t total)>;

bool ReadTraceFile(const std::string& path, Trace* trace, std::string* error,
                   const ReadProgress& progress = {});

// Same, from bytes in memory (magic included); display_name stands for the
// file in warnings and in ProcessTrace::source_file.
bool ReadTraceBytes(std::string_view bytes, const std::string& display_name, Trace* trace,
                    std::string* error, const ReadProgress& progress = {});

// Streaming: reads path frame by frame through a bounded buffer (frames are
// read and parsed on a thread of its own, at most two ahead; on_batch is
// called on the calling thread, in file order). After each frame on_batch
// sees *process holding that frame's records only (string
// fields already global ids in *strings); definitions, header, footer and
// counters accumulate and stay. Record vectors are cleared after the call.
// Damage and decoding problems become lines in *warnings, as for
// ReadTraceFile. Returns false with *error only when path is not a readable
// stream. Thread/domain/category names get global ids at the end.
using BatchCallback = std::function<void(const ProcessTrace&)>;
bool StreamTraceFile(const std::string& path, StringTable* strings, ProcessTrace* process,
                     const BatchCallback& on_batch, std::vector<std::string>* warnings,
                     std::string* error, const ReadProgress& progress = {});

// Whether the stream file at path was closed cleanly: "" when its frames run
// to the end of the file and the last one holds the footer, else why not
// ("no footer after N frame(s)", "ends inside a frame (B of L bytes)", ...).
// Walks the frame headers only (one small read per frame) and parses the
// last frame, so `tracer run` can check what it reports as written.
std::string IncompleteTraceReason(const std::string& path);

// True when bytes start with the stream magic (used by LoadInput to dispatch).
bool LooksLikeTraceStream(std::string_view first_bytes);

}  // namespace tracer::analysis
