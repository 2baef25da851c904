// Built-in phase rules: a copy of data/phases.rules (tests/tables checks
// they are identical; edit both together).
#include "libtracer/analysis/reports/phases.h"

namespace tracer::analysis::reports {

std::string_view DefaultPhaseRulesText() {
  static constexpr char kRules[] =
      R"RULES(# Phases of a training step for `tracer report --table phases`.
#
# One rule per line: <ECMAScript regex> -> <phase>, searched
# case-insensitively in range names; the first matching rule names a range's
# phase. Within a step, the top-most ranges with a phase count: a range
# inside another phased range (aten::* ops inside `forward`, the forward
# recompute inside b_checkpoint) takes its ancestor's phase. Phase time is
# the union of those ranges' intervals; where phases overlap (other
# threads), the phase named first in this file gets the time; other = step
# minus every phase. So the shares add up to 100 %.
# Pass --phase-rules FILE to use your own rules instead of these.
# This file is the built-in default: a test checks it matches the copy
# compiled into tracer.

# tracer.torch's step()/forward()/backward()/optimizer() ranges.
^forward$ -> forward
^backward$ -> backward
^optimizer$ -> optimizer
# mLoRA-style names: f_* forward, b_* backward.
^f_ -> forward
^b_ -> backward
# PyTorch profiler / DDP names.
^DistributedDataParallel\.forward$ -> forward
^## forward ##$ -> forward
^## backward ##$ -> backward
^Optimizer\.(step|zero_grad) -> optimizer
^(optimizer_step|opt_step|optimizer\.step|zero_grad)$ -> optimizer
^autograd::engine::evaluate_function -> backward
^(forward_pass|model_forward|fwd)$ -> forward
^(backward_pass|loss_backward|bwd)$ -> backward
)RULES";
  return std::string_view(kRules, sizeof(kRules) - 1);
}

}  // namespace tracer::analysis::reports
