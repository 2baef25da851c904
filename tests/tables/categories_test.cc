#include "libtracer/analysis/reports/categories.h"

#include <gtest/gtest.h>

#include <map>

#include "libtracer/analysis/reports/regex_rules.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

TEST(KernelCategorizer, ClassifiesTheSeedsKernelNames) {
  // Kernel names copied from seeds/002, seeds/003 and the nsys export in
  // shared/data (demangled and mangled forms).
  const std::map<std::string, std::string> expected = {
      {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>(T1::Params)",
       "GEMM"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
       "(T1::Params)",
       "GEMM"},
      {"nvjet_tst_64x16_64x16_4x2_v_bz_TNT", "GEMM"},
      {"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "GEMM"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", "GEMM"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "GEMM"},
      {"ampere_sgemm_128x64_nn", "GEMM"},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
       "cutlass::Sm80, 1, 64, 64, 64, 1, 1>::Params)",
       "attention"},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<128, 64, 64, "
       "4, 0, 0, cutlass::bfloat16_t>>(pytorch_flash::Flash_fwd_params)",
       "attention"},
      {"void pytorch_flash::flash_fwd_splitkv_kernel<...>(pytorch_flash::Flash_fwd_params)",
       "attention"},
      {"flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "attention"},
      {"void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl<"
       "at::native::AddFunctor<float>>>(int, T3)",
       "elementwise"},
      {"void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, "
       "std::array<char *, (unsigned long)3>>(int, T2, T3)",
       "elementwise"},
      {"unrolled_elementwise_kernel", "elementwise"},
      {"void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda>",
       "memory/copy"},
      {"_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_"
       "copy_kernel_cudaERNS_18TensorIteratorBaseEEUliE_EEviT1_",
       "memory/copy"},
      {"void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, "
       "at::native::MeanOps<float, float>>>(T3)",
       "reduction/norm"},
      {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 3>",
       "memory/copy"},
      {"CatArrayBatchedCopy_vectorized", "memory/copy"},
      {"void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 7, "
       "false, false>(T2 *, const T1 *, int, int, int, const bool *, int, bool)",
       "softmax"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", "softmax"},
      {"vectorized_layer_norm_kernel", "reduction/norm"},
      {"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float>",
       "reduction/norm"},
      {"rms_norm_kernel", "reduction/norm"},
      {"ncclDevKernel_SendRecv", "communication"},
      {"ncclKernel_AllReduce_RING_LL_Sum_float", "communication"},
      {"[CUDA memcpy Host-to-Device]", "memory/copy"},
      {"[CUDA memset]", "memory/copy"},
      {"Memcpy DtoD (Device -> Device)", "memory/copy"},
      {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>", "elementwise"},
      {"my_custom_kernel", "other"},
      // cuDNN kernels of shared/data's ResNet trace.
      {"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float)",
       "reduction/norm"},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>",
       "reduction/norm"},
      {"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
       "convolution"},
      {"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "convolution"},
      {"void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int)", "convolution"},
      {"void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>", "convolution"},
      {"void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>",
       "reduction/norm"},
  };
  KernelCategorizer c;
  for (const auto& [name, category] : expected) {
    EXPECT_EQ(c.Classify(name), category) << name;
  }
}

TEST(KernelCategorizer, BuiltInRulesAreTheDataFile) {
  const std::string file = ReadTextFile(TRACER_SOURCE_DIR "/data/kernel_categories.rules").value();
  EXPECT_EQ(file, DefaultCategoryRulesText());
}

TEST(KernelCategorizer, UserRulesComeFirstAndAddCategories) {
  KernelCategorizer c;
  ASSERT_TRUE(
      c.AddUserRules("# mine\nmy_custom -> custom ops\nnvjet -> attention\n", "user.rules").ok());
  EXPECT_EQ(c.Classify("my_custom_kernel"), "custom ops");
  EXPECT_EQ(c.Classify("nvjet_tst_64x16"), "attention");
  EXPECT_EQ(c.Classify("ampere_sgemm_128x64_nn"), "GEMM");
  ASSERT_GE(c.categories().size(), 9u);
  EXPECT_EQ(c.categories().back(), "other");
  EXPECT_NE(std::find(c.categories().begin(), c.categories().end(), "custom ops"),
            c.categories().end());
}

TEST(KernelCategorizer, BadRuleNamesFileAndLine) {
  KernelCategorizer c;
  const size_t before = c.categories().size();
  Status s = c.AddUserRules("gemm -> GEMM\n\n(unclosed -> x\n", "bad.rules");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("bad.rules:3: invalid regex '(unclosed': ", 0), 0u) << s.message();
  s = c.AddUserRules("no arrow here\n", "bad.rules");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "bad.rules:1: expected '<regex> -> <name>', got 'no arrow here'");
  s = c.AddUserRules("  -> GEMM\n", "bad.rules");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "bad.rules:1: empty regex or name in '-> GEMM'");
  // A bad file adds nothing: the rules stay as they were.
  EXPECT_EQ(c.categories().size(), before);
  EXPECT_EQ(c.Classify("my_gemm_kernel"), "GEMM");
}

TEST(CategoryTables, RangeSharesAndTotals) {
  Trace trace;
  testing::TraceFixture f(&trace);
  const uint64_t fwd = f.Range("forward", 0, 1000);
  const uint64_t attn = f.Range("attn", 10, 500, fwd);
  f.Kernel("ampere_sgemm_128x64_nn", 100, 400, attn, 20);         // 300 GEMM
  f.Kernel("fmha_cutlassF_f32", 400, 500, attn, 30);              // 100 attention
  f.Kernel("vectorized_elementwise_kernel", 600, 700, fwd, 600);  // 100 elementwise
  f.Memcpy(1, 64, 800, 900, 0, 700);                              // 100 outside ranges
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  KernelCategorizer c;

  Table by_cat = KernelsByCategoryTable(model, c);
  ASSERT_EQ(by_cat.rows.size(), 4u);
  EXPECT_EQ(std::get<std::string>(by_cat.rows[0][0]), "GEMM");
  EXPECT_EQ(std::get<int64_t>(by_cat.rows[0][3]), 300);
  EXPECT_DOUBLE_EQ(std::get<double>(by_cat.rows[0][4]), 50.0);  // 300 of 600

  Table ranges = RangeCategoriesTable(model, c);
  ASSERT_EQ(ranges.rows.size(), 2u);
  // forward: 500 ns of ops (300 GEMM, 100 attention, 100 elementwise).
  EXPECT_EQ(std::get<std::string>(ranges.rows[0][0]), "forward");
  EXPECT_EQ(std::get<int64_t>(ranges.rows[0][2]), 500);
  std::map<std::string, double> pct;
  double sum = 0;
  for (size_t i = 3; i < ranges.columns.size(); ++i) {
    pct[ranges.columns[i].name] = std::get<double>(ranges.rows[0][i]);
    sum += std::get<double>(ranges.rows[0][i]);
  }
  EXPECT_DOUBLE_EQ(pct["gemm_pct"], 60.0);
  EXPECT_DOUBLE_EQ(pct["attention_pct"], 20.0);
  EXPECT_DOUBLE_EQ(pct["elementwise_pct"], 20.0);
  EXPECT_NEAR(sum, 100.0, 1e-9);
  EXPECT_EQ(std::get<std::string>(ranges.rows[1][0]), "attn");
  EXPECT_EQ(std::get<int64_t>(ranges.rows[1][2]), 400);
}

}  // namespace
}  // namespace tracer::analysis::reports
