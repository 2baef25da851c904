#include "libtracer/analysis/importers/prefetched_rows.h"

#include <algorithm>
#include <exception>
#include <system_error>

namespace tracer::analysis::importers {

PrefetchedRows::~PrefetchedRows() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PrefetchedRows::Open(const std::string& path, const std::string& sql, std::string* error,
                          size_t max_queued) {
  max_queued_ = max_queued;
  if (!db_.Open(path, error)) return false;
  reading_db_ = &db_;
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

int PrefetchedRows::Column(std::string_view name) const {
  if (!async_) return st_.Column(name);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

void PrefetchedRows::StartOpen(const std::string& path, const std::string& sql, size_t max_queued,
                               const std::vector<std::string_view>& nulls,
                               const std::vector<std::string_view>& texts,
                               const std::vector<std::string_view>& doubles) {
  if (thread_.joinable()) return;
  async_ = true;
  path_ = path;
  sql_ = sql;
  max_queued_ = max_queued;
  track_nulls_.assign(nulls.begin(), nulls.end());
  track_texts_.assign(texts.begin(), texts.end());
  track_doubles_.assign(doubles.begin(), doubles.end());
  // std::thread says it could not start only by throwing.
  try {
    thread_ = std::thread([this] {
      if (OpenOnThread()) Produce();
    });
  } catch (const std::system_error&) {
    // No thread to be had: the rows are all read here, now.
    max_queued_ = 0;
    if (OpenOnThread()) Produce();
  }
}

void PrefetchedRows::ReadNow(SqliteDb* db, const std::string& sql,
                             const std::vector<std::string_view>& nulls,
                             const std::vector<std::string_view>& texts,
                             const std::vector<std::string_view>& doubles) {
  if (thread_.joinable()) return;
  async_ = true;
  sql_ = sql;
  max_queued_ = 0;
  track_nulls_.assign(nulls.begin(), nulls.end());
  track_texts_.assign(texts.begin(), texts.end());
  track_doubles_.assign(doubles.begin(), doubles.end());
  reading_db_ = db;
  path_ = db->path();
  if (OpenOnThread()) Produce();
}

bool PrefetchedRows::StartScan(ScanRead read) {
  if (async_ || read.names.size() != read.plan.columns.size() || read.names.empty() ||
      read.names.size() > 64) {
    return false;
  }
  async_ = true;
  sql_ = std::move(read.sql);
  path_ = read.db != nullptr ? read.db->path() : std::move(read.path);
  max_queued_ = 0;
  reading_db_ = read.db;  // nullptr: ResumeWithSql opens db_
  track_nulls_.assign(read.nulls.begin(), read.nulls.end());
  track_texts_.assign(read.texts.begin(), read.texts.end());
  track_doubles_.assign(read.doubles.begin(), read.doubles.end());
  names_.assign(read.names.begin(), read.names.end());
  cols_ = static_cast<int>(read.names.size());
  TrackNamed();
  file_ = std::move(read.file);
  scan_ = std::make_unique<TableScan>(file_.get(), std::move(read.plan));
  opened_ = true;
  if (read.max_queued > 0) {
    max_queued_ = read.max_queued;
    reading_db_ = nullptr;  // the thread resumes on a connection of its own
    try {
      thread_ = std::thread([this] { Produce(); });
      return true;
    } catch (const std::system_error&) {
      // No thread to be had: read as the rows are asked for.
      reading_db_ = read.db;
      max_queued_ = 0;
    }
  }
  direct_ = true;
  return true;
}

void PrefetchedRows::TrackNamed() {
  for (const std::string& n : track_nulls_) TrackNulls(Column(n));
  for (const std::string& n : track_texts_) TrackText(Column(n));
  for (const std::string& n : track_doubles_) TrackDouble(Column(n));
}

bool PrefetchedRows::ResumeWithSql() {
  scan_why_ = scan_->why();
  // The scan reads in rowid order, as SQLite's plain scan of the table does:
  // the rows after the last one read are the rest.
  const std::string sql =
      scan_->rows() == 0 ? sql_ : sql_ + " WHERE rowid > " + std::to_string(scan_->rowid());
  std::string error;
  if (reading_db_ == nullptr) {
    if (!db_.Open(path_, &error)) {
      resume_error_ = error;
      return false;
    }
    reading_db_ = &db_;
  }
  st_ = reading_db_->Prepare(sql, &error);
  if (!st_.valid() || st_.ColumnCount() != cols_) {
    resume_error_ = st_.valid() ? path_ + ": columns differ from the scan's" : error;
    return false;
  }
  return true;
}

void PrefetchedRows::CopyScanned(Block* b) {
  const size_t cols = static_cast<size_t>(cols_);
  const TableScan& s = *scan_;
  int64_t* v = &b->values[b->rows * cols];
  if (text_cols_ == 0) {  // the activity tables: integers and doubles' bits
    const int64_t* values = s.values();
    for (size_t c = 0; c < cols; ++c) v[c] = values[c];
    b->nulls[b->rows++] = s.nulls() & tracked_nulls_;
    return;
  }
  // As FillBlock's SQL reading: a NULL reads as 0, noted where tracked.
  for (size_t c = 0; c < cols; ++c) {
    const uint64_t bit = uint64_t{1} << c;
    if ((text_cols_ & bit) != 0) {
      const std::string_view t = s.Text(c);
      const uint64_t size = std::min<uint64_t>(t.size(), 0xFFFFFFFFu);
      v[c] = !s.IsNull(c) ? static_cast<int64_t>((uint64_t{b->text.size()} << 32) | size) : 0;
      b->text.append(t.data(), size);
    } else {
      v[c] = s.values()[c];  // a double's bits; 0 for NULL
    }
  }
  b->nulls[b->rows++] = s.nulls() & tracked_nulls_;
}

bool PrefetchedRows::OpenOnThread() {
  std::string error;
  bool ok = false;
  // Runs on the reader's thread, which an exception must not end
  // (std::bad_alloc): it becomes the open error.
  try {
    if (reading_db_ != nullptr || db_.Open(path_, &error)) {
      if (reading_db_ == nullptr) reading_db_ = &db_;
      st_ = reading_db_->Prepare(sql_, &error);
      const int cols = st_.valid() ? st_.ColumnCount() : 0;
      if (cols > 64) {
        error = path_ + ": too many columns to prefetch";
      } else if (st_.valid()) {
        for (int i = 0; i < cols; ++i) names_.emplace_back(st_.ColumnName(i));
        cols_ = cols;
        ok = true;
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (ok) TrackNamed();  // Column answers from names_ from here on
  std::lock_guard<std::mutex> lock(mu_);
  opened_ = true;
  if (!ok) {
    cols_ = 0;
    open_error_ = error;
    done_ = true;
  }
  cv_.notify_all();
  return ok;
}

bool PrefetchedRows::WaitOpened(std::string* error) {
  if (!async_) return valid();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return opened_; });
  if (cols_ > 0) return true;
  *error = open_error_;
  return false;
}

void PrefetchedRows::Start() {
  if (valid() && !inline_ && !thread_.joinable()) thread_ = std::thread([this] { Produce(); });
}

void PrefetchedRows::StartInline() {
  if (valid() && !async_ && !thread_.joinable()) inline_ = true;
}

bool PrefetchedRows::NextInlineBlock() {
  if (done_) return false;
  // One block held: the one Step hands out rows of.
  done_ = !FillBlock(&current_);
  next_row_ = 0;
  if (done_ && !st_.ok()) {
    ok_ = false;
    error_ = reading_db_->LastError();
  }
  return current_.rows > 0;
}

// Steps up to kBlockRows rows into *b; false once the statement has no more
// rows (or failed).
bool PrefetchedRows::FillBlock(Block* b) {
  const size_t cols = static_cast<size_t>(cols_);
  b->values.resize(kBlockRows * cols);
  b->nulls.resize(kBlockRows);
  b->text.clear();
  b->rows = 0;
  while (b->rows < kBlockRows) {
    if (scan_ != nullptr) {  // a thread's reading of a scan
      if (scan_->Next()) {
        CopyScanned(b);
        continue;
      }
      scanned_rows_ = scan_->rows();
      if (!scan_->failed()) return false;  // the end of the table
      const bool resumed = ResumeWithSql();
      scan_.reset();
      if (!resumed) return false;
    }
    if (!st_.Step()) return false;
    int64_t* v = &b->values[b->rows * cols];
    uint64_t nulls = 0;
    for (size_t c = 0; c < cols; ++c) {
      const int col = static_cast<int>(c);
      const uint64_t bit = uint64_t{1} << c;
      // One lookup of the column per value (IntValue...): a NULL reads as 0
      // (Int's answer) and is noted only where tracked.
      bool present;
      if ((text_cols_ & bit) != 0) {
        std::string_view t;
        present = st_.TextValue(col, &t);
        const uint64_t size = std::min<uint64_t>(t.size(), 0xFFFFFFFFu);
        v[c] = present ? static_cast<int64_t>((uint64_t{b->text.size()} << 32) | size) : 0;
        b->text.append(t.data(), size);
      } else if ((double_cols_ & bit) != 0) {
        double d = 0;
        present = st_.DoubleValue(col, &d);
        v[c] = present ? std::bit_cast<int64_t>(d) : 0;
      } else {
        v[c] = 0;
        present = st_.IntValue(col, &v[c]);
      }
      if (!present && (tracked_nulls_ & bit) != 0) nulls |= bit;
    }
    b->nulls[b->rows++] = nulls;
  }
  return true;
}

void PrefetchedRows::Produce() {
  // The reader's thread must never be ended by an exception of this one
  // (std::bad_alloc on a huge table): it becomes a read error.
  try {
    while (true) {
      Block b;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!spare_.empty()) {
          b = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      const bool more = FillBlock(&b);
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || max_queued_ == 0 || full_.size() < max_queued_; });
      if (stop_) return;
      if (b.rows > 0) full_.push_back(std::move(b));
      if (!more) {
        done_ = true;
        failed_ = !st_.ok() || !resume_error_.empty();
        if (failed_)
          thread_error_ = !resume_error_.empty() ? resume_error_ : reading_db_->LastError();
        cv_.notify_all();
        return;
      }
      cv_.notify_all();
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = failed_ = true;
    thread_error_ = e.what();
    cv_.notify_all();
  }
}

bool PrefetchedRows::StepScan() {
  if (scan_->Next()) {
    row_values_ = scan_->values();
    row_nulls_ = scan_->nulls() & tracked_nulls_;
    return true;
  }
  direct_ = false;
  scanned_rows_ = scan_->rows();
  if (!scan_->failed()) {
    done_ = true;
    return false;
  }
  // The rest through SQL, read on this thread a block at a time.
  const bool resumed = ResumeWithSql();
  scan_.reset();
  if (!resumed) {
    done_ = true;
    ok_ = false;
    error_ = resume_error_;
    return false;
  }
  inline_ = true;
  return Step();
}

bool PrefetchedRows::Step() {
  if (direct_) return StepScan();
  if (!valid()) return false;
  if (next_row_ >= current_.rows && inline_) {
    if (!NextInlineBlock()) return false;
  } else if (next_row_ >= current_.rows) {
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
  // A block was written by the reading thread, so its rows are in that
  // core's cache: ask for a row a few ahead now, so it has arrived by the
  // time the caller reads it (prefetching past the end is harmless).
  constexpr size_t kAhead = 8;
  __builtin_prefetch(row_values_ + kAhead * static_cast<size_t>(cols_));
  __builtin_prefetch(&current_.nulls[next_row_] + kAhead);
  ++next_row_;
  return true;
}

}  // namespace tracer::analysis::importers
