#include "libtracer/analysis/reports/groups.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "libtracer/analysis/reports/group_rules.h"
#include "libtracer/analysis/reports/natural_order.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

std::string ErrorOf(std::string_view text) {
  return ParseGroupRules(text, "g.groups").status().message();
}

TEST(GroupRules, ParsesTheSeedsNotation) {
  const auto rules =
      ParseGroupRules(
          "# mLoRA\n"
          "1. f_embedding\n"
          "f_lora_{adapter} = f_dropout_{adapter} + f_lora_a_{adapter} + f_lora_b_{adapter} + "
          "f_scaling_{adapter}\n"
          "\n"
          "f_mlp = f_w1 + f_w3 + f_silu_w2 + f_w1_m_w3 + f_w2 + f_w2_add  # comment\n",
          "g.groups")
          .value();
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].group.text(), "f_embedding");
  ASSERT_EQ(rules[0].terms.size(), 1u);
  EXPECT_EQ(rules[0].terms[0].text(), "f_embedding");
  EXPECT_EQ(rules[0].where, "g.groups:2");
  EXPECT_EQ(rules[1].terms.size(), 4u);
  EXPECT_EQ(rules[1].terms[1].text(), "f_lora_a_{adapter}");
  EXPECT_EQ(rules[2].terms.size(), 6u);
  EXPECT_EQ(rules[2].where, "g.groups:5");
}

TEST(GroupRules, SyntaxErrorsNameTheLine) {
  // The seeds' own typo: "+_ f_linear_wv".
  EXPECT_NE(ErrorOf("f_embedding\nf_linear = f_linear_wq + f_linear_wk +_ f_linear_wv\n")
                .find("g.groups:2:"),
            std::string::npos);
  EXPECT_NE(ErrorOf("f_lora_{adapter = f_x\n").find("g.groups:1: '{' without '}'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("f = a + + b\n").find("g.groups:1: empty term"), std::string::npos);
  EXPECT_NE(ErrorOf("f =\n").find("g.groups:1: nothing after '='"), std::string::npos);
  EXPECT_NE(ErrorOf("f_{a}{b}\n").find("adjacent placeholders"), std::string::npos);
  EXPECT_NE(ErrorOf("f_{}\n").find("empty placeholder"), std::string::npos);
  EXPECT_NE(ErrorOf("f_lora_{adapter} = f_x + f_lora_a_{adapter}\n")
                .find("g.groups:1: term 'f_x' does not use {adapter}"),
            std::string::npos);
  EXPECT_NE(ErrorOf("a\n\na = b\n").find("g.groups:3: group 'a' already defined at g.groups:1"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("a = b + c\n"), "");
  EXPECT_TRUE(ParseGroupRules("a = b + c\n", "g.groups").ok());
  EXPECT_FALSE(ParseGroupRules("f =\n", "g.groups").ok());
  EXPECT_EQ(NamePattern::Parse("f_{a").status().message(), "'{' without '}' in 'f_{a'");
}

TEST(GroupRules, LayerSuffixBindsLayerId) {
  std::string_view base, layer;
  ASSERT_TRUE(SplitLayerSuffix("f_lora_a_alpaca_12", &base, &layer));
  EXPECT_EQ(base, "f_lora_a_alpaca");
  EXPECT_EQ(layer, "12");
  EXPECT_FALSE(SplitLayerSuffix("f_w2", &base, &layer));
  EXPECT_FALSE(SplitLayerSuffix("b_linear_w2_", &base, &layer));
  EXPECT_FALSE(SplitLayerSuffix("_3", &base, &layer));

  const auto term = NamePattern::Parse("f_lora_a_{adapter}").value();
  auto m = MatchTerm(term, "f_lora_a_alpaca_3");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].at("adapter"), "alpaca");
  EXPECT_EQ(m[0].at("layer_id"), "3");
  m = MatchTerm(term, "f_lora_a_alpaca");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].count("layer_id"), 0u);
  EXPECT_TRUE(MatchTerm(term, "f_lora_b_alpaca_3").empty());
  EXPECT_TRUE(MatchTerm(term, "f_lora_a__3").empty());  // placeholders are non-empty

  // An explicit {layer_id} matches the whole name.
  m = MatchTerm(NamePattern::Parse("f_w{n}_{layer_id}").value(), "f_w1_7");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].at("n"), "1");
  EXPECT_EQ(m[0].at("layer_id"), "7");
}

