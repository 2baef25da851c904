// Range-name normalization (importers/range_names.h): PyTorch emit_nvtx's
// per-call range names aggregate per op in every table, diff and export; the
// recorded name stays with each instance; --raw-names and --name-rules; step
// detection never picks an operator range. The names below are the formats
// of torch/csrc/profiler/util.cpp getNvtxStr (", seq = N", ", op_id = N",
// ", sizes = [[...]]", ", input_op_ids = [(...)]"), of the legacy profiler
// (", seq=N", ", stashed seq=N") and names copied from the real 2 x H100
// export in ../shared/data.
#include "libtracer/analysis/importers/range_names.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/diff.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/analysis/run_tracer.h"
#include "tests/analysis/table_lookup.h"
#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis {
namespace {

std::string Normalized(std::string_view raw) { return RangeNameRules().Apply(raw).name; }

TEST(RangeNames, EmitNvtxSuffixesOfEveryFormatAreRemoved) {
  // From h100_2gpu_mfu.sqlite.
  EXPECT_EQ(Normalized("aten::to, op_id = 999599"), "aten::to");
  EXPECT_EQ(Normalized("aten::detach_, seq = 45328, op_id = 990724"), "aten::detach_");
  EXPECT_EQ(Normalized("detach_, op_id = 990725"), "detach_");
  EXPECT_EQ(Normalized("record_param_comms, op_id = 999761"), "record_param_comms");
  // getNvtxStr with record_shapes and input edges.
  EXPECT_EQ(Normalized("aten::addmm, seq = 12, op_id = 7, sizes = [[8, 512], [512, 1024], []], "
                       "input_op_ids = [(5,0), (6,1)]"),
            "aten::addmm");
  EXPECT_EQ(Normalized("aten::empty, op_id = 3, sizes = [[], []]"), "aten::empty");
  // The legacy profiler: no spaces around '=', stashed seq on backward Functions.
  EXPECT_EQ(Normalized("MulBackward0, stashed seq=123"), "MulBackward0");
  EXPECT_EQ(Normalized("aten::mul, seq=45"), "aten::mul");
  EXPECT_EQ(Normalized("AddmmBackward0, stashed seq = 7, op_id = 9"), "AddmmBackward0");
  // A name holding ", " of its own keeps it: only the suffix goes.
  EXPECT_EQ(Normalized("fwd, part 2, seq = 3"), "fwd, part 2");
  // Raw values stay reachable: the offset says where they start.
  EXPECT_EQ(PerCallSuffixStart("aten::to, op_id = 999599"), 8u);
  // A suffix ending in a bracket of either kind; a ", " inside a bracketed
  // value is no suffix start of its own.
  EXPECT_EQ(PerCallSuffixStart("aten::cat, input_op_ids = [(1,0), (2,1)]"), 9u);
  EXPECT_EQ(PerCallSuffixStart("aten::cat, sizes = [[1, 2], [3]]"), 9u);
  EXPECT_EQ(PerCallSuffixStart("x, sizes = [1)"), 1u);
  EXPECT_EQ(PerCallSuffixStart("a, b, c, seq = -4"), 7u);
}

TEST(RangeNames, SuffixStartIsTheFirstCommaFromWhichAllFieldsParse) {
  EXPECT_FALSE(PerCallSuffixStart(""));
  EXPECT_FALSE(PerCallSuffixStart(", seq = 1"));  // nothing before the suffix
  EXPECT_FALSE(PerCallSuffixStart("x, seq = 1 "));
  EXPECT_FALSE(PerCallSuffixStart("x, seq = 1,"));
  EXPECT_FALSE(PerCallSuffixStart("x, seq = 1x"));
  EXPECT_FALSE(PerCallSuffixStart("x, sizes = [1"));
  EXPECT_FALSE(PerCallSuffixStart("x, sizes = 1"));
  EXPECT_FALSE(PerCallSuffixStart("x, stashed = 1"));
  EXPECT_FALSE(PerCallSuffixStart("x, op_ids = 1"));
  EXPECT_FALSE(PerCallSuffixStart("layer 12"));
  EXPECT_EQ(PerCallSuffixStart("x,, seq = 1"), 2u);
  EXPECT_EQ(PerCallSuffixStart("x, seq = 1, seq = 2"), 1u);
  EXPECT_EQ(PerCallSuffixStart("x, stashed seq=0"), 1u);
  EXPECT_EQ(PerCallSuffixStart("x, seq 1, seq = 2"), 8u);
}

TEST(RangeNames, NamesThatOnlyLookLikeSuffixesAreKept) {
  for (const char* name :
       {"f_layers_0", "ncclSend", "layer, 3", "train, seq = abc", "a, sizes = [[1, 2]", ", seq = 1",
        "x, seq = 1, extra", "my range, seq = 1 more", "x, op_id =", "x,seq = 1", "x, sequence = 4",
        "x, sizes = [[1]] tail"}) {
    const auto r = RangeNameRules().Apply(name);
    EXPECT_EQ(r.name, name);
    EXPECT_FALSE(r.changed) << name;
  }
}

TEST(RangeNames, OperatorRangesAreKnown) {
  for (const char* op :
       {"aten::mm", "c10d::allreduce_", "ncclGroupStart", "nccl:all_reduce", "MulBackward0",
        "AddmmBackward", "autograd::engine::evaluate_function", "cudnn_convolution",
        "prim::TupleUnpack", "record_param_comms", "FlashAttnFunc, seq = 3, op_id = 4"}) {
    EXPECT_TRUE(IsBuiltinOpRangeName(op)) << op;
  }
  for (const char* user : {"step", "f_layers_0", "Optimizer.step#SGD.step", "forward",
                           "ProfilerStep#3", "Backward", "train_backward"}) {
    EXPECT_FALSE(IsBuiltinOpRangeName(user)) << user;
  }
  // A name that carried a per-call suffix is an operator range after it
  // is gone, whatever it is called.
  EXPECT_TRUE(RangeNameRules().Apply("FlashAttnFunc, seq = 3, op_id = 4").op);
  EXPECT_FALSE(RangeNameRules().Apply("FlashAttnFunc").op);
}

TEST(RangeNames, UserRulesRenameMarkOperatorsAndReportBadLines) {
  RangeNameRules rules;
  ASSERT_TRUE(rules
                  .AddUserRules("# Megatron-style microbatch numbers\n"
                                "^(.*) \\[microbatch \\d+\\]$ -> $1\n"
                                "^my_kernel_wrapper -> [op]\n",
                                "mine.rules")
                  .ok());
  EXPECT_EQ(rules.Apply("layer_3 [microbatch 12]").name, "layer_3");
  // The built-in removal still applies to a renamed name.
  EXPECT_EQ(rules.Apply("fwd [microbatch 2], seq = 4").name, "fwd [microbatch 2]");
  EXPECT_EQ(rules.Apply("fwd, seq = 4 [microbatch 2]").name, "fwd");
  EXPECT_TRUE(rules.Apply("my_kernel_wrapper").op);
  EXPECT_FALSE(rules.Apply("layer_3 [microbatch 12]").op);
  // A later file is tried first.
  ASSERT_TRUE(rules.AddUserRules("^layer_(\\d+) -> L$1\n", "later.rules").ok());
  EXPECT_EQ(rules.Apply("layer_3 [microbatch 12]").name, "L3");
  const Status bad = rules.AddUserRules("ok -> fine\n(unclosed -> x\n", "bad.rules");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message().rfind("bad.rules:2: invalid regex '(unclosed': ", 0), 0u)
      << bad.message();
  // A bad file adds none of its rules, not even the good lines before.
  EXPECT_EQ(rules.Apply("ok").name, "ok");
  EXPECT_EQ(rules.Apply("layer_3 [microbatch 12]").name, "L3");
  // The shipped example file parses.
  RangeNameRules shipped;
  const auto text = ReadTextFile(TRACER_SOURCE_DIR "/data/range_names.rules");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_TRUE(shipped.AddUserRules(*text, "range_names.rules").ok());
}

