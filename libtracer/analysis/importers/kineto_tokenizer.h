// Streaming tokenizer of Kineto Chrome-trace JSON, Perfetto style: a
// hand-written pull parser over blocks of bytes (no DOM, no per-character
// virtual call) that flattens each `traceEvents` element into a KinetoEvent
// and hands it to a callback, and collects the top-level facts
// (distributedInfo.rank, host_name, displayTimeUnit, deviceProperties).
// Keys may come in any order; unknown keys and nested values are skipped.
// Memory: one input block plus the strings of the event being read.
// (nlohmann::json's SAX parser did the same job at ~40 MB/s, a quarter of
// the speed; see bench/importers.)
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "libtracer/analysis/importers/kineto_event.h"

namespace tracer::analysis::importers {

using KinetoEventSink = std::function<void(const KinetoEvent&)>;
// Fills out with up to size bytes of the document; 0 at its end.
using ByteSource = std::function<size_t(char* out, size_t size)>;

// False with *error (one line, with the byte offset) on malformed JSON or
// when the document is neither an object with a traceEvents array nor an
// array of events; events delivered before the error stay delivered.
bool TokenizeKinetoJson(const ByteSource& source, const KinetoEventSink& sink,
                        KinetoTraceInfo* info, std::string* error);

}  // namespace tracer::analysis::importers
