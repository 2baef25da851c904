// A small CUDA program shaped like a training step: NVTX ranges around a few
// kernels and copies on two streams. Compiled with nvcc in CI; run on a GPU
// under the tracer to see each kernel attributed to its ranges. Its <<<>>>
// launches go through __cudaLaunchKernel_v13000 (CUDA 13).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <vector>

namespace {

__global__ void ScaleKernel(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void AddKernel(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void ReduceKernel(const float* x, float* sum, int n) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "nvtx_kernels: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  const int n = 1 << 20;
  const int threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> host(n, 1.f);
  float *a = nullptr, *b = nullptr, *out = nullptr, *sum = nullptr;
  cudaStream_t s1, s2;
  if (!Check(cudaMalloc(&a, n * sizeof(float)), "cudaMalloc") ||
      !Check(cudaMalloc(&b, n * sizeof(float)), "cudaMalloc") ||
      !Check(cudaMalloc(&out, n * sizeof(float)), "cudaMalloc") ||
      !Check(cudaMalloc(&sum, sizeof(float)), "cudaMalloc") ||
      !Check(cudaStreamCreate(&s1), "cudaStreamCreate") ||
      !Check(cudaStreamCreate(&s2), "cudaStreamCreate")) {
    return 1;
  }
  for (int step = 0; step < 3; ++step) {
    nvtxRangePushA("step");
    nvtxRangePushA("load");
    cudaMemcpyAsync(a, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1);
    cudaMemcpyAsync(b, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, s2);
    nvtxRangePop();
    nvtxRangePushA("forward");
    ScaleKernel<<<blocks, threads, 0, s1>>>(a, 2.f, n);
    ScaleKernel<<<blocks, threads, 0, s2>>>(b, 3.f, n);
    cudaStreamSynchronize(s2);
    AddKernel<<<blocks, threads, 0, s1>>>(a, b, out, n);
    nvtxRangePop();
    nvtxRangePushA("loss");
    cudaMemsetAsync(sum, 0, sizeof(float), s1);
    ReduceKernel<<<blocks, threads, 0, s1>>>(out, sum, n);
    float result = 0;
    cudaMemcpyAsync(&result, sum, sizeof(float), cudaMemcpyDeviceToHost, s1);
    cudaStreamSynchronize(s1);
    nvtxRangePop();
    nvtxRangePop();
    std::printf("step %d: sum %.0f\n", step, result);
  }
  bool ok = Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  cudaFree(sum);
  return ok ? 0 : 1;
}