// The file entry the CLI and the Python API use: a missing file, a directory
// or a bad line comes back as a Status naming where, and nothing is thrown
// across the module boundary; a good file's rules apply.
TEST(RangeNames, RulesFileErrorsAreStatusesNotExceptions) {
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "range_names_bad.rules";
  const std::string good = dir + "range_names_good.rules";
  std::ofstream(bad) << "# comment\nfwd -> f\n(unclosed -> x\n";
  std::ofstream(good) << "^layer_(\\d+) -> L$1\n";
  RangeNameRules rules;
  Status s;
  EXPECT_NO_THROW(s = rules.AddUserRulesFile(bad));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(bad + ":3: invalid regex"), std::string::npos) << s.message();
  EXPECT_NO_THROW(s = rules.AddUserRulesFile(dir + "range_names_missing.rules"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot read"), std::string::npos) << s.message();
  EXPECT_NO_THROW(s = rules.AddUserRulesFile(dir));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is a directory"), std::string::npos) << s.message();
  ASSERT_TRUE(rules.AddUserRulesFile(good).ok());
  EXPECT_EQ(rules.Apply("layer_3").name, "L3");
  std::remove(bad.c_str());
  std::remove(good.c_str());
}

// RangeNameMapper interns the view version of Apply (no copy of the name,
// interned from the table's own characters): the same names, operator marks
// and ids as interning Apply's copied result, for built-in suffixes, user
// renames (whose result then loses its suffix too), --raw-names and names
// met twice.
TEST(RangeNames, MapperGivesTheNamesOfApply) {
  const std::vector<std::string> raw = {
      "aten::to, op_id = 999599",
      "aten::detach_, seq = 45328, op_id = 990724",
      "aten::to, op_id = 999600",
      "layer_3 [microbatch 12]",
      "fwd [microbatch 2], seq = 4",
      "train_step",
      "MulBackward0, seq = 7",
      "aten::mm, sizes = [[8, 512], [512, 512]], input_op_ids = [(12,0), (13,1)]",
      "layer_3 [microbatch 12]",
      ""};
  for (int mode = 0; mode < 3; ++mode) {
    RangeNameRules rules;
    if (mode == 1) {
      ASSERT_TRUE(rules.AddUserRules("^(\\w+) \\[microbatch \\d+\\] -> $1\n", "test.rules").ok());
    }
    if (mode == 2) rules.set_keep_raw(true);
    StringTable mapped_strings;
    std::unordered_set<uint32_t> mapped_ops;
    RangeNameMapper mapper(rules, &mapped_strings, &mapped_ops);
    for (const std::string& name : raw) {
      const uint32_t id = mapper.Map(mapped_strings.Intern(name));
      const RangeNameRules::Result r = rules.Apply(name);
      EXPECT_EQ(mapped_strings.Get(id), r.name) << mode << " " << name;
      EXPECT_EQ(mapped_ops.count(id) == 1, r.op) << mode << " " << name;
      EXPECT_EQ(r.changed, r.name != name);
      // Met again: the same id.
      EXPECT_EQ(mapper.Map(mapped_strings.Intern(name)), id);
    }
  }
}

TEST(RangeNames, KeepRawLeavesNamesButStillKnowsOperators) {
  RangeNameRules rules;
  rules.set_keep_raw(true);
  const auto r = rules.Apply("record_param_comms, op_id = 1");
  EXPECT_EQ(r.name, "record_param_comms, op_id = 1");
  EXPECT_FALSE(r.changed);
  EXPECT_TRUE(r.op);
}

// A process of one range per name, its texts interned, or appended
// unindexed as a report's import stores them (StringTable::Append).
enum class Store { kIntern, kAppend };
ProcessTrace RangesNamed(Trace* trace, Store store, const std::vector<std::string>& names) {
  ProcessTrace p;
  for (const auto& name : names) {
    RangeRecord r;
    r.name = store == Store::kIntern ? trace->strings.Intern(name) : trace->strings.Append(name);
    p.ranges.push_back(r);
  }
  return p;
}

TEST(RangeNames, NormalizeKeepsTheRecordedNamePerInstanceOnce) {
  Trace trace;
  trace.processes.push_back(
      RangesNamed(&trace, Store::kIntern,
                  {"aten::mm, seq = 1, op_id = 2", "aten::mm, seq = 5, op_id = 6", "step"}));
  NormalizeRangeNames(&trace, RangeNameRules());
  const auto& rs = trace.processes[0].ranges;
  EXPECT_EQ(trace.strings.Get(rs[0].name), "aten::mm");
  EXPECT_EQ(rs[0].name, rs[1].name);
  EXPECT_EQ(trace.strings.Get(rs[0].raw_name), "aten::mm, seq = 1, op_id = 2");
  EXPECT_EQ(trace.strings.Get(rs[1].raw_name), "aten::mm, seq = 5, op_id = 6");
  EXPECT_EQ(rs[2].raw_name, 0u);  // unchanged
  EXPECT_EQ(trace.op_range_names.count(rs[0].name), 1u);
  EXPECT_EQ(trace.op_range_names.count(rs[2].name), 0u);
  // Again: nothing changes, the recorded names stay.
  NormalizeRangeNames(&trace, RangeNameRules());
  EXPECT_EQ(trace.strings.Get(rs[1].raw_name), "aten::mm, seq = 5, op_id = 6");
}

// A report's import appends range texts unindexed (StringTable::Append), so
// equal texts arrive with different ids: normalizing gives every range of
// one name one id (renamed or kept as recorded), and only a renamed range a
// raw_name, as when the texts were interned.
TEST(RangeNames, NormalizeGivesAppendedDuplicatesOneId) {
  Trace trace;
  trace.processes.push_back(RangesNamed(&trace, Store::kAppend,
                                        {"aten::mm, seq = 1, op_id = 2", "step",
                                         "aten::mm, seq = 1, op_id = 2", "step", "aten::mm", ""}));
  const uint32_t first_raw = trace.processes[0].ranges[0].name;
  NormalizeRangeNames(&trace, RangeNameRules());
  const auto& rs = trace.processes[0].ranges;
  EXPECT_EQ(trace.strings.Get(rs[0].name), "aten::mm");
  EXPECT_EQ(rs[2].name, rs[0].name);
  EXPECT_EQ(rs[4].name, rs[0].name);
  EXPECT_EQ(trace.strings.Get(rs[1].name), "step");
  EXPECT_EQ(rs[3].name, rs[1].name);
  EXPECT_EQ(rs[5].name, 0u);  // the empty name is id 0 as interned
  EXPECT_EQ(rs[0].raw_name, first_raw);
  EXPECT_NE(rs[2].raw_name, 0u);
  EXPECT_EQ(trace.strings.Get(rs[2].raw_name), "aten::mm, seq = 1, op_id = 2");
  EXPECT_EQ(rs[1].raw_name, 0u);  // kept as recorded: no raw_name
  EXPECT_EQ(rs[3].raw_name, 0u);
  EXPECT_EQ(rs[4].raw_name, 0u);
  EXPECT_EQ(trace.strings.Find("step"), rs[1].name);
  EXPECT_EQ(trace.strings.Find("aten::mm"), rs[0].name);
  EXPECT_EQ(trace.op_range_names.count(rs[0].name), 1u);
  EXPECT_EQ(trace.op_range_names.count(rs[1].name), 0u);
}

// ---- the real 2 x H100 export ----------------------------------------------

class H100RangeNames : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(TRACER_SHARED_DATA_DIR) + "/nsys/h100_2gpu_mfu.sqlite";
    if (!std::filesystem::exists(path_)) GTEST_SKIP() << "shared data " << path_ << " is absent";
  }
  Trace Load(bool raw) {
    Trace t;
    std::string error;
    EXPECT_TRUE(LoadInput(path_, &t, &error)) << error;
    RangeNameRules rules;
    rules.set_keep_raw(raw);
    NormalizeRangeNames(&t, rules);
    return t;
  }
  static size_t DistinctRangeNames(const Trace& t) {
    std::set<uint32_t> names;
    for (const auto& p : t.processes) {
      for (const auto& r : p.ranges) names.insert(r.name);
    }
    return names.size();
  }
  // The ranges diff of rank 0 (process 0) against rank 1: rows in both.
  std::pair<size_t, size_t> DiffRanks(bool raw) {
    // Loaded twice, not copied: a copied StringTable's index would point
    // into the original's strings.
    Trace a = Load(raw), b = Load(raw);
    a.processes.erase(a.processes.begin() + 1);
    b.processes.erase(b.processes.begin());
    const AnalyzedTrace aa(a, {}), ab(b, {});
    const Table ta = RangesTable(aa, {}), tb = RangesTable(ab, {});
    auto d = reports::DiffTables(ta, tb, {{"domain", "range"}, {"instances", "cpu_total_ns"}});
    EXPECT_TRUE(d.ok());
    const int in = testing::ColumnIndex(*d, "status");
    size_t both = 0;
    for (const auto& row : d->rows) both += std::get<std::string>(row[in]) == "both";
    return {both, d->rows.size()};
  }
  std::string path_;
};

