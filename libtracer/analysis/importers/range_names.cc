#include "libtracer/analysis/importers/range_names.h"

#include <array>
#include <cstring>
#include <regex>
#include <stdexcept>

namespace tracer::analysis {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// s without leading spaces.
std::string_view SkipSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// Length of the bracketed value at the start of s ("[[1, 2], []]",
// "[(12,0), (13,1)]"), or 0 when s does not start with one that closes.
size_t BracketedLength(std::string_view s) {
  if (s.empty() || s.front() != '[') return 0;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') {
      if (--depth < 0) return 0;
      if (depth == 0) return i + 1;
    }
  }
  return 0;
}

// Length of an integer ("-1", "990728") at the start of s, 0 when none.
size_t IntegerLength(std::string_view s) {
  size_t i = !s.empty() && s.front() == '-' ? 1 : 0;
  const size_t digits_from = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  return i > digits_from ? i : 0;
}

// Length of the per-call field key at the start of s ("stashed seq", "seq",
// "op_id", "sizes", "input_op_ids"), 0 when none; *bracketed: its value is
// a bracketed list. Keys are matched as prefixes ("stashed seq" before
// "seq"), by their first character first: most names differ there.
size_t PerCallKeyLength(std::string_view s, bool* bracketed) {
  if (s.empty()) return 0;
  *bracketed = false;
  switch (s.front()) {
    case 's':
      if (s.starts_with("stashed seq")) return 11;
      if (s.starts_with("seq")) return 3;
      if (s.starts_with("sizes")) {
        *bracketed = true;
        return 5;
      }
      return 0;
    case 'o':
      return s.starts_with("op_id") ? 5 : 0;
    case 'i':
      if (!s.starts_with("input_op_ids")) return 0;
      *bracketed = true;
      return 12;
    default:
      return 0;
  }
}

// True when s is a sequence of per-call fields, each ", <key> = <value>"
// (spaces around '=' optional), up to its end.
bool AllPerCallFields(std::string_view s) {
  if (s.empty()) return false;
  while (!s.empty()) {
    if (s.size() < 2 || s[0] != ',' || s[1] != ' ') return false;
    s.remove_prefix(2);
    bool bracketed = false;
    const size_t key = PerCallKeyLength(s, &bracketed);
    if (key == 0) return false;
    s = SkipSpaces(s.substr(key));
    if (s.empty() || s.front() != '=') return false;
    s = SkipSpaces(s.substr(1));
    const size_t n = bracketed ? BracketedLength(s) : IntegerLength(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// Built-in operator range prefixes: ATen and TorchScript ops, collectives
// (c10d, NCCL's own ranges such as ncclSend / ncclGroupStart, Kineto's
// "nccl:all_reduce"), vendor libraries, the autograd engine.
constexpr std::array<std::string_view, 11> kOpPrefixes = {"aten::",
                                                          "c10d::",
                                                          "c10d_",
                                                          "nccl",
                                                          "cudnn",
                                                          "cublas",
                                                          "prim::",
                                                          "autograd::",
                                                          "torch::autograd::",
                                                          "profiler::",
                                                          "record_param_comms"};

// "MulBackward0", "AddmmBackward", "torch::autograd::AccumulateGrad" is
// caught by its prefix.
bool IsBackwardFunction(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && IsDigit(name[i - 1])) --i;
  constexpr std::string_view kBackward = "Backward";
  return i > kBackward.size() && name.substr(i - kBackward.size(), kBackward.size()) == kBackward;
}

bool MatchesAny(const std::vector<RegexRule>& rules, std::string_view s) {
  return FirstMatch(rules, s).has_value();
}

}  // namespace

std::optional<size_t> PerCallSuffixStart(std::string_view name) {
  // Per-call fields end in a digit or a closing bracket: most other names
  // are settled by their last character.
  if (name.size() < 3) return std::nullopt;
  const char last = name.back();
  if (!IsDigit(last) && last != ']' && last != ')') return std::nullopt;
  // The first ", " (not at the start) from which everything is per-call
  // fields: the name itself may hold ", " (a user range) but never after the
  // suffix starts.
  // memchr steps to each comma (a name's other bytes are most of it).
  const char* const begin = name.data();
  const char* const end = begin + name.size() - 1;  // a ", " takes two bytes
  for (const char* q = begin + 1; q < end; ++q) {
    q = static_cast<const char*>(std::memchr(q, ',', static_cast<size_t>(end - q)));
    if (q == nullptr) break;
    const size_t p = static_cast<size_t>(q - begin);
    if (q[1] == ' ' && AllPerCallFields(name.substr(p))) return p;
  }
  return std::nullopt;
}

namespace {

// IsBuiltinOpRangeName but for the per-call suffix (known absent where it
// is called).
bool IsOpPrefixOrBackwardFunction(std::string_view name) {
  for (std::string_view prefix : kOpPrefixes) {
    // The first character before the whole prefix: most prefixes differ there.
    if (!name.empty() && name.front() == prefix.front() && name.starts_with(prefix)) return true;
  }
  return IsBackwardFunction(name);
}

}  // namespace

bool IsBuiltinOpRangeName(std::string_view name) {
  return IsOpPrefixOrBackwardFunction(name) || PerCallSuffixStart(name).has_value();
}

Status RangeNameRules::AddUserRules(std::string_view text, std::string_view source) {
  auto rules = ParseRegexRules(text, source);
  if (!rules.ok()) return rules.status();
  std::vector<RegexRule> renames, ops;
  for (RegexRule& r : *rules) (r.target == "[op]" ? ops : renames).push_back(std::move(r));
  // A later file's rules are tried first, as with --category-rules.
  renames.insert(renames.end(), std::make_move_iterator(renames_.begin()),
                 std::make_move_iterator(renames_.end()));
  ops.insert(ops.end(), std::make_move_iterator(op_rules_.begin()),
             std::make_move_iterator(op_rules_.end()));
  renames_ = std::move(renames);
  op_rules_ = std::move(ops);
  return Status();
}

Status RangeNameRules::AddUserRulesFile(const std::string& path) {
  const auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return AddUserRules(*text, path);
}

RangeNameRules::Result RangeNameRules::Apply(std::string_view raw) const {
  std::string renamed;
  const View v = Apply(raw, &renamed);
  Result out;
  out.name = std::string(v.name);
  out.changed = v.changed;
  out.op = v.op;
  return out;
}

RangeNameRules::View RangeNameRules::Apply(std::string_view raw, std::string* renamed) const {
  View out;
  if (keep_raw_) {
    out.name = raw;
    out.op = IsBuiltinOpRangeName(raw) || MatchesAny(op_rules_, raw);
    return out;
  }
  std::string_view name = raw;
  for (const RegexRule& rule : renames_) {
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(raw.begin(), raw.end(), m, rule.re)) {
      std::string r = m.format(rule.target);
      if (!r.empty()) {
        *renamed = std::move(r);
        name = *renamed;
      }
      break;
    }
  }
  bool per_call = false;
  if (auto p = PerCallSuffixStart(name)) {
    name = name.substr(0, *p);
    per_call = true;
  }
  // Without a suffix, IsBuiltinOpRangeName would look for it again.
  out.op = per_call || IsOpPrefixOrBackwardFunction(name) || MatchesAny(op_rules_, name);
  out.changed = name != raw;
  out.name = name;
  return out;
}

