#include "libtracer/analysis/importers/gzip_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>

namespace tracer::analysis::importers {
namespace {
constexpr unsigned kBlock = 1u << 18;  // 256 KiB: large enough to amortise gzread calls
}

GzipFile::~GzipFile() {
  if (file_ != nullptr) gzclose(static_cast<gzFile>(file_));
}

bool GzipFile::Open(const std::string& path, std::string* error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  gzbuffer(f, kBlock);
  file_ = f;
  return true;
}

size_t GzipFile::Read(char* out, size_t size) {
  if (file_ == nullptr || failed_ || size == 0) return 0;
  const unsigned want = size > INT_MAX ? INT_MAX : static_cast<unsigned>(size);
  const int n = gzread(static_cast<gzFile>(file_), out, want);
  int code = 0;
  if (n < 0) {
    const char* msg = gzerror(static_cast<gzFile>(file_), &code);
    failed_ = true;
    failure_ = msg != nullptr ? msg : "read error";
    return 0;
  }
  if (n == 0) {
    gzerror(static_cast<gzFile>(file_), &code);
    // A gzip stream cut short reads as a clean end with Z_BUF_ERROR.
    if (code == Z_BUF_ERROR) {
      failed_ = true;
      failure_ = "unexpected end of gzip data";
    }
    return 0;
  }
  total_ += static_cast<size_t>(n);
  return static_cast<size_t>(n);
}

PrefetchingGzipReader::~PrefetchingGzipReader() { Close(); }

void PrefetchingGzipReader::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PrefetchingGzipReader::Open(const std::string& path, std::string* error) {
  if (!file_.Open(path, error)) return false;
  // std::thread says it could not start only by throwing.
  try {
    thread_ = std::thread([this] { Produce(); });
  } catch (const std::system_error&) {
    done_ = true;  // no thread: Read() decompresses inline
  }
  return true;
}

void PrefetchingGzipReader::Produce() {
  for (;;) {
    std::vector<char> block(kBlock);
    const size_t n = file_.Read(block.data(), block.size());
    block.resize(n);
    std::unique_lock<std::mutex> lock(mu_);
    if (n == 0) {
      done_ = true;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [this] { return stop_ || ready_.size() < kDepth; });
    if (stop_) return;
    ready_.push_back(std::move(block));
    cv_.notify_all();
  }
}

size_t PrefetchingGzipReader::Read(char* out, size_t size) {
  if (!thread_.joinable()) return file_.Read(out, size);
  if (current_pos_ == current_.size()) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_ || !ready_.empty(); });
    if (ready_.empty()) return 0;
    current_ = std::move(ready_.front());
    ready_.pop_front();
    current_pos_ = 0;
    cv_.notify_all();
  }
  const size_t n = std::min(size, current_.size() - current_pos_);
  std::memcpy(out, current_.data() + current_pos_, n);
  current_pos_ += n;
  return n;
}

bool GzipStreamBuf::Open(const std::string& path, std::string* error) {
  if (!file_.Open(path, error)) return false;
  buffer_.resize(kBlock);
  setg(buffer_.data(), buffer_.data(), buffer_.data());
  return true;
}

GzipStreamBuf::int_type GzipStreamBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  const size_t n = file_.Read(buffer_.data(), buffer_.size());
  if (n == 0) return traits_type::eof();
  setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
  return traits_type::to_int_type(*gptr());
}

}  // namespace tracer::analysis::importers
