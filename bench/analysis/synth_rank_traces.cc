// Writes the tracer streams of a synthetic data-parallel training job: R
// ranks, each a file tracer-rank<r>.trace holding about N kernels, in the
// record order of a real capture (launch records and GPU ops before the
// range that encloses them, ranges as they close). Each rank runs the same
// program: steps (range "train_step") of forward / backward / optimizer,
// forward and backward holding transformer layers (attention, mlp) whose
// kernels carry real kernel names (cuBLAS, flash-attention, PyTorch
// elementwise, NCCL), one H2D copy and one memset per step with their API
// calls, NCCL all-reduce in backward, and one PM sample (SM throughput) per
// step. The last rank is a straggler: its
// kernels run 20% longer. Frames are written as they fill, so memory stays
// flat whatever N.
//
// Used by tests/python/test_parquet.py (a small job) and bench/parquet_scale.sh
// (256 ranks x 1 M kernels).
//
//   synth_rank_traces --ranks R --kernels N --out DIR [--layers L]
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "libtracer/core/chunk_builder.h"

namespace {

using namespace tracer;

enum Name : uint32_t {
  kStep = 1,
  kForward,
  kBackward,
  kOptimizer,
  kAttention,
  kMlp,
  kLayerBase,
};
constexpr uint32_t kMaxLayers = 64;
// Kernel names: string ids from kKernelBase.
constexpr uint32_t kKernelBase = kLayerBase + kMaxLayers;
const char* const kKernels[] = {
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t>, false, true, false, false, true, true, false>(Flash_fwd_params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
    "{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
    "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)"
    "#1}, at::detail::Array<char*, 2>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*)",
    "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, "
    "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, "
    "false>(Flash_bwd_params)",
    "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nn",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
    "<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, "
    "double, bool, double*, double*>",
};
enum Kernel : uint32_t { kGemm, kFlashFwd, kGelu, kLayerNorm, kFlashBwd, kGemmBwd, kNccl, kAdam };
constexpr uint32_t kApiLaunch = kKernelBase + 16, kApiMemcpy = kApiLaunch + 1,
                   kApiMemset = kApiLaunch + 2, kPmMetric = kApiLaunch + 3;

class RankWriter {
 public:
  RankWriter(const std::string& path, int rank, int world, uint32_t layers, double slow)
      : out_(path, std::ios::binary),
        layers_(layers),
        slow_(slow),
        device_(static_cast<uint32_t>(rank % 8)) {
    std::string magic;
    AppendFileMagic(&magic);
    out_ << magic;
    HeaderInfo h;
    h.pid = 4000 + static_cast<uint32_t>(rank);
    h.rank = rank;
    h.world_size = world;
    h.local_rank = rank % 8;
    h.host = "node" + std::to_string(rank / 8);
    h.device = std::to_string(rank % 8);
    h.tracer_version = "synthetic";
    b_.SetHeader(h);
    const char* ranges[] = {"train_step", "forward", "backward", "optimizer", "attention", "mlp"};
    for (uint32_t i = 0; i < 6; ++i) b_.AddString(kStep + i, ranges[i]);
    for (uint32_t l = 0; l < layers_; ++l) {
      b_.AddString(kLayerBase + l, "layer_" + std::to_string(l));
    }
    for (uint32_t k = 0; k < std::size(kKernels); ++k) b_.AddString(kKernelBase + k, kKernels[k]);
    b_.AddString(kApiLaunch, "cudaLaunchKernel");
    b_.AddString(kApiMemcpy, "cudaMemcpyAsync");
    b_.AddString(kApiMemset, "cudaMemsetAsync");
    b_.AddString(kPmMetric, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
    b_.AddThread({1, h.pid, 0, 0});
    b_.AddStream({1, static_cast<uint32_t>(rank % 8), 1, 7});   // compute
    b_.AddStream({2, static_cast<uint32_t>(rank % 8), 1, 13});  // NCCL
  }

  // One step; returns the kernels it launched.
  size_t Step(uint64_t step_index) {
    size_t launched = 0;
    const uint64_t step = Open(kStep, 0);
    // The batch: one H2D copy and one memset, each with its API call.
    Copy(step);
    const uint64_t fwd = Open(kForward, step);
    for (uint32_t l = 0; l < layers_; ++l) launched += Layer(fwd, l, false);
    Close(fwd);
    const uint64_t bwd = Open(kBackward, step);
    for (uint32_t l = layers_; l-- > 0;) launched += Layer(bwd, l, true);
    launched += Kernel(bwd, kNccl, 2, 90000 + 3000 * (step_index % 5));
    Close(bwd);
    const uint64_t opt = Open(kOptimizer, step);
    launched += Kernel(opt, kAdam, 1, 40000);
    Close(opt);
    // The loss is read back at the end of a step: the CPU waits for the GPU.
    const uint64_t step_start = open_[0].start_ns;
    now_ = std::max({now_, gpu_free_[1], gpu_free_[2]}) + 3000;
    // One PM sample per step (SM throughput over the step, 40..89 %).
    PmSampleRecord pm;
    pm.start_ns = step_start;
    pm.end_ns = now_;
    pm.device = device_;
    pm.metric = kPmMetric;
    pm.value = 40.0 + static_cast<double>(step_index % 50);
    b_.AddPmSample(pm);
    Close(step);
    if (b_.pending_items() >= 64 * 1024) Flush();
    return launched;
  }

  void Finish() {
    Flush();
    out_.close();
  }

 private:
  uint64_t Open(uint32_t name, uint64_t parent) {
    RangeRecord r;
    r.id = ++range_id_;
    r.parent_id = parent;
    r.thread = 1;
    r.name = name;
    r.depth = depth_++;
    r.start_ns = (now_ += 700);
    open_[depth_ - 1] = r;
    return r.id;
  }

  void Close(uint64_t id) {
    RangeRecord& r = open_[--depth_];
    (void)id;
    // A range on the CPU ends once its launches are issued; the GPU lags.
    r.end_ns = (now_ += 500);
    b_.AddRange(r);
  }

  size_t Layer(uint64_t parent, uint32_t l, bool backward) {
    size_t n = 0;
    const uint64_t layer = Open(kLayerBase + l, parent);
    const uint64_t attn = Open(kAttention, layer);
    n += Kernel(attn, kLayerNorm, 1, 6000);
    n += Kernel(attn, backward ? kGemmBwd : kGemm, 1, 42000);
    n += Kernel(attn, backward ? kFlashBwd : kFlashFwd, 1, backward ? 150000 : 61000);
    n += Kernel(attn, backward ? kGemmBwd : kGemm, 1, 21000);
    Close(attn);
    const uint64_t mlp = Open(kMlp, layer);
    n += Kernel(mlp, kLayerNorm, 1, 6000);
    n += Kernel(mlp, backward ? kGemmBwd : kGemm, 1, 84000);
    n += Kernel(mlp, kGelu, 1, 18000);
    n += Kernel(mlp, backward ? kGemmBwd : kGemm, 1, 83000);
    n += Kernel(mlp, kGelu, 1, 9000);
    n += Kernel(mlp, backward ? kGemmBwd : kGemm, 1, 12000);
    Close(mlp);
    Close(layer);
    return n;
  }

  // A launch from the innermost open range; the kernel runs after the
  // previous one on its stream.
  size_t Kernel(uint64_t range, uint32_t kernel, uint32_t stream, uint64_t ns) {
    LaunchRecord lr;
    lr.correlation_id = ++corr_;
    lr.time_ns = (now_ += 2500);
    lr.thread = 1;
    lr.range_id = range;
    b_.AddLaunch(lr);
    // Durations vary a little from launch to launch (+-3%).
    const uint64_t jitter = (corr_ * 2654435761u) % 61;
    const auto dur = static_cast<uint64_t>(static_cast<double>(ns) * slow_ * (970 + jitter) / 1000);
    uint64_t& free_at = gpu_free_[stream];
    KernelRecord k;
    k.start_ns = std::max(free_at, lr.time_ns + 4000) + 1500;
    k.end_ns = k.start_ns + dur;
    free_at = k.end_ns;
    k.name = kKernelBase + kernel;
    k.stream = stream;
    k.correlation_id = corr_;
    b_.AddKernel(k);
    return 1;
  }

  void Copy(uint64_t range) {
    for (int which = 0; which < 2; ++which) {
      ApiRecord a;
      a.start_ns = (now_ += 1000);
      a.end_ns = (now_ += 6000);
      a.name = which == 0 ? kApiMemcpy : kApiMemset;
      a.cbid = which == 0 ? 41 : 51;
      a.thread = 1;
      a.correlation_id = ++corr_;
      b_.AddApi(a);
      LaunchRecord lr;
      lr.correlation_id = corr_;
      lr.time_ns = a.start_ns;
      lr.thread = 1;
      lr.range_id = range;
      b_.AddLaunch(lr);
      uint64_t& free_at = gpu_free_[1];
      const uint64_t start = std::max(free_at, a.start_ns + 3000);
      if (which == 0) {
        MemcpyRecord m;
        m.start_ns = start;
        m.end_ns = start + 250000;
        m.bytes = 64ull << 20;
        m.copy_kind = 1;  // HtoD
        m.stream = 1;
        m.correlation_id = corr_;
        b_.AddMemcpy(m);
        free_at = m.end_ns;
      } else {
        MemsetRecord m;
        m.start_ns = start;
        m.end_ns = start + 8000;
        m.bytes = 1 << 20;
        m.stream = 1;
        m.correlation_id = corr_;
        b_.AddMemset(m);
        free_at = m.end_ns;
      }
    }
  }

  void Flush() {
    std::string frame;
    b_.FinishFrame(&frame);
    out_ << frame;
  }

  std::ofstream out_;
  ChunkBuilder b_;
  uint32_t layers_;
  double slow_;
  uint32_t device_;
  uint64_t now_ = 1'000'000, corr_ = 0, range_id_ = 0;
  uint32_t depth_ = 0;
  RangeRecord open_[8];
  uint64_t gpu_free_[3] = {0, 0, 0};
};

}  // namespace

int main(int argc, char** argv) {
  int ranks = 4;
  size_t kernels = 10000;
  uint32_t layers = 12;
  std::string out = ".";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks")
      ranks = std::atoi(argv[i + 1]);
    else if (a == "--kernels")
      kernels = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--layers")
      layers = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    else if (a == "--out")
      out = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: synth_rank_traces --ranks R --kernels N --out DIR [--layers L]\n");
      return 2;
    }
  }
  if (ranks < 1 || layers < 1 || layers > kMaxLayers) {
    std::fprintf(stderr, "synth_rank_traces: --ranks >= 1, 1 <= --layers <= %u\n", kMaxLayers);
    return 2;
  }
  ::mkdir(out.c_str(), 0755);
  size_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string path = out + "/tracer-rank" + std::to_string(r) + ".trace";
    RankWriter w(path, r, ranks, layers, r == ranks - 1 && ranks > 1 ? 1.2 : 1.0);
    size_t k = 0;
    for (uint64_t s = 0; k < kernels; ++s) k += w.Step(s);
    w.Finish();
    total += k;
  }
  std::printf("%d ranks, %zu kernels in all, in %s\n", ranks, total, out.c_str());
  return 0;
}