RangeNameMapper::RangeNameMapper(const RangeNameRules& rules, StringTable* strings,
                                 std::unordered_set<uint32_t>* op_names)
    : rules_(rules), strings_(strings), op_names_(op_names) {}

uint32_t RangeNameMapper::Map(uint32_t raw) {
  if (raw >= mapped_.size()) {
    const size_t n = std::max<size_t>(raw + 1, strings_->size());
    mapped_.resize(n, kUnknown);
    renamed_.resize(n, false);
  }
  uint32_t& slot = mapped_[raw];
  if (slot != kUnknown) return slot;
  // The view version: no copy of the name, interned straight from the
  // table's own characters (their chunks never move, trace_model.h) or from
  // a rename's result.
  std::string renamed;
  const RangeNameRules::View r = rules_.Apply(strings_->Get(raw), &renamed);
  // Interning may add a string: no reference into mapped_ across it. A name
  // kept as recorded is indexed now when its import appended it unindexed
  // (StringTable::Append): ranges of the same text get one id.
  const uint32_t id = r.changed ? strings_->Intern(r.name) : strings_->IndexAppended(raw);
  mapped_[raw] = id;
  renamed_[raw] = r.changed;
  if (op_names_ != nullptr && r.op) op_names_->insert(id);
  return id;
}

bool RangeNameMapper::Apply(std::vector<RangeRecord>* ranges) {
  bool any = false;
  for (RangeRecord& r : *ranges) {
    const uint32_t id = Map(r.name);
    if (id == r.name) continue;
    // An appended duplicate of a kept name takes the first one's id: not a
    // rename, so no raw_name.
    if (r.raw_name == 0 && renamed_[r.name]) r.raw_name = r.name;
    r.name = id;
    any = true;
  }
  return any;
}

void NormalizeRangeNames(Trace* trace, const RangeNameRules& rules) {
  RangeNameMapper mapper(rules, &trace->strings, &trace->op_range_names);
  for (ProcessTrace& p : trace->processes) mapper.Apply(&p.ranges);
}

std::string_view RangeNamesHelp() {
  return R"(
Range names:
  PyTorch's emit_nvtx (and FSDP or Megatron run under it) names each op range
  after the call: "aten::to, seq = 45330, op_id = 990728, sizes = [[8, 512]]".
  Those per-call suffixes (", seq = N", ", stashed seq = N", ", op_id = N",
  ", sizes = [...]", ", input_op_ids = [...]", with or without spaces around
  '=') are removed before any table is built, so rows aggregate per op
  ("aten::to"); every table, diff and export uses the normalized names. The
  recorded name stays with each instance (exports: SQLite table
  TRACER_NVTX_RAW_TEXT, rawText by nvtxRowId = NVTX_EVENTS.rowid; Chrome JSON
  args.raw_name). --raw-names keeps names as recorded.
  --name-rules FILE adds rules tried first, one per line:
      <regex> -> <name>     rename: <name> with $1.. ($& = the match) filled in
      <regex> -> [op]       an operator range (never picked as the step)
  (ECMAScript, case-insensitive search; the first matching rename wins; the
  built-in suffix removal still applies to its result; see
  data/range_names.rules). Operator ranges (aten::, c10d::, nccl*, cudnn*,
  cublas*, prim::, autograd::, *Backward<N>, anything that had a per-call
  suffix) are never chosen as the step by timeline and phases.
)";
}

}  // namespace tracer::analysis
