// The HTML report's writer: user text (range names, titles, notes) escaped
// in the page, the embedded JSON safe against "</script>" and equal to the
// table's cells once parsed, the row cap said in the page, no network
// reference; and the flame graph's default step (the median).
#include "libtracer/analysis/tables/html_render.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "libtracer/analysis/reports/html_report.h"
#include "libtracer/analysis/tables/render.h"

namespace tracer::analysis {
namespace {

constexpr char kEvilName[] = "</script><script>alert(\"x&y\")</script><!-- 'q'";

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

Table EvilTable(size_t rows) {
  Table t;
  t.name = "ranges";
  t.title = "Ranges <b>& \"friends\"</b>";
  t.columns = {{"range", ColumnKind::kText, "Range <name>"},
               {"cpu_total_ns", ColumnKind::kDuration, "CPU total"},
               {"share_pct", ColumnKind::kPercent, "Share"}};
  t.rows.push_back({std::string(kEvilName), int64_t{1234567}, 12.5});
  for (size_t i = 1; i < rows; ++i) {
    t.rows.push_back({"r" + std::to_string(i), static_cast<int64_t>(i), Cell()});
  }
  t.notes.push_back("note with <tag> & \"quotes\"");
  return t;
}

// The text of the embedded JSON element.
std::string EmbeddedJson(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"tracer-data\">";
  const size_t begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = page.find("</script>", begin);
  return page.substr(begin + open.size(), end - begin - open.size());
}

TEST(HtmlEscapeTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(HtmlEscape("plain ünïcode"), "plain ünïcode");
}

TEST(HtmlEscapeTest, ScriptSafeJsonHasNoAngleBracketsAndParsesBack) {
  const nlohmann::json j = {{"name", kEvilName}};
  const std::string safe = ScriptSafeJson(j.dump());
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(safe.find('>'), std::string::npos);
  EXPECT_EQ(safe.find('&'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(safe)["name"], kEvilName);
}

TEST(HtmlPageTest, UserTextIsEscapedAndJsonIsSafe) {
  HtmlPage page;
  page.title = "report of <x.trace>";
  page.header_lines = {"Input: a&b.trace"};
  page.tables.push_back({EvilTable(2), 0, true});
  HtmlChart bars;
  bars.id = "bars";
  bars.table = "ranges";
  bars.title = "bars <of> ranges";
  bars.label_columns = {"range"};
  bars.modes = {{"time", {{"cpu_total_ns", "CPU"}}}};
  page.charts.push_back(bars);
  const std::string html = RenderHtmlPage(page);

  // Only the page's own two script elements close: the name cannot.
  EXPECT_EQ(Count(html, "</script>"), 2u);
  EXPECT_EQ(Count(html, "<script"), 2u);
  EXPECT_EQ(Count(html, "<b>"), 0u);
  EXPECT_NE(html.find("<td>&lt;/script&gt;&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;"
                      "&lt;!-- &#39;q&#39;</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>report of &lt;x.trace&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("Input: a&amp;b.trace"), std::string::npos);
  EXPECT_NE(html.find("Ranges &lt;b&gt;&amp; &quot;friends&quot;&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find(">Range &lt;name&gt;</th>"), std::string::npos);
  EXPECT_NE(html.find("note with &lt;tag&gt; &amp; &quot;quotes&quot;"), std::string::npos);
  EXPECT_NE(html.find("bars &lt;of&gt; ranges"), std::string::npos);

  // The embedded JSON parses back to the cells, as --format json has them.
  const auto data = nlohmann::json::parse(EmbeddedJson(html));
  ASSERT_EQ(data["tables"].size(), 1u);
  const auto& rows = data["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], kEvilName);
  EXPECT_EQ(rows[0][1], 1234567);
  EXPECT_EQ(rows[0][2], 12.5);
  EXPECT_TRUE(rows[1][2].is_null());
  EXPECT_EQ(data["charts"][0]["kind"], "bars");
  EXPECT_EQ(data["charts"][0]["modes"][0]["series"][0]["column"], "cpu_total_ns");

  // Cells show the text report's formatting (one unit per column, named in
  // its header), the raw value in data-v.
  EXPECT_NE(html.find(">CPU total (us)</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\" data-v=\"1234567\">1234.567</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\" data-v=\"1\">0.001</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\" data-v=\"12.5\">12.5%</td>"), std::string::npos);
}

TEST(HtmlPageTest, NeedsNoNetwork) {
  HtmlPage page;
  page.title = "t";
  page.tables.push_back({EvilTable(3), 0, true});
  std::string html = RenderHtmlPage(page);
  // The SVG namespace is a name, never fetched.
  for (size_t at; (at = html.find("http://www.w3.org/2000/svg")) != std::string::npos;) {
    html.erase(at, 26);
  }
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("//cdn"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(HtmlPageTest, RowCapIsSaidAndEmbeddedRowsFollowTheTable) {
  HtmlPage page;
  page.title = "t";
  page.max_rows = 3;
  page.tables.push_back({EvilTable(10), 0, true});
  Table chart_source = EvilTable(10);
  chart_source.name = "timeline";
  page.tables.push_back({chart_source, 8, true});
  const std::string html = RenderHtmlPage(page);
  EXPECT_EQ(Count(html, "Showing the first 3 of 10 rows"), 2u);
  // Each HTML table shows 3 rows (tbody) ...
  EXPECT_EQ(Count(html, "<tr><td"), 6u);
  // ... the JSON holds 3 rows of the first and 8 of the chart's source.
  const auto data = nlohmann::json::parse(EmbeddedJson(html));
  EXPECT_EQ(data["tables"][0]["rows"].size(), 3u);
  EXPECT_EQ(data["tables"][0]["total_rows"], 10);
  EXPECT_EQ(data["tables"][1]["rows"].size(), 8u);
  EXPECT_EQ(data["tables"][1]["rows"][7][0], "r7");
}

TEST(HtmlPageTest, DuplicateTableNamesGetDistinctIds) {
  HtmlPage page;
  page.title = "t";
  page.tables.push_back({EvilTable(1), 0, true});
  page.tables.push_back({EvilTable(1), 0, true});
  const std::string html = RenderHtmlPage(page);
  EXPECT_EQ(Count(html, "id=\"t-ranges\""), 1u);
  EXPECT_EQ(Count(html, "id=\"t-ranges-2\""), 1u);
}

TEST(HtmlReportTest, MedianStepOfTheFirstProcess) {
  Table phases;
  phases.name = "phases";
  phases.columns = {{"process", ColumnKind::kText, "Process"},
                    {"step", ColumnKind::kText, "Step"},
                    {"step_cpu_ns", ColumnKind::kDuration, "Step"}};
  auto row = [&](const char* p, const char* step, int64_t ns) {
    phases.rows.push_back({std::string(p), std::string(step), ns});
  };
  row("rank 0", "4", 500);
  row("rank 0", "5", 100);
  row("rank 0", "6", 300);
  row("rank 0", "7", 900);
  row("rank 0", "all", 1800);
  row("rank 1", "4", 1);  // another process's steps do not count
  row("rank 1", "5", 2);
  // 100, 300, 500, 900: the lower median is 300, step 6.
  EXPECT_EQ(reports::MedianStep(phases), 6);
  phases.rows.erase(phases.rows.begin() + 3);  // 100, 300, 500: 300 again
  EXPECT_EQ(reports::MedianStep(phases), 6);
  phases.rows.clear();
  EXPECT_EQ(reports::MedianStep(phases), -1);
}

}  // namespace
}  // namespace tracer::analysis
