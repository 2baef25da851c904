// lora_step: mimics one training step of a multi-LoRA transformer (mLoRA,
// as a profiling study of it names its ranges) as NVTX ranges, with CPU
// busy-work standing in for the GPU ops.
// No GPU needed; run it under `tracer run` to get the range tables.
//
// NAMING SCHEME (the groups and report code rely on it):
//   * every range inside a transformer layer ends with `_{layer_id}` (decimal);
//   * top-level ranges have no suffix: f_embedding, f_rmsnorm, f_output,
//     f_calc_loss, b_loss, b_output, b_rmsnorm, optimizer, plus the phase
//     ranges step, forward, backward and the loader's load_batch;
//   * per-adapter ranges are `<op>_{adapter}_{layer_id}`; adapter names never
//     end in `_<digits>` (alpaca, gsm8k, sql, ...).
//
// STRUCTURE of one step (main thread unless noted):
//   step
//     forward
//       f_embedding
//       per layer L: f_attention_norm_L;
//         f_q_L { f_linear_wq_L; per adapter A: f_dropout_A_L, f_lora_a_A_L,
//                 f_lora_b_A_L, f_scaling_A_L, f_lora_add_A_L }
//         f_k_L (wk), f_v_L (wv) likewise; f_rotray_emb_L; f_attention_L;
//         f_o_L (wo + adapters); f_o_add_L; f_ffn_norm_L;
//         f_mlp_L { f_w1_L, f_w3_L, f_silu_w2_L, f_w1_m_w3_L, f_w2_L, f_w2_add_L }
//       f_rmsnorm, f_output, f_calc_loss
//     backward  (held open by the main thread while an "autograd" worker
//                thread runs, as PyTorch's engine does)
//       worker: b_loss, b_output, b_rmsnorm; per layer L in reverse:
//         b_checkpoint_L, b_linear_w2_L, b_w1_m_w3_L, b_silu_w2_L,
//         b_linear_w3_L, b_linear_w1_L, b_ffn_norm_L;
//         for wo, then wv, wk, wq: per adapter A: b_lora_add_A_L, b_scaling_A_L,
//         b_lora_b_A_L, b_lora_a_A_L, b_dropout_A_L, b_lora_split_A_L; then
//         b_linear_w<x>_L (after b_linear_wo_L: b_attention_L, b_k_rope_L,
//         b_q_rope_L); finally b_attention_norm_L
//     optimizer
//   data-loader thread: load_batch, once per step, ahead of the step.
//
// Options: --layers N (default 2) --adapters M (default 2, up to 6)
//          --steps S (default 1)
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

const char* const kAdapterNames[] = {"alpaca", "gsm8k", "sql", "code", "chat", "math"};