TEST(GroupRules, MatchAllFindsEverySplit) {
  const auto p = NamePattern::Parse("{a}_{b}").value();
  EXPECT_EQ(p.MatchAll("x_y_z").size(), 2u);
  EXPECT_EQ(p.MatchAll("x_y").size(), 1u);
  // A repeated placeholder binds one value.
  const auto q = NamePattern::Parse("{a}_to_{a}").value();
  EXPECT_EQ(q.MatchAll("x_to_x").size(), 1u);
  EXPECT_TRUE(q.MatchAll("x_to_y").empty());
  EXPECT_EQ(NamePattern::Parse("f_lora_{adapter}").value().Substitute({{"adapter", "alpaca"}}),
            "f_lora_alpaca");
}

// Issue 12 (7): a rule with 6-8 placeholders against an 80-part range name
// ran 30 s and died of bad_alloc (every split was collected). Callers ask for
// at most two bindings, splits that cannot match are remembered, and a
// search that still branches too much stops with a clear error.
std::string EightyParts() {
  std::string name = "p0";
  for (int i = 1; i < 80; ++i) name += "_p" + std::to_string(i);
  return name;
}

TEST(GroupRules, ManyPlaceholdersOnALongNameAreBounded) {
  const std::string name = EightyParts();
  bool gave_up = true;
  const auto eight = NamePattern::Parse("{a}_{b}_{c}_{d}_{e}_{f}_{g}_{h}").value();
  EXPECT_EQ(eight.MatchAll(name, 2, &gave_up).size(), 2u);
  EXPECT_FALSE(gave_up);
  // No match, C(79, 7) splits to rule out: only remembered failures make it
  // fit in the step budget.
  const auto none = NamePattern::Parse("{a}_{b}_{c}_{d}_{e}_{f}_{g}_end").value();
  EXPECT_TRUE(none.MatchAll(name, 2, &gave_up).empty());
  EXPECT_FALSE(gave_up);
  // One split only: found exactly.
  const auto one = NamePattern::Parse("{a}_p40_{b}").value();
  const auto m = one.MatchAll(name, 2, &gave_up);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_FALSE(gave_up);
  EXPECT_EQ(m[0].at("b").substr(0, 3), "p41");
  // A repeated placeholder cannot be remembered across: the budget ends it.
  const auto repeated = NamePattern::Parse("{a}_{b}_{c}_{d}_{e}_{f}_{a}_end").value();
  EXPECT_TRUE(repeated.MatchAll(name, 2, &gave_up).empty());
  EXPECT_TRUE(gave_up);
}

TEST(GroupsTable, TooCostlyMatchIsOneClearError) {
  Trace trace;
  testing::TraceFixture f(&trace);
  f.Range(EightyParts(), 0, 10);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const auto t = GroupsTable(
      model, ParseGroupRules("g = {a}_{b}_{c}_{d}_{e}_{f}_{a}_end\n", "slow.groups").value());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("slow.groups:1: matching range 'p0_p1_p2"), std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("stopped after 200000 steps"), std::string::npos);
  // Eight placeholders that do split it: ambiguous, said at once.
  const auto amb = GroupsTable(
      model, ParseGroupRules("g = {a}_{b}_{c}_{d}_{e}_{f}_{g}_{h}\n", "amb.groups").value());
  ASSERT_FALSE(amb.ok());
  EXPECT_NE(amb.status().message().find("ambiguous rule"), std::string::npos);
}

TEST(NaturalOrder, NumbersCompareByValue) {
  EXPECT_TRUE(NaturalLess("layer_2", "layer_10"));
  EXPECT_FALSE(NaturalLess("layer_10", "layer_2"));
  EXPECT_TRUE(NaturalLess("a", "b"));
  EXPECT_TRUE(NaturalLess("a", "a1"));
  EXPECT_FALSE(NaturalLess("a1", "a1"));
}

