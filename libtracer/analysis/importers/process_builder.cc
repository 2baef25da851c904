#include "libtracer/analysis/importers/process_builder.h"

namespace tracer::analysis::importers {

ProcessBuilder::ProcessBuilder(ProcessTrace* process) : process_(process) {
  // Id 0 means "unknown" in every id space of the model.
  if (process_->threads.empty()) process_->threads.emplace_back();
  if (process_->streams.empty()) process_->streams.emplace_back();
  if (process_->launch_configs.empty()) process_->launch_configs.emplace_back();
}

uint32_t ProcessBuilder::Thread(uint64_t os_tid) {
  auto [it, inserted] = threads_.emplace(os_tid, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(process_->threads.size());
    ThreadInfo t;
    t.defined = true;
    t.os_tid = os_tid;
    process_->threads.push_back(t);
  }
  return it->second;
}

void ProcessBuilder::NameThread(uint64_t os_tid, uint32_t name) {
  auto it = threads_.find(os_tid);
  if (it != threads_.end()) process_->threads[it->second].name = name;
}

uint32_t ProcessBuilder::Stream(uint32_t device, uint32_t context, uint64_t stream) {
  auto [it, inserted] = streams_.emplace(std::make_tuple(device, context, stream), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(process_->streams.size());
    StreamInfo s;
    s.defined = true;
    s.device = device;
    s.context = context;
    s.stream = stream;
    process_->streams.push_back(s);
  }
  return it->second;
}

uint32_t ProcessBuilder::LaunchConfig(const LaunchConfigRecord& c) {
  auto key =
      std::make_tuple(c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2],
                      c.static_shared_memory, c.dynamic_shared_memory, c.registers_per_thread);
  auto [it, inserted] = configs_.emplace(key, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(process_->launch_configs.size());
    LaunchConfigRecord copy = c;
    copy.id = it->second;
    process_->launch_configs.push_back(copy);
  }
  return it->second;
}

}  // namespace tracer::analysis::importers
