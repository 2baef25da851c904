// The output file: append-only writes with write(2), retried on EINTR and
// partial writes. On an error (disk full, I/O error) it stops writing for
// good, counts what it could not write and logs once: a torn file is still
// readable up to its last complete frame.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracer {

class TraceFile {
 public:
  TraceFile() = default;
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // Creates (truncates) path; false with *error set on failure.
  bool Open(const std::string& path, std::string* error);
  // Test hook: write to an already open descriptor (e.g. /dev/full).
  void Adopt(int fd, std::string path);
  bool Append(std::string_view bytes) noexcept;
  void Close() noexcept;

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

}  // namespace tracer