// Two layers of a LoRA block with two adapters, one kernel per leaf range:
//   f_lora_a_x_<l>: 100 ns kernel, f_lora_b_x_<l>: 200, f_lora_a_y_<l>: 400,
//   f_w1_<l>: 1000; CPU durations are the range lengths below.
struct LoraTrace {
  Trace trace;
  LoraTrace() {
    testing::TraceFixture f(&trace);
    uint64_t t = 0;
    for (int layer = 0; layer < 2; ++layer) {
      const std::string l = "_" + std::to_string(layer);
      const uint64_t block = f.Range("layer" + l, t, t + 10000);
      const uint64_t a = f.Range("f_lora_a_x" + l, t + 10, t + 60, block);
      f.Kernel("gemm_a", t + 100, t + 200, a, t + 20);
      const uint64_t b = f.Range("f_lora_b_x" + l, t + 60, t + 90, block);
      f.Kernel("gemm_b", t + 200, t + 400, b, t + 70);
      const uint64_t ay = f.Range("f_lora_a_y" + l, t + 90, t + 120, block);
      f.Kernel("gemm_ay", t + 400, t + 800, ay, t + 100);
      const uint64_t w1 = f.Range("f_w1" + l, t + 200, t + 300, block);
      f.Kernel("gemm_w1", t + 1000, t + 2000, w1, t + 210);
      t += 20000;
    }
  }
};

std::string S(const Cell& c) { return std::get<std::string>(c); }
int64_t I(const Cell& c) { return std::get<int64_t>(c); }

TEST(GroupsTable, SumsMembersAcrossLayers) {
  LoraTrace lt;
  AnalyzedTrace analyzed(lt.trace, {});
  ReportModel model(analyzed);
  const auto rules = ParseGroupRules(
                         "f_lora_{adapter} = f_lora_a_{adapter} + f_lora_b_{adapter}\n"
                         "f_mlp = f_w1 + f_w3\n"
                         "f_embedding\n",
                         "t.groups")
                         .value();
  Table t = GroupsTable(model, rules).value();
  ASSERT_EQ(t.rows.size(), 3u);
  // Columns: group members instances cpu proj busy kernel kernels kernel_pct.
  EXPECT_EQ(S(t.rows[0][0]), "f_lora_x");
  EXPECT_EQ(I(t.rows[0][1]), 4);              // f_lora_{a,b}_x_{0,1}: distinct range names
  EXPECT_EQ(I(t.rows[0][2]), 4);              // 2 names x 2 layers
  EXPECT_EQ(I(t.rows[0][3]), 2 * (50 + 30));  // CPU
  EXPECT_EQ(I(t.rows[0][4]), 2 * (100 + 200));
  EXPECT_EQ(I(t.rows[0][6]), 2 * (100 + 200));
  EXPECT_EQ(I(t.rows[0][7]), 4);
  const double all = 2.0 * (100 + 200 + 400 + 1000);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][8]), 100.0 * 600 / all);
  EXPECT_EQ(S(t.rows[1][0]), "f_lora_y");
  EXPECT_EQ(I(t.rows[1][6]), 800);
  EXPECT_EQ(S(t.rows[2][0]), "f_mlp");
  EXPECT_EQ(I(t.rows[2][6]), 2000);
  // f_w3 and f_embedding matched nothing: warnings, not rows.
  bool w3 = false, emb = false;
  for (const auto& n : t.notes) {
    w3 |= n.find("terms that matched no range in t.groups: f_mlp (line 2): f_w3") !=
          std::string::npos;
    emb |=
        n.find("1 rule(s) of t.groups matched no range: f_embedding (line 3)") != std::string::npos;
  }
  EXPECT_TRUE(w3);
  EXPECT_TRUE(emb);
}