// Busy-waits for about `us` microseconds so each range has a plausible CPU
// time without sleeping (sleep granularity would dominate).
void Work(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

struct Range {
  explicit Range(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~Range() { nvtxRangePop(); }
};

void Leaf(const std::string& name, int us) {
  Range r(name);
  Work(us);
}

std::string L(const std::string& op, int layer) { return op + "_" + std::to_string(layer); }
std::string AL(const std::string& op, const char* adapter, int layer) {
  return op + "_" + adapter + "_" + std::to_string(layer);
}

struct Model {
  int layers = 2;
  int adapters = 2;
};

void LoraForward(const Model& m, const std::string& proj, const std::string& weight, int layer) {
  Range p(L("f_" + proj, layer));
  Leaf(L("f_linear_" + weight, layer), 30);
  for (int a = 0; a < m.adapters; ++a) {
    const char* name = kAdapterNames[a];
    Leaf(AL("f_dropout", name, layer), 4);
    Leaf(AL("f_lora_a", name, layer), 8);
    Leaf(AL("f_lora_b", name, layer), 8);
    Leaf(AL("f_scaling", name, layer), 3);
    Leaf(AL("f_lora_add", name, layer), 3);
  }
}

void Forward(const Model& m) {
  Range fwd("forward");
  Leaf("f_embedding", 20);
  for (int l = 0; l < m.layers; ++l) {
    Leaf(L("f_attention_norm", l), 6);
    LoraForward(m, "q", "wq", l);
    LoraForward(m, "k", "wk", l);
    LoraForward(m, "v", "wv", l);
    Leaf(L("f_rotray_emb", l), 8);
    Leaf(L("f_attention", l), 60);
    LoraForward(m, "o", "wo", l);
    Leaf(L("f_o_add", l), 3);
    Leaf(L("f_ffn_norm", l), 6);
    Range mlp(L("f_mlp", l));
    Leaf(L("f_w1", l), 40);
    Leaf(L("f_w3", l), 40);
    Leaf(L("f_silu_w2", l), 6);
    Leaf(L("f_w1_m_w3", l), 5);
    Leaf(L("f_w2", l), 40);
    Leaf(L("f_w2_add", l), 3);
  }
  Leaf("f_rmsnorm", 6);
  Leaf("f_output", 50);
  Leaf("f_calc_loss", 10);
}

void LoraBackward(const Model& m, int layer) {
  for (int a = m.adapters; a-- > 0;) {
    const char* name = kAdapterNames[a];
    Leaf(AL("b_lora_add", name, layer), 3);
    Leaf(AL("b_scaling", name, layer), 3);
    Leaf(AL("b_lora_b", name, layer), 10);
    Leaf(AL("b_lora_a", name, layer), 10);
    Leaf(AL("b_dropout", name, layer), 4);
    Leaf(AL("b_lora_split", name, layer), 3);
  }
}

// Runs on the autograd worker thread.
void Backward(const Model& m) {
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "autograd_worker");
  Leaf("b_loss", 10);
  Leaf("b_output", 60);
  Leaf("b_rmsnorm", 8);
  for (int l = m.layers; l-- > 0;) {
    Leaf(L("b_checkpoint", l), 120);
    Leaf(L("b_linear_w2", l), 50);
    Leaf(L("b_w1_m_w3", l), 6);
    Leaf(L("b_silu_w2", l), 8);
    Leaf(L("b_linear_w3", l), 50);
    Leaf(L("b_linear_w1", l), 50);
    Leaf(L("b_ffn_norm", l), 8);
    LoraBackward(m, l);
    Leaf(L("b_linear_wo", l), 35);
    Leaf(L("b_attention", l), 80);
    Leaf(L("b_k_rope", l), 8);
    Leaf(L("b_q_rope", l), 8);
    LoraBackward(m, l);
    Leaf(L("b_linear_wv", l), 35);
    LoraBackward(m, l);
    Leaf(L("b_linear_wk", l), 35);
    LoraBackward(m, l);
    Leaf(L("b_linear_wq", l), 35);
    Leaf(L("b_attention_norm", l), 8);
  }
}

int ParseInt(const char* flag, const char* value, int lo, int hi) {
  char* end = nullptr;
  long v = value ? strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "lora_step: %s needs a number in %d..%d\n", flag, lo, hi);
    exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  Model m;
  int steps = 1;
  for (int i = 1; i < argc; ++i) {
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!strcmp(argv[i], "--layers")) {
      m.layers = ParseInt("--layers", v, 1, 1000);
      ++i;
    } else if (!strcmp(argv[i], "--adapters")) {
      m.adapters = ParseInt("--adapters", v, 0, 6);
      ++i;
    } else if (!strcmp(argv[i], "--steps")) {
      steps = ParseInt("--steps", v, 1, 100000);
      ++i;
    } else {
      fprintf(stderr,
              "usage: lora_step [--layers N] [--adapters M] [--steps S]\n"
              "One multi-LoRA training step per S as NVTX ranges (see the top of "
              "samples/nvtx/lora_step.cc).\n");
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "main");

  std::mutex mu;
  std::condition_variable cv;
  int batches_ready = 0;
  std::thread loader([&] {
    nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "data_loader");
    for (int s = 0; s < steps; ++s) {
      {
        Range r("load_batch");
        Work(100);
      }
      std::lock_guard<std::mutex> lock(mu);
      ++batches_ready;
      cv.notify_all();
    }
  });

  for (int s = 0; s < steps; ++s) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return batches_ready > s; });
    }
    Range step("step");
    Forward(m);
    {
      Range bwd("backward");
      std::thread worker([&m] { Backward(m); });
      worker.join();
    }
    Leaf("optimizer", 80);
  }
  loader.join();
  return 0;
}