TEST_F(H100RangeNames, NamesDropFromEighteenThousandToAFewHundred) {
  const Trace raw = Load(true);
  ASSERT_EQ(raw.processes.size(), 2u);
  EXPECT_GT(DistinctRangeNames(raw), 18000u);
  const Trace t = Load(false);
  const size_t names = DistinctRangeNames(t);
  EXPECT_LT(names, 500u);
  EXPECT_GT(names, 20u);
  size_t ranges = 0, renamed = 0;
  for (const auto& p : t.processes) {
    for (const auto& r : p.ranges) {
      ++ranges;
      if (r.raw_name == 0) continue;
      ++renamed;
      // The recorded name is the normalized one plus its per-call suffix.
      const std::string_view rec = t.strings.Get(r.raw_name);
      ASSERT_EQ(PerCallSuffixStart(rec), t.strings.Get(r.name).size()) << rec;
    }
  }
  EXPECT_EQ(ranges, 19118u);
  EXPECT_GT(renamed, ranges * 9 / 10);
}

TEST_F(H100RangeNames, StepDetectionPicksNoOperatorRange) {
  for (bool raw : {false, true}) {
    const Trace t = Load(raw);
    const AnalyzedTrace analyzed(t, {});
    const reports::ReportModel model(analyzed);
    // Every top-level range of this trace is an op (aten::to, FlashAttnFunc
    // and AllToAll4D autograd Functions under emit_nvtx): no step, said so.
    const auto s = reports::FindSteps(model, "");
    if (s.ok()) {
      ADD_FAILURE() << "picked '" << s->name << "' as the step";
    } else {
      EXPECT_NE(s.status().message().find("every top-level range is an operator range"),
                std::string::npos)
          << s.status().message();
    }
  }
}

