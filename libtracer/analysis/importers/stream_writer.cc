#include "libtracer/analysis/importers/stream_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "libtracer/core/chunk_builder.h"

namespace tracer::analysis::importers {
namespace {

// Frames stay far below kMaxFramePayload; a few MiB keeps a torn tail cheap.
constexpr size_t kFrameBytes = 4u << 20;

class UsedStrings {
 public:
  explicit UsedStrings(size_t n) : used_(n, false) {}
  void Add(uint32_t id) {
    if (id != 0 && id < used_.size()) used_[id] = true;
  }
  const std::vector<bool>& used() const { return used_; }

 private:
  std::vector<bool> used_;
};

UsedStrings CollectStrings(const Trace& trace, const ProcessTrace& p) {
  UsedStrings s(trace.strings.size());
  for (const auto& t : p.threads) s.Add(t.name);
  for (const auto& [id, name] : p.domain_names) s.Add(name);
  for (const auto& [key, name] : p.category_names) s.Add(name);
  for (const auto& r : p.ranges) s.Add(r.name);
  for (const auto& m : p.marks) s.Add(m.name);
  for (const auto& k : p.kernels) s.Add(k.name);
  for (const auto& a : p.api_calls) s.Add(a.name);
  for (const auto& m : p.pm_samples) s.Add(m.metric);
  return s;
}

}  // namespace

std::string EncodeProcessStream(const Trace& trace, size_t index) {
  const ProcessTrace& p = trace.processes.at(index);
  std::string out;
  AppendFileMagic(&out);
  ChunkBuilder b;
  auto maybe_cut = [&]() {
    if (b.ApproximateBytes() >= kFrameBytes) b.FinishFrame(&out);
  };
  b.SetHeader(p.header);
  const UsedStrings used = CollectStrings(trace, p);
  for (uint32_t id = 1; id < used.used().size(); ++id) {
    if (!used.used()[id]) continue;
    b.AddString(id, trace.strings.Get(id));
    maybe_cut();
  }
  for (uint32_t id = 1; id < p.threads.size(); ++id) {
    const ThreadInfo& t = p.threads[id];
    if (t.defined) b.AddThread({id, t.os_tid, t.name, t.pthread_id});
  }
  for (uint32_t id = 1; id < p.streams.size(); ++id) {
    const StreamInfo& s = p.streams[id];
    if (s.defined) b.AddStream({id, s.device, s.context, s.stream});
  }
  for (uint32_t id = 1; id < p.launch_configs.size(); ++id) {
    LaunchConfigRecord lc = p.launch_configs[id];
    lc.id = id;
    b.AddLaunchConfig(lc);
  }
  for (const auto& [id, name] : p.domain_names) b.AddDomain({id, name});
  for (const auto& [key, name] : p.category_names) b.AddCategory({key.first, key.second, name});
  maybe_cut();

  // Records, each kind in the model's order.
  for (const auto& r : p.ranges) b.AddRange(r), maybe_cut();
  for (const auto& r : p.marks) b.AddMark(r), maybe_cut();
  for (const auto& r : p.kernels) b.AddKernel(r), maybe_cut();
  for (const auto& r : p.memcpys) b.AddMemcpy(r), maybe_cut();
  for (const auto& r : p.memsets) b.AddMemset(r), maybe_cut();
  for (const auto& r : p.api_calls) b.AddApi(r), maybe_cut();
  for (const auto& r : p.launches) b.AddLaunch(r), maybe_cut();
  for (const auto& r : p.syncs) b.AddSync(r), maybe_cut();
  for (const auto& r : p.overheads) b.AddOverhead(r), maybe_cut();
  for (const auto& r : p.graph_nodes) b.AddGraphNode(r), maybe_cut();
  for (const auto& r : p.graph_launches) b.AddGraphLaunch(r), maybe_cut();
  for (const auto& r : p.pm_samples) b.AddPmSample(r), maybe_cut();
  for (const auto& [name, value] : p.counters) b.AddCounterDelta(name, value);
  b.FinishFrame(&out);
  if (p.footer) {
    b.SetFooter(*p.footer);
    b.FinishFrame(&out);
  }
  return out;
}

bool WriteProcessStream(const Trace& trace, size_t index, const std::string& path,
                        std::string* error) {
  const std::string bytes = EncodeProcessStream(trace, index);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    *error = path + ": cannot create (" + std::strerror(errno) + ")";
    return false;
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    *error = path + ": write failed (" + std::strerror(errno) + ")";
    return false;
  }
  return true;
}

std::string ProcessOutputPath(const std::string& out, uint32_t pid, size_t count) {
  const std::string id = std::to_string(pid);
  if (const size_t at = out.find("%p"); at != std::string::npos) {
    std::string path = out;
    path.replace(at, 2, id);
    return path;
  }
  if (count <= 1) return out;
  constexpr std::string_view kSuffix = ".trace";
  if (out.size() > kSuffix.size() && out.ends_with(kSuffix)) {
    return out.substr(0, out.size() - kSuffix.size()) + "." + id + std::string(kSuffix);
  }
  return out + "." + id;
}

}  // namespace tracer::analysis::importers
