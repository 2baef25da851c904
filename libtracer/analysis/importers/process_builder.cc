#include "libtracer/analysis/importers/process_builder.h"

namespace tracer::analysis::importers {

ProcessBuilder::ProcessBuilder(ProcessTrace* process) : process_(process) {
  // Id 0 means "unknown" in every id space of the model.
  if (process_->threads.empty()) process_->threads.emplace_back();
  if (process_->streams.empty()) process_->streams.emplace_back();
  if (process_->launch_configs.empty()) process_->launch_configs.emplace_back();
}

uint32_t ProcessBuilder::Thread(uint64_t os_tid) {
  // Rows of one thread mostly follow each other; find before emplace (which
  // allocates a node even when the key is there).
  if (last_thread_ != 0 && last_os_tid_ == os_tid) return last_thread_;
  auto it = threads_.find(os_tid);
  if (it == threads_.end()) {
    it = threads_.emplace(os_tid, static_cast<uint32_t>(process_->threads.size())).first;
    ThreadInfo t;
    t.defined = true;
    t.os_tid = os_tid;
    process_->threads.push_back(t);
  }
  last_os_tid_ = os_tid;
  last_thread_ = it->second;
  return it->second;
}

void ProcessBuilder::NameThread(uint64_t os_tid, uint32_t name) {
  auto it = threads_.find(os_tid);
  if (it != threads_.end()) process_->threads[it->second].name = name;
}

uint32_t ProcessBuilder::Stream(uint32_t device, uint32_t context, uint64_t stream) {
  const auto key = std::make_tuple(device, context, stream);
  if (last_stream_ != 0 && last_stream_key_ == key) return last_stream_;
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    it = streams_.emplace(key, static_cast<uint32_t>(process_->streams.size())).first;
    StreamInfo s;
    s.defined = true;
    s.device = device;
    s.context = context;
    s.stream = stream;
    process_->streams.push_back(s);
  }
  last_stream_key_ = key;
  last_stream_ = it->second;
  return it->second;
}

uint32_t ProcessBuilder::LaunchConfig(const LaunchConfigRecord& c) {
  auto key =
      std::make_tuple(c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2],
                      c.static_shared_memory, c.dynamic_shared_memory, c.registers_per_thread);
  auto it = configs_.find(key);
  if (it == configs_.end()) {
    it = configs_.emplace(key, static_cast<uint32_t>(process_->launch_configs.size())).first;
    LaunchConfigRecord copy = c;
    copy.id = it->second;
    process_->launch_configs.push_back(copy);
  }
  return it->second;
}

}  // namespace tracer::analysis::importers