TEST_F(H100RangeNames, DiffOfTheTwoRanksMatchesTheirRows) {
  const auto [both, rows] = DiffRanks(false);
  EXPECT_EQ(both, rows);  // the two ranks ran the same ops
  EXPECT_GT(both, 50u);
  const auto [raw_both, raw_rows] = DiffRanks(true);
  EXPECT_LT(raw_both * 50, raw_rows);  // 167 of 18,499 as recorded
}

// ---- the CLI on a recorded stream ------------------------------------------

// A training loop under emit_nvtx, as the tracer records it (times in ns):
// two top-level aten::to (50 us each, more than the steps together), then two
// "step" ranges of 10 us, each with two aten::mm ops and a MulBackward0, each
// launching one kernel. op ids differ between runs (op_base).
std::string WriteEmitNvtxTrace(const std::string& stem, int op_base) {
  testing::TraceFileBuilder b;
  b.Thread(1, 100, "main");
  b.Stream(1, 0, 7);
  const auto op = [&](int i) { return std::to_string(op_base + i); };
  b.Range(1, 0, 1, "aten::to, op_id = " + op(1), 0, 50000);
  b.Range(2, 0, 1, "aten::to, op_id = " + op(2), 50000, 100000);
  uint64_t id = 3, corr = 1;
  for (int s = 0; s < 2; ++s) {
    const uint64_t t0 = 100000 + s * 20000, step = id++;
    b.Range(step, 0, 1, "step", t0, t0 + 10000);
    const std::string names[] = {
        "aten::mm, seq = " + std::to_string(10 + s) + ", op_id = " + op(10 + 3 * s),
        "aten::mm, seq = " + std::to_string(20 + s) + ", op_id = " + op(11 + 3 * s) +
            ", sizes = [[2, 3], [3, 4]]",
        "MulBackward0, stashed seq=" + std::to_string(10 + s)};
    for (int i = 0; i < 3; ++i) {
      const uint64_t r = id++, start = t0 + 1000 + i * 3000;
      b.Range(r, step, 1, names[i], start, start + 2000, 1);
      b.Launch(corr, 1, start + 100, r);
      b.Kernel(i == 2 ? "mul_bwd" : "gemm", 1, start + 500, start + 1500, corr);
      ++corr;
    }
  }
  b.Frame();
  return b.WriteTemp(stem);
}

