// Test helper: reads a tracer stream with the generated protobuf classes,
// following the framing documented in proto/trace.proto, independently of
// the analysis library's reader.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/trace.pb.h"

namespace tracer::testing {

struct ParsedTrace {
  bool magic_ok = false;
  std::string stop_reason;  // empty when the file ended cleanly on a frame boundary
  size_t frames = 0;
  bool has_header = false;
  bool has_footer = false;
  proto::Header header;
  proto::Footer footer;
  std::map<uint32_t, std::string> strings;
  std::map<uint32_t, proto::ThreadDef> threads;
  std::map<uint32_t, proto::DomainDef> domains;
  std::vector<proto::CategoryDef> categories;
  std::vector<proto::Range> ranges;
  std::vector<proto::Mark> marks;
  std::map<std::string, uint64_t> counters;  // summed counter_deltas
  std::vector<proto::Chunk> chunks;
  // Definition problems found while reading (duplicate ids, use before
  // definition); a correct stream has none.
  std::vector<std::string> problems;

  std::string Name(uint32_t id) const {
    auto it = strings.find(id);
    return it == strings.end() ? "" : it->second;
  }
  std::vector<const proto::Range*> RangesNamed(const std::string& name) const;
};

ParsedTrace ReadTraceBytes(const std::string& bytes);
ParsedTrace ReadTraceFile(const std::string& path);
std::string ReadFileBytes(const std::string& path);

}  // namespace tracer::testing
