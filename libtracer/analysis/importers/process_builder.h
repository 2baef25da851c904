// Assigns the small per-process ids of the model (threads, streams, launch
// configurations) to the keys an importer meets, defining each once.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

class ProcessBuilder {
 public:
  explicit ProcessBuilder(ProcessTrace* process);

  ProcessTrace& process() { return *process_; }
  // ThreadDef id of an OS thread id, defined on first use.
  uint32_t Thread(uint64_t os_tid);
  // Names the thread if it already exists (never creates one).
  void NameThread(uint64_t os_tid, uint32_t name);
  uint32_t Stream(uint32_t device, uint32_t context, uint64_t stream);
  // LaunchConfigDef id; identical configurations share one id.
  uint32_t LaunchConfig(const LaunchConfigRecord& config);

 private:
  ProcessTrace* process_;
  std::unordered_map<uint64_t, uint32_t> threads_;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> streams_;
  // The last hit of each (0: none yet; id 0 is never handed out).
  uint64_t last_os_tid_ = 0;
  uint32_t last_thread_ = 0;
  std::tuple<uint32_t, uint32_t, uint64_t> last_stream_key_;
  uint32_t last_stream_ = 0;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                      uint32_t, uint32_t>,
           uint32_t>
      configs_;
};

}  // namespace tracer::analysis::importers
