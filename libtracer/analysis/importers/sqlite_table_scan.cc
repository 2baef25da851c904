#include "libtracer/analysis/importers/sqlite_table_scan.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>

#include "libtracer/analysis/importers/sqlite_db.h"

namespace tracer::analysis::importers {
namespace {

constexpr uint8_t kInteriorTable = 0x05;
constexpr uint8_t kLeafTable = 0x0D;
// SQLite's own cursors stop at 20 levels; a deeper tree is corrupt.
constexpr size_t kMaxDepth = 40;

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The integer of a record value of serial type t (1..6, 8, 9): big-endian
// two's complement of 1, 2, 3, 4, 6 or 8 bytes, or the constants 0 and 1.
// Inlined: a call per value was a tenth of the scan.
[[gnu::always_inline]] inline int64_t RecordInt(const uint8_t* p, uint64_t t) {
  switch (t) {
    case 1:
      return static_cast<int8_t>(p[0]);
    case 2:
      return static_cast<int16_t>(Be16(p));
    case 3:
      return (static_cast<int64_t>(static_cast<int8_t>(p[0])) << 16) | (uint32_t{p[1]} << 8) | p[2];
    case 4:
      return static_cast<int32_t>(Be32(p));
    case 5:
      return (static_cast<int64_t>(static_cast<int16_t>(Be16(p))) << 32) | Be32(p + 2);
    case 6:
      return static_cast<int64_t>((uint64_t{Be32(p)} << 32) | Be32(p + 4));
    case 8:
      return 0;
    default:  // 9
      return 1;
  }
}

// A non-empty file beside the database (a hot rollback journal, a WAL with
// frames): its content may belong in the pages, which only SQLite knows how
// to apply.
bool HasSideFile(const std::string& path, const char* suffix) {
  struct stat st;
  return stat((path + suffix).c_str(), &st) == 0 && st.st_size > 0;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// A string literal of SQL.
std::string Literal(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace

SqliteFileMap::~SqliteFileMap() {
  if (mapped_) munmap(const_cast<uint8_t*>(data_), size_);
}

bool SqliteFileMap::Open(const std::string& path, std::string* why) {
  if (HasSideFile(path, "-journal") || HasSideFile(path, "-wal")) {
    *why = "a journal or WAL file beside the database";
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open the file";
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 512) {
    close(fd);
    *why = "not a regular file of at least one page";
    return false;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *why = "cannot map the file";
    return false;
  }
  if (!OpenBytes(static_cast<const uint8_t*>(p), size, why)) {
    munmap(p, size);
    data_ = nullptr;
    return false;
  }
  mapped_ = true;
  return true;
}

void SqliteFileMap::Release(uint32_t first, uint32_t last) const {
  if (!mapped_ || first < 1 || first > last || last > page_count_) return;
  static const size_t kOsPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Whole OS pages over the span (a neighbour's share faults back in when
  // read: the mapping is read-only, nothing is lost).
  const size_t begin = (size_t{first - 1} * page_size_) / kOsPage * kOsPage;
  const size_t end = std::min(size_, (size_t{last} * page_size_ + kOsPage - 1) / kOsPage * kOsPage);
  if (begin < end) madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

bool SqliteFileMap::OpenBytes(const uint8_t* data, size_t size, std::string* why) {
  static constexpr char kMagic[] = "SQLite format 3";  // and its NUL: 16 bytes
  if (size < 100 || std::memcmp(data, kMagic, 16) != 0) {
    *why = "no SQLite header";
    return false;
  }
  uint32_t page_size = Be16(data + 16);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    *why = "bad page size";
    return false;
  }
  // Versions 1: rollback journal (2 is WAL, whose pages may live in the
  // -wal file).
  if (data[18] != 1 || data[19] != 1) {
    *why = "not a rollback-journal database";
    return false;
  }
  if (data[20] != 0) {
    *why = "reserved bytes at the end of each page";
    return false;
  }
  if (Be32(data + 56) != 1) {
    *why = "text encoding other than UTF-8";
    return false;
  }
  // Pages the file holds whole; the header's own count when it is valid
  // (its change counter matches) and not more than that.
  uint64_t pages = size / page_size;
  const uint32_t header_pages = Be32(data + 28);
  if (header_pages != 0 && Be32(data + 24) == Be32(data + 92)) {
    if (header_pages > pages) {
      *why = "the file is shorter than its header says";
      return false;
    }
    pages = header_pages;
  }
  if (pages == 0 || pages > 0xFFFFFFFEu) {
    *why = "bad page count";
    return false;
  }
  data_ = data;
  size_ = size;
  page_size_ = page_size;
  page_count_ = static_cast<uint32_t>(pages);
  return true;
}

bool PlanTableScan(SqliteDb* db, std::string_view table, const std::vector<std::string>& columns,
                   const std::vector<ScanType>& types, ScanPlan* plan, std::string* why) {
  *plan = ScanPlan();
  if (columns.size() != types.size() || columns.size() > 64) {
    *why = "too many columns";
    return false;
  }
  std::string error;
  int64_t root = 0;
  std::string sql;
  {
    SqliteStatement st = db->Prepare(
        "SELECT type, rootpage, sql FROM sqlite_master WHERE tbl_name = " + Literal(table), &error);
    if (!st.valid()) {
      *why = error;
      return false;
    }
    int tables = 0;
    while (st.Step()) {
      const std::string_view type = st.Text(0);
      if (type == "table") {
        ++tables;
        root = st.Int(1);
        sql = Lower(st.Text(2));
      } else if (type == "index") {
        // SQLite may read the columns through the index, in its order.
        *why = "an index on the table";
        return false;
      }
    }
    if (!st.ok() || tables != 1) {
      *why = "no such table";
      return false;
    }
  }
  if (root < 2 || root > 0xFFFFFFFFll || sql.find("without rowid") != std::string::npos ||
      sql.starts_with("create virtual")) {
    *why = "not an ordinary rowid table";
    return false;
  }
  struct Info {
    std::string name, type;
    bool has_default = false;
    int pk = 0;
  };
  std::vector<Info> infos;
  int pks = 0;
  {
    SqliteStatement st = db->Prepare("PRAGMA table_xinfo(\"" + std::string(table) + "\")", &error);
    const int name = st.Column("name"), type = st.Column("type"), dflt = st.Column("dflt_value"),
              pk = st.Column("pk"), hidden = st.Column("hidden");
    if (!st.valid() || name < 0 || type < 0 || dflt < 0 || pk < 0 || hidden < 0) {
      *why = "no column list";
      return false;
    }
    while (st.Step()) {
      const std::string lower = Lower(st.Text(name));
      if (lower == "rowid" || lower == "oid" || lower == "_rowid_") {
        // A reader resuming after a rowid (PrefetchedRows) would name it.
        *why = "a column named like the rowid";
        return false;
      }
      if (st.Int(hidden) != 0) {
        // Generated columns are not stored where their position says.
        *why = "a generated or hidden column";
        return false;
      }
      Info info;
      info.name = std::string(st.Text(name));
      info.type = Lower(st.Text(type));
      info.has_default = !st.IsNull(dflt);
      info.pk = static_cast<int>(st.Int(pk));
      if (info.pk != 0) ++pks;
      infos.push_back(std::move(info));
    }
    if (!st.ok() || infos.empty()) {
      *why = "no column list";
      return false;
    }
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    ScanColumn c;
    c.type = types[i];
    for (size_t k = 0; k < infos.size(); ++k) {
      if (infos[k].name != columns[i]) continue;
      c.record_index = static_cast<int>(k);
      c.has_default = infos[k].has_default;
      if (infos[k].pk == 1 && pks == 1 && infos[k].type == "integer") {
        // The rowid itself, unless declared "INTEGER PRIMARY KEY DESC" (a
        // quirk that makes it an ordinary column): not told apart here.
        if (sql.find("desc") != std::string::npos) {
          *why = "a primary key declared DESC";
          return false;
        }
        c.rowid_alias = true;
      }
      break;
    }
    plan->columns.push_back(c);
  }
  plan->root_page = static_cast<uint32_t>(root);
  return true;
}

TableScan::TableScan(const SqliteFileMap* file, ScanPlan plan)
    : file_(file), plan_(std::move(plan)) {
  const size_t n = plan_.columns.size();
  values_.assign(n, 0);
  texts_.assign(n, {});
  all_columns_ = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  int highest = -1;
  for (const ScanColumn& c : plan_.columns) highest = std::max(highest, c.record_index);
  slot_of_.assign(static_cast<size_t>(highest + 1), -1);
  for (size_t i = 0; i < n; ++i) {
    const int r = plan_.columns[i].record_index;
    if (r >= 0) slot_of_[static_cast<size_t>(r)] = static_cast<int>(i);
  }
  for (size_t r = 0; r < slot_of_.size(); ++r) {
    if (slot_of_[r] >= 0)
      wants_.push_back({static_cast<uint32_t>(r), static_cast<uint32_t>(slot_of_[r])});
  }
  use_layouts_ = slot_of_.size() >= wants_.size() + kLayoutSkipped;
  layouts_.assign(kLayouts, {});
  layout_types_.assign(kLayouts * slot_of_.size() + 1, 0);
  layout_places_.assign(kLayouts * wants_.size() + 1, {});
  usable_ = file_->page_size();
  // The payload kept on a leaf page before spilling (fileformat2 2.3.4).
  max_local_ = usable_ - 35;
  min_local_ = ((usable_ - 12) * 32 / 255) - 23;
  seen_.assign(file_->page_count() / 64 + 1, 0);
  release_every_ = static_cast<uint32_t>(std::max<size_t>(1, kReleaseBytes / usable_));
}

void TableScan::Touch(uint32_t n) {
  Note(n);
  if (++touched_ >= release_every_) ReleaseTouched();
}

void TableScan::ReleaseTouched() {
  if (touched_first_ <= touched_last_) file_->Release(touched_first_, touched_last_);
  touched_first_ = UINT32_MAX;
  touched_last_ = 0;
  touched_ = 0;
}

bool TableScan::Fail(std::string why) {
  ReleaseTouched();
  failed_ = true;
  why_ = std::move(why);
  stack_.clear();
  return false;
}

bool TableScan::Enter(uint32_t n) {
  const uint8_t* page = file_->Page(n);
  if (page == nullptr || n == 1) return Fail("page " + std::to_string(n) + " out of range");
  uint64_t& word = seen_[n / 64];
  const uint64_t bit = uint64_t{1} << (n % 64);
  if ((word & bit) != 0) return Fail("page " + std::to_string(n) + " met twice");
  word |= bit;
  if (stack_.size() >= kMaxDepth) return Fail("b-tree too deep");
  Touch(n);
  const uint8_t type = page[0];
  if (type != kInteriorTable && type != kLeafTable) {
    return Fail("page " + std::to_string(n) + " is not a table b-tree page");
  }
  const uint32_t cells = Be16(page + 3);
  const uint32_t header = type == kLeafTable ? 8 : 12;
  if (header + 2 * cells > usable_) return Fail("page " + std::to_string(n) + ": bad cell count");
  stack_.push_back({page, 0, cells, n});
  return true;
}

bool TableScan::Next() {
  if (failed_) return false;
  if (!started_) {
    started_ = true;
    if (!Enter(plan_.root_page)) return false;
  }
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    const uint8_t* page = f.page;
    if (page[0] == kLeafTable) {
      if (f.next < f.cells) {
        const uint32_t off = Be16(page + 8 + 2 * f.next);
        ++f.next;
        return ReadCell(page, off);
      }
      stack_.pop_back();
      continue;
    }
    uint32_t child;
    if (f.next < f.cells) {
      const uint32_t off = Be16(page + 12 + 2 * f.next);
      if (off + 4 > usable_) return Fail("interior cell out of its page");
      child = Be32(page + off);
    } else if (f.next == f.cells) {
      child = Be32(page + 8);  // the right-most child
    } else {
      stack_.pop_back();
      continue;
    }
    ++f.next;  // before Enter, which may move the stack
    // This page is read again on the way back (it was given back with the
    // leaves, maybe): in the span given back next.
    Note(f.number);
    if (!Enter(child)) return false;
  }
  ReleaseTouched();  // the end: nothing of the table is read again
  return false;
}

bool TableScan::ReadCell(const uint8_t* page, uint32_t off) {
  if (off >= usable_) return Fail("leaf cell out of its page");
  const uint8_t* p = page + off;
  const uint8_t* end = page + usable_;
  uint64_t payload = 0, rowid = 0;
  size_t n = SqliteVarint(p, end, &payload);
  if (n == 0) return Fail("leaf cell out of its page");
  p += n;
  n = SqliteVarint(p, end, &rowid);
  if (n == 0) return Fail("leaf cell out of its page");
  p += n;
  const int64_t id = static_cast<int64_t>(rowid);
  if (rows_ > 0 && id <= rowid_) return Fail("rowids out of order");
  uint64_t local = payload;
  if (payload > max_local_) {
    const uint64_t k = min_local_ + (payload - min_local_) % (usable_ - 4);
    local = k <= max_local_ ? k : min_local_;
  }
  if (local > static_cast<uint64_t>(end - p)) return Fail("payload out of its page");
  if (local == payload) {
    if (!DecodeRecord(p, payload, id)) return false;
  } else {
    // Spilled: the rest is on a chain of overflow pages, each a next-page
    // number then usable - 4 bytes. The payload cannot exceed the file.
    if (payload > uint64_t{file_->page_count()} * usable_ || end - p < static_cast<long>(local) + 4)
      return Fail("bad overflow payload");
    overflow_.assign(reinterpret_cast<const char*>(p), local);
    uint32_t next = Be32(p + local);
    uint64_t left = payload - local;
    while (left > 0) {
      const uint8_t* o = file_->Page(next);
      if (o == nullptr || next == 1) return Fail("overflow page out of range");
      Touch(next);
      const uint64_t chunk = std::min<uint64_t>(left, usable_ - 4);
      overflow_.append(reinterpret_cast<const char*>(o + 4), chunk);
      left -= chunk;
      next = Be32(o);
    }
    if (!DecodeRecord(reinterpret_cast<const uint8_t*>(overflow_.data()), payload, id))
      return false;
  }
  rowid_ = id;
  ++rows_;
  return true;
}

double TableScan::Double(size_t col) const {
  const ScanColumn& c = plan_.columns[col];
  return c.type == ScanType::kDouble ? std::bit_cast<double>(values_[col])
                                     : static_cast<double>(values_[col]);
}

// The size of the values of the one-byte serial types (0..127); the
// reserved types 10 and 11 as kReservedSize, more than any record the fast
// path takes (DecodeRecord), so that a sum over them fails its bounds check.
constexpr uint64_t kReservedSize = uint64_t{1} << 32;
constexpr std::array<uint64_t, 128> kOneByteSize = [] {
  // SqliteSerialSize's, at compile time.
  constexpr uint64_t kSmall[12] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, kReservedSize, kReservedSize};
  std::array<uint64_t, 128> sizes{};
  for (uint64_t t = 0; t < 128; ++t) sizes[t] = t < 12 ? kSmall[t] : (t - 12) / 2;
  return sizes;
}();

// n bytes at a and b equal (n mostly a few dozen: no call).
inline bool SameBytes(const uint8_t* a, const uint8_t* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  for (; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Stores the value of serial type t (its value_size bytes at v, in bounds)
// into result column slot; false (the reason in *why) when the column's type
// refuses it.
[[gnu::always_inline]] inline bool TableScan::DecodeValue(size_t slot, uint64_t t, const uint8_t* v,
                                                          int64_t value_size, int64_t rowid,
                                                          uint64_t* nulls, const char** why) {
  const ScanColumn& c = plan_.columns[slot];
  int64_t& value = values_[slot];
  const uint64_t bit = uint64_t{1} << slot;
  if (t == 0) {
    value = 0;
    texts_[slot] = {};
    if (c.rowid_alias) {
      value =
          c.type == ScanType::kDouble ? std::bit_cast<int64_t>(static_cast<double>(rowid)) : rowid;
      *nulls &= ~bit;
      if (c.type == ScanType::kText) {
        *why = "a rowid read as text";
        return false;
      }
    }
  } else if (t < 12) {  // 10 and 11 were refused by the caller
    if (c.type == ScanType::kText) {
      *why = "a number in a text column";
      return false;
    }
    if (t == 7) {
      if (c.type != ScanType::kDouble) {
        *why = "a real outside a real column";
        return false;
      }
      value = static_cast<int64_t>((uint64_t{Be32(v)} << 32) | Be32(v + 4));
    } else if (c.type == ScanType::kDouble) {
      value = std::bit_cast<int64_t>(static_cast<double>(RecordInt(v, t)));
    } else {
      value = RecordInt(v, t);
    }
    *nulls &= ~bit;
  } else if ((t & 1) != 0 && c.type == ScanType::kText) {
    value = 0;
    texts_[slot] =
        std::string_view(reinterpret_cast<const char*>(v), static_cast<size_t>(value_size));
    *nulls &= ~bit;
  } else {
    *why = (t & 1) != 0 ? "text outside a text column" : "a blob";
    return false;
  }
  return true;
}

size_t TableScan::LayoutOf(const uint8_t* h, size_t n, uint64_t header_size) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t x = header_size * kMul;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, h + i, 8);
    x = (x ^ w) * kMul;
  }
  uint64_t tail = 0;  // byte by byte: a memcpy of a variable size is a call
  for (; i < n; ++i) tail = (tail << 8) | h[i];
  x = (x ^ tail) * kMul;
  return static_cast<size_t>(x >> 58);  // kLayouts = 64
}

bool TableScan::DecodeRecord(const uint8_t* p, size_t size, int64_t rowid) {
  uint64_t header_size = 0;
  size_t n;
  if (size > 0 && p[0] < 0x80) {
    header_size = p[0];
    n = 1;
  } else {
    n = SqliteVarint(p, p + size, &header_size);
  }
  if (n == 0 || header_size < n || header_size > size) return Fail("bad record header");
  const uint8_t* h = p + n;
  const uint8_t* header_end = p + header_size;
  const size_t wanted = slot_of_.size();
  uint64_t nulls = all_columns_;
  const char* why = nullptr;
  // The common record: every column read is in its header, whose serial
  // types up to the last one read are one byte each; the values between
  // the columns read are skipped by their sizes alone, and one bounds
  // check per column read covers them (a sum past the record's end,
  // reserved types included, fails it). Records of 2 GiB or more (their
  // sums could pass over a reserved type) take the general path.
  if (static_cast<size_t>(header_end - h) >= wanted && size < (uint64_t{1} << 31)) {
    // A header met before: its layout, checked to lie in this record
    // (when walking the header costs more than finding it: many columns
    // skipped).
    const size_t k = use_layouts_ ? LayoutOf(h, wanted, header_size) : 0;
    Layout& layout = layouts_[k];
    uint8_t* types = &layout_types_[k * wanted];
    Place* places = &layout_places_[k * wants_.size()];
    if (use_layouts_ && layout.header_size == header_size && layout.end <= size &&
        SameBytes(h, types, wanted)) {
      for (size_t w = 0; w < wants_.size(); ++w) {
        const Place& at = places[w];
        if (!DecodeValue(wants_[w].slot, at.type, p + at.offset, at.size, rowid, &nulls, &why))
          return Fail(why);
      }
      nulls_ = nulls;
      return true;
    }
    layout.header_size = 0;
    uint64_t body = header_size;
    uint8_t high = 0;  // a type of more than one byte: the general path
    size_t i = 0;
    for (size_t w = 0; w < wants_.size(); ++w) {
      for (; i < wants_[w].index; ++i) {
        high |= h[i];
        body += kOneByteSize[h[i] & 0x7F];
      }
      const uint8_t t = h[i++];
      high |= t;
      if ((high & 0x80) != 0) goto general;
      const uint64_t value_size = kOneByteSize[t];
      if (body > size || value_size > size - body) return Fail("bad record value");
      if (!DecodeValue(wants_[w].slot, t, p + body, static_cast<int64_t>(value_size), rowid, &nulls,
                       &why)) {
        return Fail(why);
      }
      places[w] = {static_cast<uint32_t>(body), static_cast<uint32_t>(value_size), t};
      body += value_size;
    }
    if (use_layouts_) {
      std::memcpy(types, h, wanted);
      layout.header_size = header_size;
      layout.end = body;
    }
    nulls_ = nulls;
    return true;
  }
general:
  nulls = all_columns_;
  size_t index = 0;
  uint64_t body = header_size;  // offset of the current value
  for (; index < wanted && h < header_end; ++index) {
    uint64_t t = *h;
    if (t < 0x80) {
      ++h;  // most serial types fit in one byte
    } else {
      const size_t m = SqliteVarint(h, header_end, &t);
      if (m == 0) return Fail("bad record header");
      h += m;
    }
    const int64_t value_size = SqliteSerialSize(t);
    if (value_size < 0 || static_cast<uint64_t>(value_size) > size - body)
      return Fail("bad record value");
    const int slot = slot_of_[index];
    if (slot >= 0 &&
        !DecodeValue(static_cast<size_t>(slot), t, p + body, value_size, rowid, &nulls, &why)) {
      return Fail(why);
    }
    body += static_cast<uint64_t>(value_size);
  }
  // Columns past the record's end: NULL unless added with a DEFAULT.
  for (; index < wanted; ++index) {
    const int slot = slot_of_[index];
    if (slot < 0) continue;
    const ScanColumn& c = plan_.columns[static_cast<size_t>(slot)];
    if (c.has_default) return Fail("a short record of a column with a default");
    if (c.rowid_alias) return Fail("a short record without its primary key");
    values_[static_cast<size_t>(slot)] = 0;
    texts_[static_cast<size_t>(slot)] = {};
  }
  nulls_ = nulls;
  return true;
}

}  // namespace tracer::analysis::importers