TEST(GroupsTable, ByLayerIdKeepsLayersApart) {
  LoraTrace lt;
  AnalyzedTrace analyzed(lt.trace, {});
  ReportModel model(analyzed);
  const auto rules =
      ParseGroupRules("f_lora_{adapter} = f_lora_a_{adapter} + f_lora_b_{adapter}\n", "t.groups")
          .value();
  Table t = GroupsTable(model, rules, {{"layer_id"}}).value();
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.columns[1].name, "layer_id");
  EXPECT_EQ(S(t.rows[0][0]), "f_lora_x");
  EXPECT_EQ(S(t.rows[0][1]), "0");
  EXPECT_EQ(S(t.rows[1][0]), "f_lora_x");
  EXPECT_EQ(S(t.rows[1][1]), "1");
  EXPECT_EQ(I(t.rows[1][7]), 300);  // one layer's kernel time
  EXPECT_EQ(S(t.rows[2][0]), "f_lora_y");
  Table typo = GroupsTable(model, rules, {{"adaptor"}}).value();
  EXPECT_NE(typo.notes.back().find("--by adaptor: no rule has a {adaptor} placeholder"),
            std::string::npos);
}

TEST(GroupsTable, NestedMembersCountOnceAndAmbiguityIsAnError) {
  Trace trace;
  testing::TraceFixture f(&trace);
  const uint64_t outer = f.Range("f_attention", 0, 1000);
  const uint64_t inner = f.Range("f_attention_core", 100, 500, outer);
  f.Kernel("k1", 200, 300, inner, 150);
  f.Kernel("k2", 600, 700, outer, 600);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  Table t =
      GroupsTable(model, ParseGroupRules("attn = f_attention + f_attention_core\n", "t").value())
          .value();
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(I(t.rows[0][2]), 1);     // the nested instance is inside its ancestor
  EXPECT_EQ(I(t.rows[0][3]), 1000);  // CPU of the outer range only
  EXPECT_EQ(I(t.rows[0][6]), 200);   // k1 once, not twice
  EXPECT_EQ(I(t.rows[0][7]), 2);

  const auto amb =
      GroupsTable(model, ParseGroupRules("# x\ng_{a} = {a}_{b}\n", "amb.groups").value());
  ASSERT_FALSE(amb.ok());
  EXPECT_NE(amb.status().message().find("amb.groups:2: ambiguous rule"), std::string::npos)
      << amb.status().message();
}

TEST(GroupsTable, MostSpecificTermBindsAndEqualOnesAreAmbiguous) {
  Trace trace;
  testing::TraceFixture f(&trace);
  f.Range("x_y_z", 0, 10);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  // x_{a} binds a=y_z, x_y_{a} binds a=z: the longer literal text wins.
  const Table t =
      GroupsTable(model, ParseGroupRules("g_{a} = x_{a} + x_y_{a}\n", "t.groups").value()).value();
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(S(t.rows[0][0]), "g_z");
  // Only the winning term matched: x_{a} is listed as matching nothing.
  bool x_unmatched = false;
  for (const auto& n : t.notes) x_unmatched |= n.find("g_{a} (line 1): x_{a}") != std::string::npos;
  EXPECT_TRUE(x_unmatched);
  // {a}_z binds a=x_y, x_{a} binds a=y_z, both with two literal characters.
  const auto two =
      GroupsTable(model, ParseGroupRules("g_{a} = {a}_z + x_{a}\n", "two.groups").value());
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("two.groups:1: ambiguous rule: range 'x_y_z'"),
            std::string::npos)
      << two.status().message();
}

TEST(GroupsTable, ExcludedTermsLeaveNamesOut) {
  Trace trace;
  testing::TraceFixture f(&trace);
  f.Kernel("k_lora", 10, 20, f.Range("f_lora_x", 0, 100), 5);
  f.Kernel("k_add", 110, 140, f.Range("f_lora_add_x", 100, 200), 105);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  Table t = GroupsTable(model, ParseGroupRules("f_lora_{adapter} = f_lora_{adapter} - "
                                               "f_lora_add_{adapter}\nf_lora_add_{adapter}\n",
                                               "p.groups")
                                   .value())
                .value();
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(S(t.rows[0][0]), "f_lora_x");
  EXPECT_EQ(I(t.rows[0][6]), 10);
  EXPECT_EQ(S(t.rows[1][0]), "f_lora_add_x");
  EXPECT_EQ(I(t.rows[1][6]), 30);
}

