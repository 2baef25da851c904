#include "tests/cupti/trace_reader.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/range_batch_rows.h"

namespace tracer::testing {

namespace {

uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Undoes the `*_delta` column encoding: running sum of the zigzag-decoded
// deltas (protobuf already decoded the zigzag for sint64).
template <typename Repeated>
std::vector<uint64_t> Undelta(const Repeated& deltas) {
  std::vector<uint64_t> out;
  int64_t acc = 0;
  for (int64_t d : deltas) {
    acc += d;
    out.push_back(static_cast<uint64_t>(acc));
  }
  return out;
}

template <typename Repeated>
uint64_t At(const Repeated& col, int i) {
  return col.size() == 0 ? 0 : static_cast<uint64_t>(col.Get(i));
}

}  // namespace

std::string TraceContents::RangeName(uint64_t range_id) const {
  const proto::Range* r = FindRange(range_id);
  if (r == nullptr) return "";
  auto it = strings.find(r->name());
  return it == strings.end() ? "" : it->second;
}

const proto::Range* TraceContents::FindRange(uint64_t range_id) const {
  for (const proto::Range& r : ranges) {
    if (r.id() == range_id) return &r;
  }
  return nullptr;
}

uint64_t TraceContents::LaunchRange(uint64_t correlation) const {
  for (const LaunchRow& l : launches) {
    if (l.correlation == correlation) return l.range_id;
  }
  return 0;
}

TraceContents ReadTrace(const std::string& path) {
  TraceContents t;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  t.bytes = data.size();
  if (data.size() < 8 || std::memcmp(data.data(), "TRACER\0\1", 8) != 0) {
    t.error = path + ": missing magic";
    return t;
  }
  size_t pos = 8;
  while (pos + 8 <= data.size()) {
    uint32_t len = Le32(data.data() + pos);
    if (pos + 8 + len > data.size()) {
      t.error = "truncated frame";
      return t;
    }
    proto::Chunk c;
    if (!c.ParseFromArray(data.data() + pos + 8, static_cast<int>(len))) {
      t.error = "unparsable chunk";
      return t;
    }
    pos += 8 + len;
    if (c.has_header()) t.header = c.header();
    if (c.has_footer()) {
      t.footer = c.footer();
      t.has_footer = true;
    }
    for (const auto& s : c.strings()) t.strings[s.id()] = s.value();
    for (const auto& s : c.streams()) t.streams[s.id()] = s;
    for (const auto& s : c.threads()) t.threads[s.id()] = s;
    for (const auto& s : c.launch_configs()) t.launch_configs[s.id()] = s;
    for (const auto& r : testing::AllRanges(c)) t.ranges.push_back(r);
    for (const auto& r : c.synchronizations()) t.syncs.push_back(r);
    for (const auto& r : c.overheads()) t.overheads.push_back(r);
    for (const auto& r : c.graph_nodes()) t.graph_nodes.push_back(r);
    for (const auto& r : c.graph_launches()) t.graph_launches.push_back(r);
    for (const auto& r : c.pm_samples()) t.pm_samples.push_back(r);
    for (const auto& r : c.counter_deltas()) t.counters[r.name()] += r.value();
    {
      const auto& k = c.kernels();
      auto starts = Undelta(k.start_delta());
      auto corrs = Undelta(k.correlation_delta());
      size_t first = t.kernels.size();
      for (int i = 0; i < static_cast<int>(starts.size()); ++i) {
        KernelRow row{starts[i],
                      starts[i] + At(k.duration(), i),
                      "",
                      static_cast<uint32_t>(At(k.stream(), i)),
                      corrs.empty() ? 0 : corrs[i],
                      static_cast<uint32_t>(At(k.launch_config(), i))};
        row.name = t.strings[static_cast<uint32_t>(At(k.name(), i))];
        t.kernels.push_back(row);
      }
      for (const auto& g : k.graph()) {
        t.kernels[first + g.row()].graph_id = g.graph_id();
        t.kernels[first + g.row()].graph_node_id = g.graph_node_id();
      }
    }
    {
      const auto& l = c.launches();
      auto corrs = Undelta(l.correlation_delta());
      auto times = Undelta(l.time_delta());
      for (int i = 0; i < static_cast<int>(corrs.size()); ++i) {
        t.launches.push_back({corrs[i], times.empty() ? 0 : times[i],
                              static_cast<uint32_t>(At(l.thread(), i)), At(l.range_id(), i),
                              static_cast<uint32_t>(At(l.cbid(), i)),
                              static_cast<uint32_t>(At(l.domain(), i))});
      }
    }
    {
      const auto& m = c.memcpys();
      auto starts = Undelta(m.start_delta());
      auto corrs = Undelta(m.correlation_delta());
      const size_t first = t.memcpys.size();
      for (int i = 0; i < static_cast<int>(starts.size()); ++i) {
        t.memcpys.push_back({starts[i], starts[i] + At(m.duration(), i), At(m.bytes(), i),
                             static_cast<uint32_t>(At(m.copy_kind(), i)),
                             static_cast<uint32_t>(At(m.stream(), i)), corrs.empty() ? 0 : corrs[i],
                             static_cast<uint32_t>(At(m.flags(), i))});
      }
      for (const auto& g : m.graph()) {
        t.memcpys[first + g.row()].graph_id = g.graph_id();
        t.memcpys[first + g.row()].graph_node_id = g.graph_node_id();
      }
    }
    {
      const auto& m = c.memsets();
      auto starts = Undelta(m.start_delta());
      auto corrs = Undelta(m.correlation_delta());
      const size_t first = t.memsets.size();
      for (int i = 0; i < static_cast<int>(starts.size()); ++i) {
        t.memsets.push_back({starts[i], starts[i] + At(m.duration(), i), At(m.bytes(), i), 0,
                             static_cast<uint32_t>(At(m.stream(), i)), corrs.empty() ? 0 : corrs[i],
                             static_cast<uint32_t>(At(m.flags(), i))});
      }
      for (const auto& g : m.graph()) {
        t.memsets[first + g.row()].graph_id = g.graph_id();
        t.memsets[first + g.row()].graph_node_id = g.graph_node_id();
      }
    }
    {
      const auto& a = c.api_calls();
      auto starts = Undelta(a.start_delta());
      auto corrs = Undelta(a.correlation_delta());
      for (int i = 0; i < static_cast<int>(starts.size()); ++i) {
        ApiRow row{starts[i],
                   starts[i] + At(a.duration(), i),
                   static_cast<uint32_t>(At(a.domain(), i)),
                   static_cast<uint32_t>(At(a.cbid(), i)),
                   static_cast<uint32_t>(At(a.thread(), i)),
                   corrs.empty() ? 0 : corrs[i],
                   ""};
        row.name = t.strings[static_cast<uint32_t>(At(a.name(), i))];
        t.apis.push_back(row);
      }
    }
  }
  t.ok = true;
  return t;
}

}  // namespace tracer::testing
