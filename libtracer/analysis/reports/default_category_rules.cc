// Built-in kernel category rules: a copy of data/kernel_categories.rules
// (tests/tables checks they are identical; edit both together).
#include "libtracer/analysis/reports/categories.h"

namespace tracer::analysis::reports {

std::string_view DefaultCategoryRulesText() {
  static constexpr char kRules[] =
      R"RULES(# Kernel categories for `tracer report --table categories`.
#
# One rule per line: <ECMAScript regex> -> <category>. Rules are tried in
# order, case-insensitively, as a search anywhere in the kernel name (mangled
# or demangled; memory ops are named "[CUDA memcpy ...]" / "[CUDA memset]");
# the first match wins, no match is "other". Pass your own file with
# --category-rules FILE: its rules are tried before these, so a user rule
# overrides a built-in one; a new category name adds a column.
# This file is the built-in default: a test checks it matches the copy
# compiled into tracer.

# Attention first: fused attention kernels also contain "gemm" or "softmax".
fmha|flash_?(fwd|bwd|attn)|flash::|flashattn|attention|sdpa|_mha_|xformers -> attention
# Collectives.
nccl|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|alltoall -> communication
# Copies and fills that move memory rather than compute.
\[CUDA memcpy|\[CUDA memset|memcpy|memset|CatArrayBatchedCopy|direct_copy|copy_kernel|copy_device_to_device|transpose|nchwToNhwc|nhwcToNchw -> memory/copy
softmax -> softmax
# cuDNN batch norm and pooling, before the convolution rules (names start "cudnn").
cudnn::bn_|bn_fw_|bn_bw_|max_pool|avg_pool|adaptive_.*pool -> reduction/norm
# Convolutions (cuDNN and friends): a category beyond the design's eight,
# because convolutional models (a ResNet profile, for one) spend most time there.
scudnn|dgrad|wgrad|winograd|convolve|conv2d|conv3d|_conv_|fprop_|implicit_gemm_conv -> convolution
# Matrix multiplies: cuBLAS / cuBLASLt / CUTLASS / nvjet / xmma families.
gemm|cutlass|nvjet|xmma|cublas|matmul|splitKreduce|wgmma|gemv|dot_kernel -> GEMM
# Norms and reductions.
layer_?norm|rms_?norm|triton_red|triton_per|batch_?norm|group_?norm|instance_?norm|_norm_|norm_kernel|reduce_kernel|reduction|reduce -> reduction/norm
# Pointwise work.
elementwise|multi_tensor_apply|pointwise|scalePackedTensor|triton_poi|unrolled_|vectorized_|FillFunctor|fill_kernel|index_elementwise -> elementwise
)RULES";
  return std::string_view(kRules, sizeof(kRules) - 1);
}

}  // namespace tracer::analysis::reports