// The names tracer.torch.annotate gives a peft model (python/tracer/_naming.py):
// q_proj.lora_A.<adapter> is f_q_proj_lora_A_<adapter>_<layer> where q_proj
// and v_proj both have adapters, f_lora_A_<adapter>_<layer> where only one
// does; and the hand-placed ranges of a PEFT-style trainer (f_lora_<adapter>).
TEST(GroupsFiles, PeftBindsTheAdapterOfAnnotatedModules) {
  Trace trace;
  testing::TraceFixture f(&trace);
  uint64_t t = 0;
  const auto range = [&](const std::string& name, uint64_t kernel_ns) {
    const uint64_t r = f.Range(name, t, t + 100);
    f.Kernel("k_" + name, t + 10, t + 10 + kernel_ns, r, t + 5);
    t += 1000;
  };
  for (const char* proj : {"q_proj", "v_proj"}) {
    const std::string p = std::string("f_") + proj;
    range(p + "_base_layer_0", 1000);
    range(p + "_lora_dropout_default_0", 1);
    range(p + "_lora_A_default_0", 10);
    range(p + "_lora_B_default_0", 20);
    range(p + "_lora_A_chat_0", 100);
    range(p + "_lora_B_chat_0", 200);
  }
  range("f_base_layer_1", 2000);  // layer 1: only q_proj has adapters
  range("f_lora_A_chat_1", 300);
  range("f_lora_B_chat_1", 400);
  range("b_q_proj_lora_B_chat_1", 7);
  range("f_lora_alpaca", 5000);  // a trainer's own range
  range("f_lora_add_alpaca", 6000);
  AnalyzedTrace analyzed(trace, {});
  ReportModel model(analyzed);
  const std::string path = TRACER_SOURCE_DIR "/data/groups/peft.groups";
  const auto rules = ParseGroupRules(ReadTextFile(path).value(), path).value();
  const Table table = GroupsTable(model, rules).value();
  std::map<std::string, std::pair<int64_t, int64_t>> rows;  // group -> members, kernel ns
  for (const auto& row : table.rows) rows[S(row[0])] = {I(row[1]), I(row[6])};
  EXPECT_EQ(rows["f_lora_default"], std::make_pair(int64_t{6}, int64_t{2 * 31}));
  EXPECT_EQ(rows["f_lora_chat"], std::make_pair(int64_t{6}, int64_t{2 * 300 + 700}));
  EXPECT_EQ(rows["f_lora_alpaca"], std::make_pair(int64_t{1}, int64_t{5000}));
  EXPECT_EQ(rows["f_lora_add_alpaca"], std::make_pair(int64_t{1}, int64_t{6000}));
  EXPECT_EQ(rows["f_linear"], std::make_pair(int64_t{3}, int64_t{4000}));
  EXPECT_EQ(rows["b_lora_chat"], std::make_pair(int64_t{1}, int64_t{7}));
  for (const auto& [group, _] : rows) {
    EXPECT_EQ(group.find("lora_A"), std::string::npos) << group;
    EXPECT_EQ(group.find("lora_B"), std::string::npos) << group;
  }
  // --by adapter keeps the adapters apart with the bound value.
  const Table by = GroupsTable(model, rules, {{"adapter"}}).value();
  std::set<std::string> adapters;
  for (const auto& row : by.rows) {
    if (S(row[0]).rfind("f_lora_", 0) == 0) adapters.insert(S(row[1]));
  }
  EXPECT_EQ(adapters, (std::set<std::string>{"alpaca", "chat", "default"}));
}

TEST(GroupsFiles, ShippedFilesParse) {
  for (const char* name : {"mlora.groups", "peft.groups"}) {
    const std::string path = std::string(TRACER_SOURCE_DIR "/data/groups/") + name;
    const auto rules = ParseGroupRules(ReadTextFile(path).value(), path).value();
    EXPECT_GE(rules.size(), 26u) << path;
  }
}

}  // namespace
}  // namespace tracer::analysis::reports
