// nsys "Serialized GlobalId" (globalPid / globalTid columns): bits 63..56
// hardware id, 55..48 VM id, 47..24 process id, 23..0 thread id (Nsight
// Systems export documentation). Checked on public exports: globalPid
// 281477392629760 is pid 144 in h100_2gpu_mfu.sqlite's PROCESSES table.
#pragma once

#include <cstdint>

namespace tracer::analysis::importers {

inline uint32_t NsysPid(int64_t global_id) {
  return static_cast<uint32_t>((static_cast<uint64_t>(global_id) >> 24) & 0xFFFFFFu);
}
inline uint32_t NsysTid(int64_t global_id) {
  return static_cast<uint32_t>(static_cast<uint64_t>(global_id) & 0xFFFFFFu);
}

}  // namespace tracer::analysis::importers