class RangeNamesCli : public ::testing::Test {
 protected:
  void SetUp() override { path_ = WriteEmitNvtxTrace("emit_nvtx.trace", 1000); }
  void TearDown() override { std::remove(path_.c_str()); }
  static testing::CliRun Run(const std::string& args) {
    return testing::RunTracerCli(args, /*merge_stderr=*/false);
  }
  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  }
  std::string path_;
};

TEST_F(RangeNamesCli, RowsAggregatePerOpUnlessRawNames) {
  auto r = Run("report " + path_ + " --table ranges --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",aten::mm,4,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",MulBackward0,2,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",aten::to,2,"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("op_id"), std::string::npos) << r.out;
  // The bounded-memory path normalizes the same way, to the same numbers.
  auto s = Run("report " + path_ + " --table ranges,range-kernels,gpu --format csv --stream");
  auto w = Run("report " + path_ + " --table ranges,range-kernels,gpu --format csv --no-stream");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, w.out);
  EXPECT_EQ(s.err.find("reading the input whole"), std::string::npos) << s.err;

  auto raw = Run("report " + path_ + " --table ranges --format csv --raw-names");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(Count(raw.out, "\"aten::mm, seq = "), 4u) << raw.out;
  EXPECT_NE(raw.out.find("\"MulBackward0, stashed seq=10\",1,"), std::string::npos) << raw.out;
  auto raw_stream = Run("report " + path_ + " --table ranges --format csv --raw-names --stream");
  EXPECT_EQ(raw_stream.out, raw.out);
}

