// The NVTX callbacks (core and core2 modules) and their installation into an
// NVTX instance's function tables through its export table (the mechanism of
// nvtx3/nvtxDetail/nvtxInit.h). Every callback is one guard (entry_guard.h)
// and degrades to a no-op when tracing is off.
#pragma once

#include <cstdint>

namespace tracer {

using NvtxGetExportTable = const void* (*)(uint32_t export_table_id);

// Fills the core and core2 slots of the calling NVTX instance. Returns 1 on
// success, 0 when the tables are missing (NVTX then stays a no-op). May throw
// (its caller, InitializeInjectionNvtx2, is the guard).
int InstallNvtxCallbacks(NvtxGetExportTable get_export_table);

}  // namespace tracer
