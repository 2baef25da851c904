#include "tests/capture/trace_file_reader.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "tests/range_batch_rows.h"

namespace tracer::testing {

std::vector<const proto::Range*> ParsedTrace::RangesNamed(const std::string& name) const {
  std::vector<const proto::Range*> out;
  for (const auto& r : ranges) {
    if (Name(r.name()) == name) out.push_back(&r);
  }
  return out;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

ParsedTrace ReadTraceBytes(const std::string& bytes) {
  ParsedTrace t;
  static const char kMagic[8] = {'T', 'R', 'A', 'C', 'E', 'R', '\0', '\1'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    t.stop_reason = "bad magic";
    return t;
  }
  t.magic_ok = true;
  size_t pos = 8;
  auto need_string = [&](uint32_t id, const char* what) {
    if (id != 0 && !t.strings.count(id)) {
      t.problems.push_back(std::string(what) + " uses undefined string " + std::to_string(id));
    }
  };
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 8) {
      t.stop_reason = "torn frame header";
      break;
    }
    uint32_t len, crc;
    std::memcpy(&len, bytes.data() + pos, 4);
    std::memcpy(&crc, bytes.data() + pos + 4, 4);
    if (len == 0 || len > (64u << 20)) {
      t.stop_reason = "bad length";
      break;
    }
    if (bytes.size() - pos - 8 < len) {
      t.stop_reason = "torn payload";
      break;
    }
    const char* payload = bytes.data() + pos + 8;
    uint32_t actual = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(payload), static_cast<uInt>(len)));
    if (actual != crc) {
      t.stop_reason = "crc mismatch";
      break;
    }
    proto::Chunk chunk;
    if (!chunk.ParseFromArray(payload, static_cast<int>(len))) {
      t.stop_reason = "parse error";
      break;
    }
    pos += 8 + len;
    ++t.frames;
    if (chunk.has_header()) {
      if (t.frames != 1) t.problems.push_back("header not in the first frame");
      t.has_header = true;
      t.header = chunk.header();
    }
    for (const auto& s : chunk.strings()) {
      if (!t.strings.emplace(s.id(), s.value()).second) {
        t.problems.push_back("string " + std::to_string(s.id()) + " defined twice");
      }
    }
    for (const auto& th : chunk.threads()) {
      if (!t.threads.emplace(th.id(), th).second) {
        t.problems.push_back("thread " + std::to_string(th.id()) + " defined twice");
      }
      need_string(th.name(), "thread");
    }
    for (const auto& d : chunk.domains()) {
      if (!t.domains.emplace(d.id(), d).second) {
        t.problems.push_back("domain " + std::to_string(d.id()) + " defined twice");
      }
      need_string(d.name(), "domain");
    }
    for (const auto& c : chunk.categories()) {
      t.categories.push_back(c);
      need_string(c.name(), "category");
    }
    for (const auto& r : AllRanges(chunk)) {
      need_string(r.name(), "range");
      if (!t.threads.count(r.thread())) t.problems.push_back("range uses undefined thread");
      if (r.domain() != 0 && !t.domains.count(r.domain())) {
        t.problems.push_back("range uses undefined domain");
      }
      t.ranges.push_back(r);
    }
    for (const auto& m : AllMarks(chunk)) {
      need_string(m.name(), "mark");
      t.marks.push_back(m);
    }
    for (const auto& c : chunk.counter_deltas()) t.counters[c.name()] += c.value();
    if (chunk.has_footer()) {
      t.has_footer = true;
      t.footer = chunk.footer();
    }
    t.chunks.push_back(std::move(chunk));
  }
  return t;
}

ParsedTrace ReadTraceFile(const std::string& path) { return ReadTraceBytes(ReadFileBytes(path)); }

}  // namespace tracer::testing
