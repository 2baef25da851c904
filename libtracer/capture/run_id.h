// Which run a process and a trace file belong to. A "run" is one traced
// program with every process it starts (forked children, exec'ed
// subprocesses, ranks of a launcher it runs). The id tells, at an output name
// already taken, a file another process of this run wrote (keep it, take the
// next name) from one an earlier run left (refuse it, or replace it when
// TRACER_FORCE_OVERWRITE is set) -- which a file's time cannot: a run started
// the instant the last one ended sees that file written after it started.
//
// Where the id comes from, first match wins:
//   * TRACER_RUN_ID in the environment: set by `tracer run` for the program
//     it starts, by the LD_PRELOAD constructor of the first preloaded process
//     (injection/nvtx_injection.cc), and inherited by every descendant.
//   * Otherwise (the library named by hand in NVTX_INJECTION64_PATH: it is
//     loaded at the first NVTX call, too late to hand anything down) made up
//     from this process and its parent (NewRunId), once: a forked child
//     keeps its parent's. SameRun then also takes as this run's a file whose
//     made-up id names this process before an exec, a child it forked or
//     exec'ed before loading the library, or the parent that exec'ed it.
// Each trace records its run's id in its header, as the TRACER_RUN_ID entry
// of the configuration (Header.config). `tracer run` and the constructor
// make theirs with NewRunId too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tracer {

inline constexpr const char* kRunIdVariable = "TRACER_RUN_ID";

// An id for a run rooted at this process: "BOOT:PID.START:PPID.START" (boot
// id, then pid and start time in clock ticks of this process and of its
// parent). An exec keeps it; no other process of this boot has it.
std::string NewRunId();
// The same into out, without allocating (the LD_PRELOAD constructor runs
// before the program could handle an allocation failure); false when it
// does not fit. kRunIdBufferSize always fits.
inline constexpr size_t kRunIdBufferSize = 192;
bool FormatNewRunId(char* out, size_t size) noexcept;

// This process's run id (see above); read on first use and kept.
const std::string& ThisRunId();

// Whether a file with run id file_id belongs to the run `ours` (see above).
bool SameRun(std::string_view file_id, std::string_view ours);

enum class TraceRunId {
  kFound,       // *id is the id in the file's header
  kAbsent,      // a complete header without one (an older tracer wrote it)
  kUnreadable,  // not a trace, or its header is not complete (yet)
};
// Reads the run id from the header frame of the trace open at fd (with
// pread: the offset is left alone).
TraceRunId ReadTraceRunId(int fd, std::string* id) noexcept;

}  // namespace tracer
