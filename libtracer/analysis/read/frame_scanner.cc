#include "libtracer/analysis/read/frame_scanner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "libtracer/core/chunk_builder.h"

namespace tracer::analysis {
namespace {

constexpr size_t kReadAhead = 4u << 20;

uint32_t ReadLE32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string WithThousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

FrameScanner::FrameScanner(std::string_view bytes, std::string display_name)
    : name_(std::move(display_name)), memory_(bytes), size_(bytes.size()) {}

FrameScanner::FrameScanner(std::string path) : name_(std::move(path)), file_mode_(true) {}

FrameScanner::~FrameScanner() {
  if (fd_ >= 0) ::close(fd_);
}

bool OpenTraceFile(const std::string& path, int* fd, uint64_t* size, std::string* error) {
  *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    *error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  struct stat st;
  std::string problem;
  if (::fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = ": not a regular file";
  } else if (st.st_size == 0) {
    problem = ": empty file, not a tracer stream";
  }
  if (!problem.empty()) {
    ::close(*fd);
    *fd = -1;
    *error = path + problem;
    return false;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return true;
}

bool FrameScanner::Open(std::string* error) {
  if (file_mode_ && fd_ < 0) {
    if (!OpenTraceFile(name_, &fd_, &size_, error)) return false;
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  std::string_view magic;
  if (!Bytes(0, sizeof(kTraceMagic), &magic) ||
      std::memcmp(magic.data(), kTraceMagic, sizeof(kTraceMagic)) != 0) {
    *error = name_ + ": not a tracer stream (bad magic)";
    return false;
  }
  offset_ = sizeof(kTraceMagic);
  return true;
}

bool FrameScanner::Bytes(uint64_t off, size_t n, std::string_view* out) {
  if (off > size_ || size_ - off < n) return false;
  if (!file_mode_) {
    *out = memory_.substr(off, n);
    return true;
  }
  if (off < buffer_at_ || off + n > buffer_at_ + buffer_.size()) {
    // Refill from off: one read-ahead or the whole frame, whichever is larger.
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(size_ - off, std::max(n, kReadAhead)));
    buffer_.resize(want);
    size_t got = 0;
    while (got < want) {
      const ssize_t r =
          ::pread(fd_, buffer_.data() + got, want - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    buffer_.resize(got);
    buffer_at_ = off;
    if (got < n) return false;
  }
  *out = std::string_view(buffer_).substr(off - buffer_at_, n);
  return true;
}

FrameScanner::Result FrameScanner::Next(std::string_view* payload) {
  if (!damage_.empty()) return Result::kDamaged;
  if (offset_ >= size_) return Result::kEnd;
  std::string_view head;
  if (!Bytes(offset_, 8, &head)) {
    damage_ = "frame header cut short";
    return Result::kDamaged;
  }
  const uint32_t len = ReadLE32(head.data());
  const uint32_t crc = ReadLE32(head.data() + 4);
  if (len == 0 || len > kMaxFramePayload) {
    damage_ = "bad frame length " + std::to_string(len);
    return Result::kDamaged;
  }
  std::string_view body;
  if (!Bytes(offset_ + 8, len, &body)) {
    damage_ = "frame cut short: " + std::to_string(size_ - offset_ - 8) + " of " +
              std::to_string(len) + " payload bytes";
    return Result::kDamaged;
  }
  if (static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(body.data()), len)) != crc) {
    damage_ = "CRC mismatch";
    return Result::kDamaged;
  }
  offset_ += 8 + len;
  last_frame_bytes_ = 8 + len;
  ++frames_;
  *payload = body;
  return Result::kFrame;
}

void FrameScanner::RejectLast(std::string why) {
  if (frames_ == 0 || !damage_.empty()) return;
  offset_ -= last_frame_bytes_;
  --frames_;
  damage_ = std::move(why);
}

// Walks the frames that still look well-formed after a damaged one, to tell
// the user how much was lost.
uint64_t FrameScanner::CountFramesAfter(uint64_t off) {
  uint64_t frames = 0;
  std::string_view head;
  while (Bytes(off, 8, &head)) {
    const uint32_t len = ReadLE32(head.data());
    if (len == 0 || len > kMaxFramePayload || size_ - off - 8 < len) break;
    off += 8 + len;
    ++frames;
  }
  return frames;
}

std::string FrameScanner::DamageLine() {
  if (damage_.empty()) return {};
  const uint64_t at = offset_;
  std::string line = name_ + ": corrupt frame at byte " + std::to_string(at) + " (" + damage_ +
                     "); " + WithThousands(size_ - at) + " bytes from there ignored";
  // A damaged frame whose length is still plausible lets us count the
  // well-formed frames behind it.
  std::string_view head;
  const uint32_t len = Bytes(at, 8, &head) ? ReadLE32(head.data()) : 0;
  if (len > 0 && len <= kMaxFramePayload && size_ - at - 8 >= len) {
    line += " (the damaged frame and " + std::to_string(CountFramesAfter(at + 8 + len)) +
            " frame(s) after it)";
  }
  line += "; " + std::to_string(frames_) + " frame(s) before it kept";
  return line;
}

}  // namespace tracer::analysis
