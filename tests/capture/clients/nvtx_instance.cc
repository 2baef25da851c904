// A shared library that bundles its own NVTX instance (nvtx3 keeps its state
// in hidden globals, one set per shared object), as each of PyTorch, cuDNN or
// NCCL does. nvtx_client's multi_init mode loads copies of it so several
// instances initialize (InitializeInjectionNvtx2) at the same time.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) void NvtxInstanceRange(const char* name) {
  nvtxRangePushA(name);
  nvtxRangePop();
}
