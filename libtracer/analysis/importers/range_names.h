// Range-name normalization: the step between reading and every table that
// turns per-call range names into the name of what was called. PyTorch's
// emit_nvtx (and FSDP / Megatron runs under it) names each op range after
// the call: "aten::to, seq = 45330, op_id = 990728" (getNvtxStr in
// torch/csrc/profiler/util.cpp: ", seq = N", ", op_id = N", ", sizes = [[..]]",
// ", input_op_ids = [(..)]"; older releases wrote ", seq=N" and, on backward
// Functions, ", stashed seq=N"). Aggregated as written, nearly every name is
// unique and every table has one row per call.
//
// NormalizeRangeNames rewrites each range instance's `name` to the normalized
// name and keeps the recorded one in RangeRecord::raw_name, so every table,
// report and export reads normalized names without knowing about this step,
// and the per-call values stay reachable per instance. Rules:
//   1. user rules (--name-rules FILE), "<regex> -> <name>", first match wins:
//      the name becomes <name> with $1.. / $& replaced by the match's groups;
//      "<regex> -> [op]" marks matching (normalized) names as operator ranges;
//   2. built-in: the emit_nvtx per-call suffix above is removed.
// Operator ranges (Trace::op_range_names) are never chosen as a training
// step: names that carried a per-call suffix, built-in prefixes (aten::,
// c10d::, nccl, cudnn, cublas, autograd::, prim::, ...), autograd backward
// Functions (MulBackward0) and the user's [op] rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "libtracer/analysis/read/regex_rules.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/core/status.h"

namespace tracer::analysis {

// Offset where an emit_nvtx-style per-call suffix starts in name (the ", "
// before "seq", "stashed seq", "op_id", "sizes" or "input_op_ids", every
// following field one of those up to the end), or nullopt when there is none.
// Never 0: a name is not all suffix.
std::optional<size_t> PerCallSuffixStart(std::string_view name);

// True for names of framework operator ranges by the built-in rules alone: a
// per-call suffix, an operator prefix, or an autograd backward Function.
bool IsBuiltinOpRangeName(std::string_view name);

class RangeNameRules {
 public:
  RangeNameRules() = default;  // built-in rules only
  // Rules of a user file ("<regex> -> <name>" or "<regex> -> [op]"), tried
  // before the built-in suffix removal. An error "source:line: ..." on a
  // bad line or regex leaves the rules as they were.
  Status AddUserRules(std::string_view text, std::string_view source);
  // The same from a rules file (the CLI, the Python API): an unreadable
  // file is an error "cannot read <path> ...".
  Status AddUserRulesFile(const std::string& path);
  // --raw-names: names stay as recorded (operator ranges are still known).
  void set_keep_raw(bool keep) { keep_raw_ = keep; }
  bool keep_raw() const { return keep_raw_; }
  bool has_user_rules() const { return !renames_.empty() || !op_rules_.empty(); }

  struct Result {
    std::string name;  // normalized name (== raw when unchanged)
    bool changed = false;
    bool op = false;  // an operator range (see above)
  };
  Result Apply(std::string_view raw) const;
  // The same without a copy of the name: name views raw, or *renamed
  // where a user rule renamed it (valid while both are).
  struct View {
    std::string_view name;
    bool changed = false;
    bool op = false;
  };
  View Apply(std::string_view raw, std::string* renamed) const;

 private:
  std::vector<RegexRule> renames_;
  std::vector<RegexRule> op_rules_;
  bool keep_raw_ = false;
};

// Applies rules to range records string id by string id, each distinct id
// once (ids are dense, so the cache is a vector). New names are interned in
// strings; operator names go to op_names when it is given. Ids appended
// unindexed (StringTable::Append) map to the indexed id of their normalized
// text, so equal names end with one id.
class RangeNameMapper {
 public:
  RangeNameMapper(const RangeNameRules& rules, StringTable* strings,
                  std::unordered_set<uint32_t>* op_names = nullptr);
  // Normalized id of string id raw.
  uint32_t Map(uint32_t raw);
  // Every range whose name changes gets the new name, its recorded one in
  // raw_name (a range normalized already keeps its raw_name). Returns whether
  // any name changed.
  bool Apply(std::vector<RangeRecord>* ranges);

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  const RangeNameRules& rules_;
  StringTable* strings_;
  std::unordered_set<uint32_t>* op_names_;
  std::vector<uint32_t> mapped_;
  std::vector<bool> renamed_;  // by raw id, for the ids in mapped_: the rules changed it
};

// The whole trace: every process's ranges, and trace->op_range_names.
void NormalizeRangeNames(Trace* trace, const RangeNameRules& rules);

// Text of `tracer report --help` about range names.
std::string_view RangeNamesHelp();

}  // namespace tracer::analysis
