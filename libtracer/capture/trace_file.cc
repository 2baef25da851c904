#include "libtracer/capture/trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "libtracer/capture/log.h"
#include "libtracer/capture/run_id.h"

namespace tracer {
namespace {

int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string WhatToDo() {
  return "; remove it or name another output with TRACER_OUTPUT (tracer run -o), in a directory "
         "only you can write to";
}

// The checks on an existing file, made on the opened descriptor (so nothing
// can swap the file between check and use). Empty when it is safe to write.
std::string Unsafe(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "'" + path + "' exists and is not a regular file";
  if (st.st_uid != geteuid()) {
    return "'" + path + "' belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  }
  if (st.st_nlink != 1) return "'" + path + "' has other hard links";
  return std::string();
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

bool ProcessStartTicks(uint64_t* ticks) noexcept { return ProcessStartTicks(getpid(), ticks); }

bool ProcessStartTicks(pid_t pid, uint64_t* ticks) noexcept {
  char stat_path[48];
  snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(stat_path, "re");
  if (!f) return false;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  // Field 22 (starttime, clock ticks after boot); fields 3.. follow the
  // command name, which ends at the last ')'.
  const char* p = strrchr(buf, ')');
  if (!p) return false;
  int field = 2;
  while (*p && field < 22) {
    if (*p == ' ') ++field;
    ++p;
  }
  if (field != 22) return false;
  *ticks = strtoull(p, nullptr, 10);
  return true;
}

int64_t ProcessStartWallNs() noexcept {
  const int64_t now = ClockNs(CLOCK_REALTIME);
  uint64_t ticks = 0;
  if (!ProcessStartTicks(&ticks)) return now;
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return now;
  const int64_t boot_wall = now - ClockNs(CLOCK_BOOTTIME);
  const int64_t tick_ns = 1000000000 / hz;
  // One tick early: the start time is rounded down to a tick, file times to
  // the kernel's coarse clock. Erring early only ever picks a new name.
  return boot_wall + static_cast<int64_t>(ticks) * tick_ns - tick_ns;
}

TraceFile::~TraceFile() { Close(); }

TraceFile::OpenResult TraceFile::Open(const std::string& path, std::string_view run_id,
                                      int64_t run_start_wall_ns, std::string* error,
                                      bool force_overwrite) {
  std::string owned = path;  // copied first: a failure must not leave an empty file
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    const bool created = fd >= 0;
    if (!created) {
      if (errno != EEXIST) {
        *error = "cannot create '" + path + "': " + strerror(errno);
        return OpenResult::kRefused;
      }
      // O_NONBLOCK: a FIFO planted there must not block the host.
      // Read and write: its header says which run wrote it.
      fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        if (errno == ENOENT) continue;  // removed meanwhile: create it
        if (errno == ELOOP) {
          *error = "refusing to write the trace to '" + path +
                   "': it is a symbolic link (never followed: another user may have planted it)" +
                   WhatToDo();
        } else if (errno == ENXIO) {
          *error = "refusing to write the trace to '" + path + "': it is not a regular file" +
                   WhatToDo();
        } else {
          *error = "cannot open '" + path + "': " + strerror(errno);
        }
        return OpenResult::kRefused;
      }
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      *error = "cannot open '" + path + "': " + strerror(errno);
      ::close(fd);
      return OpenResult::kRefused;
    }
    if (std::string why = Unsafe(path, st); !why.empty()) {
      *error = "refusing to write the trace to " + why + WhatToDo();
      ::close(fd);
      return OpenResult::kRefused;
    }
    // Held until Close (and by forked children sharing the descriptor): a
    // process that finds it held knows the file is being written. A file
    // system without locks (ENOLCK) leaves the time check alone.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      return OpenResult::kInUse;
    }
    if (!created) {
      // Ours (see Open in trace_file.h): never overwritten, forced or not.
      std::string its_run;
      const TraceRunId read = ReadTraceRunId(fd, &its_run);
      const bool this_run = read == TraceRunId::kFound && SameRun(its_run, run_id);
      const bool just_created =
          read == TraceRunId::kUnreadable && !force_overwrite && MtimeNs(st) >= run_start_wall_ns;
      if (this_run || just_created) {
        ::close(fd);
        return OpenResult::kInUse;
      }
      if (!force_overwrite) {
        *error = "'" + path +
                 "' already exists (an earlier trace?): not overwritten; remove it, name another "
                 "output with TRACER_OUTPUT (tracer run -o), or set TRACER_FORCE_OVERWRITE=1 "
                 "(tracer run --force-overwrite)";
        ::close(fd);
        return OpenResult::kRefused;
      }
      if (ftruncate(fd, 0) != 0) {
        *error = "cannot truncate '" + path + "': " + strerror(errno);
        ::close(fd);
        return OpenResult::kRefused;
      }
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    }
    Adopt(fd, std::move(owned));
    return OpenResult::kOpened;
  }
  *error = "cannot create '" + path + "': it keeps appearing and disappearing";
  return OpenResult::kRefused;
}

bool TraceFile::Open(const std::string& path, std::string* error) {
  switch (Open(path, ThisRunId(), ProcessStartWallNs(), error)) {
    case OpenResult::kOpened:
      return true;
    case OpenResult::kInUse:
      *error = "'" + path + "' is being written by another process";
      return false;
    case OpenResult::kRefused:
      break;
  }
  return false;
}

void TraceFile::Adopt(int fd, std::string path) {
  fd_ = fd;
  path_ = std::move(path);
  failed_ = false;
}

bool TraceFile::Append(std::string_view bytes) noexcept {
  if (bytes.empty()) return true;
  if (fd_ < 0 || failed_) {
    bytes_lost_ += bytes.size();
    ++frames_lost_;
    return false;
  }
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ENOSPC;
      failed_ = true;
      bytes_lost_ += left;
      ++frames_lost_;
      try {
        LogOnce("write-failed", LogLevel::kError,
                "writing '" + path_ + "' failed (" + strerror(err) +
                    "); the trace is complete up to the last frame written, later records are "
                    "counted as lost");
      } catch (...) {
      }
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return true;
}

void TraceFile::Close() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace tracer
