#include "libtracer/analysis/importers/prefetched_rows.h"

namespace tracer::analysis::importers {

PrefetchedRows::~PrefetchedRows() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PrefetchedRows::Open(const std::string& path, const std::string& sql, std::string* error) {
  if (!db_.Open(path, error)) return false;
  st_ = db_.Prepare(sql, error);
  if (!st_.valid()) return false;
  cols_ = st_.ColumnCount();
  if (cols_ > 64) {  // one null bit per column in a uint64_t
    *error = path + ": too many columns to prefetch";
    cols_ = 0;
    return false;
  }
  return true;
}

void PrefetchedRows::Start() {
  if (valid() && !thread_.joinable()) thread_ = std::thread([this] { Produce(); });
}

void PrefetchedRows::Produce() {
  const size_t cols = static_cast<size_t>(cols_);
  while (true) {
    Block b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    b.values.resize(kBlockRows * cols);
    b.nulls.resize(kBlockRows);
    b.rows = 0;
    bool more = true;
    while (b.rows < kBlockRows && (more = st_.Step())) {
      int64_t* v = &b.values[b.rows * cols];
      uint64_t nulls = 0;
      for (size_t c = 0; c < cols; ++c) {
        const int col = static_cast<int>(c);
        if (((tracked_nulls_ >> c) & 1) != 0 && st_.IsNull(col)) {
          nulls |= uint64_t{1} << c;
          v[c] = 0;
        } else {
          v[c] = st_.Int(col);
        }
      }
      b.nulls[b.rows++] = nulls;
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || full_.size() < kMaxQueued; });
    if (stop_) return;
    if (b.rows > 0) full_.push_back(std::move(b));
    if (!more) {
      done_ = true;
      failed_ = !st_.ok();
      if (failed_) thread_error_ = db_.LastError();
      cv_.notify_all();
      return;
    }
    cv_.notify_all();
  }
}

bool PrefetchedRows::Step() {
  if (!valid()) return false;
  if (next_row_ >= current_.rows) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) {
      ok_ = !failed_;
      error_ = thread_error_;
      return false;
    }
    if (!current_.values.empty()) spare_.push_back(std::move(current_));
    current_ = std::move(full_.front());
    full_.pop_front();
    next_row_ = 0;
    lock.unlock();
    cv_.notify_all();
  }
  row_values_ = &current_.values[next_row_ * static_cast<size_t>(cols_)];
  row_nulls_ = current_.nulls[next_row_];
  ++next_row_;
  return true;
}

}  // namespace tracer::analysis::importers