TEST_F(RangeNamesCli, PhasesPickTheStepNotTheLongerOperatorRange) {
  auto r = Run("report " + path_ + " --table phases");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Step phases of 'step'"), std::string::npos) << r.out;
  // Marking "step" as an operator too leaves no step: said, not guessed.
  const std::string rules = testing::TraceFileBuilder::TempPath("ops.rules");
  std::ofstream(rules) << "^step$ -> [op]\n";
  r = Run("report " + path_ + " --table phases --name-rules " + rules);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no step range: every top-level range is an operator range"),
            std::string::npos)
      << r.err;
  std::remove(rules.c_str());
}

TEST_F(RangeNamesCli, UserRulesFileRenamesAndBadFilesSayWhere) {
  const std::string rules = testing::TraceFileBuilder::TempPath("user.rules");
  std::ofstream(rules) << "# ops by their short name\n^aten::(\\w+) -> op:$1\n";
  auto r = Run("report " + path_ + " --table ranges --format csv --name-rules " + rules);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",op:mm,4,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",op:to,2,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",MulBackward0,2,"), std::string::npos) << r.out;
  std::ofstream(rules) << "fine -> ok\nno arrow here\n";
  r = Run("report " + path_ + " --name-rules " + rules);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(rules + ":2: expected '<regex> -> <name>'"), std::string::npos) << r.err;
  std::remove(rules.c_str());
}

