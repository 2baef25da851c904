// Streaming reads of gzip-compressed or plain files through zlib's gzread
// (which passes uncompressed data through), in blocks, so a large trace is
// decompressed as it is parsed and never held whole.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

namespace tracer::analysis::importers {

class GzipFile {
 public:
  GzipFile() = default;
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;
  ~GzipFile();

  // False with *error when the file cannot be opened.
  bool Open(const std::string& path, std::string* error);
  // Up to size decompressed bytes; 0 at the end or after a failure.
  size_t Read(char* out, size_t size);
  // Set when a read failed (corrupt or truncated gzip data); reads then end.
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  // Decompressed bytes delivered so far.
  size_t bytes_read() const { return total_; }

 private:
  void* file_ = nullptr;  // gzFile, kept opaque so zlib.h stays out of this header
  bool failed_ = false;
  std::string failure_;
  size_t total_ = 0;
};

// Decompresses a GzipFile on a background thread, a few blocks ahead of the
// reader, so that inflating and parsing overlap on two cores. Memory: at
// most kDepth blocks of 256 KiB.
class PrefetchingGzipReader {
 public:
  PrefetchingGzipReader() = default;
  PrefetchingGzipReader(const PrefetchingGzipReader&) = delete;
  PrefetchingGzipReader& operator=(const PrefetchingGzipReader&) = delete;
  ~PrefetchingGzipReader();

  bool Open(const std::string& path, std::string* error);
  // Same contract as GzipFile::Read.
  size_t Read(char* out, size_t size);
  // Stops the background thread; file() is safe to read afterwards.
  void Close();
  const GzipFile& file() const { return file_; }

 private:
  static constexpr size_t kDepth = 4;
  void Produce();

  GzipFile file_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<char>> ready_;  // decompressed blocks, oldest first
  bool done_ = false;                    // producer reached the end (or failed)
  bool stop_ = false;                    // reader is gone
  std::vector<char> current_;
  size_t current_pos_ = 0;
};

// A std::streambuf over GzipFile, for std::istream consumers.
class GzipStreamBuf : public std::streambuf {
 public:
  bool Open(const std::string& path, std::string* error);
  const GzipFile& file() const { return file_; }

 protected:
  int_type underflow() override;

 private:
  GzipFile file_;
  std::vector<char> buffer_;
};

}  // namespace tracer::analysis::importers
