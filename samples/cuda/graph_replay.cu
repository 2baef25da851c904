// A CUDA graph captured once (under an NVTX range) and launched N times
// (under another). The tracer snapshots each node's range at its creation
// and each launch's range at the launch; the report counts every replayed
// kernel toward the range its node was created in (the capture range), as
// attribution.h of the analysis library states.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace {

__global__ void StepKernel(float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + 1.f;
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "graph_replay: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 10;
  const int n = 1 << 18, threads = 256, blocks = (n + threads - 1) / threads;
  float* x = nullptr;
  cudaStream_t stream;
  if (!Check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc") ||
      !Check(cudaStreamCreate(&stream), "cudaStreamCreate")) {
    return 1;
  }
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  nvtxRangePushA("build_graph");
  if (!Check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture"))
    return 1;
  for (int k = 0; k < 4; ++k) StepKernel<<<blocks, threads, 0, stream>>>(x, n, 0.5f + k);
  if (!Check(cudaStreamEndCapture(stream, &graph), "end capture") ||
      !Check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate")) {
    return 1;
  }
  nvtxRangePop();

  nvtxRangePushA("replay");
  for (int i = 0; i < launches; ++i) {
    nvtxRangePushA("iteration");
    cudaGraphLaunch(exec, stream);
    nvtxRangePop();
  }
  bool ok = Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  nvtxRangePop();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  std::printf("graph_replay: %d launches of a 4-kernel graph\n", launches);
  return ok ? 0 : 1;
}