TEST_F(RangeNamesCli, DiffOfTwoRunsMatchesOpsWhoseIdsDiffer) {
  const std::string other = WriteEmitNvtxTrace("emit_nvtx_b.trace", 5000);
  auto r = Run("diff " + path_ + " " + other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 rows in both, 0 in A only, 0 in B only"), std::string::npos) << r.out;
  r = Run("diff " + path_ + " " + other + " --raw-names");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Only "step" and the seq-only MulBackward0 names are the same as recorded.
  EXPECT_NE(r.out.find("3 rows in both, 6 in A only, 6 in B only"), std::string::npos) << r.out;
  std::remove(other.c_str());
}

TEST_F(RangeNamesCli, ExportsCarryNormalizedNamesAndTheRecordedOnes) {
  const std::string json = testing::TraceFileBuilder::TempPath("names.json");
  auto r = Run("export " + path_ + " --format chrome -o " + json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  size_t mm = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") != "aten::mm") continue;
    ++mm;
    EXPECT_EQ(e["args"]["raw_name"].get<std::string>().rfind("aten::mm, seq = ", 0), 0u) << e;
  }
  EXPECT_EQ(mm, 4u);
  std::remove(json.c_str());

  const std::string db_path = testing::TraceFileBuilder::TempPath("names.sqlite");
  r = Run("export " + path_ + " --format sqlite -o " + db_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT n.text, r.rawText FROM NVTX_EVENTS n JOIN "
                               "TRACER_NVTX_RAW_TEXT r ON r.nvtxRowId = n.rowid ORDER BY n.start",
                               -1, &st, nullptr),
            SQLITE_OK);
  std::vector<std::pair<std::string, std::string>> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                      reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_EQ(rows.size(), 8u);  // 2 aten::to, 4 aten::mm, 2 MulBackward0
  EXPECT_EQ(rows[0],
            std::make_pair(std::string("aten::to"), std::string("aten::to, op_id = 1001")));
  EXPECT_EQ(rows[2].first, "aten::mm");
  EXPECT_EQ(rows[2].second, "aten::mm, seq = 10, op_id = 1010");
  // --raw-names: the names as recorded, nothing to keep beside them.
  r = Run("export " + path_ + " --format sqlite --raw-names --force-overwrite -o " + db_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM TRACER_NVTX_RAW_TEXT", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::remove(db_path.c_str());
}

TEST_F(RangeNamesCli, HelpDocumentsIt) {
  auto r = Run("report --help");
  EXPECT_NE(r.out.find("--raw-names"), std::string::npos);
  EXPECT_NE(r.out.find("--name-rules"), std::string::npos);
  EXPECT_NE(r.out.find("Range names:"), std::string::npos);
}

}  // namespace
}  // namespace tracer::analysis
