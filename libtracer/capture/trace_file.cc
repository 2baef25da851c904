#include "libtracer/capture/trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "libtracer/capture/log.h"

namespace tracer {

TraceFile::~TraceFile() { Close(); }

bool TraceFile::Open(const std::string& path, std::string* error) {
  std::string owned = path;  // copied first: a failure must not leave an empty file
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create '" + path + "': " + strerror(errno);
    return false;
  }
  Adopt(fd, std::move(owned));
  return true;
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
