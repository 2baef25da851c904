// Tokenizer of the stream's framing (proto/trace.proto, FILE LAYOUT): hands
// out each intact frame's payload in file order and stops at the first
// damaged frame with one line saying where and what was lost. It reads bytes
// in memory or a file through a bounded buffer (pread, no mapping), so a
// streaming reader holds one frame at a time whatever the file size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracer::analysis {

// Opens path read-only. False with a one-line *error ("<path>: cannot open
// (...)", "not a regular file", "empty file, ...") when it cannot be read as
// a trace file; *fd is then -1.
bool OpenTraceFile(const std::string& path, int* fd, uint64_t* size, std::string* error);

class FrameScanner {
 public:
  // Over bytes in memory (magic included); they must outlive the scanner.
  FrameScanner(std::string_view bytes, std::string display_name);
  // Over the file at path; call Open() before anything else.
  explicit FrameScanner(std::string path);
  ~FrameScanner();
  FrameScanner(const FrameScanner&) = delete;
  FrameScanner& operator=(const FrameScanner&) = delete;

  // Opens the file (file mode) and checks the magic. False with a one-line
  // *error when it cannot be read or is not a tracer stream.
  bool Open(std::string* error);

  enum class Result { kFrame, kEnd, kDamaged };
  // The next frame's payload (valid until the next call), kEnd after the
  // last intact frame of an undamaged file, kDamaged at the first bad frame.
  Result Next(std::string_view* payload);

  // The payload last returned does not parse: it becomes the damaged frame.
  void RejectLast(std::string why);

  uint64_t offset() const { return offset_; }  // bytes consumed so far
  uint64_t size() const { return size_; }
  uint64_t frames() const { return frames_; }
  const std::string& display_name() const { return name_; }
  // After kDamaged: "<file>: corrupt frame at byte N (why); B bytes from
  // there ignored (...); F frame(s) before it kept".
  std::string DamageLine();

 private:
  // n bytes at file offset off, or false when the file has fewer.
  bool Bytes(uint64_t off, size_t n, std::string_view* out);
  uint64_t CountFramesAfter(uint64_t off);

  std::string name_;
  bool file_mode_ = false;
  std::string_view memory_;  // memory mode
  int fd_ = -1;              // file mode
  std::string buffer_;       // file mode: bytes [buffer_at_, buffer_at_ + size)
  uint64_t buffer_at_ = 0;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint64_t frames_ = 0;
  uint64_t last_frame_bytes_ = 0;
  std::string damage_;
};

}  // namespace tracer::analysis
