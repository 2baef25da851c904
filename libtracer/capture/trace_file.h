// The output file: append-only writes with write(2), retried on EINTR and
// partial writes. On an error (disk full, I/O error) it stops writing for
// good, counts what it could not write and logs once: a torn file is still
// readable up to its last complete frame.
//
// Opening is careful because the path is often predictable (tracer-<pid>.trace
// in a shared directory) and several processes of one run may pick the same
// name (set by hand, an early-forked or exec'ed child): see Open.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace tracer {

class TraceFile {
 public:
  enum class OpenResult {
    kOpened,
    // Another process of this run writes or wrote it: try another name.
    kInUse,
    // Not safe or not possible to write there; *error says why and what to do.
    kRefused,
  };

  TraceFile() = default;
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // Opens path for a new trace without ever following a symbolic link:
  // created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW) when absent. An
  // existing path is refused when it is a symbolic link, not a regular file,
  // owned by another user or hard-linked elsewhere. An existing file of ours
  // is in use when another process holds its lock (every open trace is
  // flock()ed until closed) or its header says a process of run `run_id`
  // wrote it and finished (a forked child, this program before it exec'ed
  // itself: SameRun in run_id.h). Any other file is an earlier run's: refused
  // (never overwritten silently) unless force_overwrite
  // (TRACER_FORCE_OVERWRITE), which truncates and reuses it. One exception:
  // a file with no complete header yet, modified since `run_start_wall_ns`
  // (this process's start), is taken for one a sibling has just created and
  // not yet locked: in use, unless forced (the sibling then finds its lock
  // taken and moves on to another name).
  OpenResult Open(const std::string& path, std::string_view run_id, int64_t run_start_wall_ns,
                  std::string* error, bool force_overwrite = false);
  // Same, with this process's run and start time; kInUse is reported as an
  // error.
  bool Open(const std::string& path, std::string* error);
  // Test hook: write to an already open descriptor (e.g. /dev/full).
  void Adopt(int fd, std::string path);
  bool Append(std::string_view bytes) noexcept;
  void Close() noexcept;

  const std::string& path() const { return path_; }
  bool failed() const { return failed_; }
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t bytes_lost() const { return bytes_lost_; }
  uint64_t frames_lost() const { return frames_lost_; }

 private:
  int fd_ = -1;
  std::string path_;
  bool failed_ = false;
  uint64_t bytes_written_ = 0;
  uint64_t bytes_lost_ = 0;
  uint64_t frames_lost_ = 0;
};

// When this process started (CLOCK_REALTIME ns, a clock tick early), from
// /proc/self/stat; now when that cannot be read. An exec keeps it.
int64_t ProcessStartWallNs() noexcept;
// The same in clock ticks after boot (/proc/self/stat field 22); false when
// it cannot be read. Of another process with pid.
bool ProcessStartTicks(uint64_t* ticks) noexcept;
bool ProcessStartTicks(pid_t pid, uint64_t* ticks) noexcept;

}  // namespace tracer
