// Reporter vs SQL on the same data: a generated trace (steps x layers x
// ranges, --kernels GPU kernels launched from nested NVTX ranges) is
//   1. exported to SQLite with nsys's tables (`tracer export --format
//      sqlite`) and queried with a user's per-range kernel SQL (an mLoRA study's, verbatim), by the
//      sqlite3 library (every result row stepped through): the baseline;
//   2. analysed by our reporter: attribution (AnalyzedTrace), the range x
//      kernel table (what the SQL computes), then the groups table, whose
//      report model also computes the GPU projection (done on first use).
// Prints both times and the ratio (target: ours at least 10x faster).
//
//   tables_bench [--kernels N] [--keep-db PATH]
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/categories.h"
#include "libtracer/analysis/reports/group_rules.h"
#include "libtracer/analysis/reports/groups.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/tables.h"

namespace {

using tracer::analysis::Trace;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// step > layer_<l> > {f_attention_norm_<l>, f_linear_wq_<l>, f_lora_a_<ad>_<l>,
// f_lora_b_<ad>_<l>, f_w1_<l>}, each leaf launching kernels; one runtime API
// record and one launch record per kernel, as the tracer writes them.
Trace Generate(size_t kernels) {
  Trace t;
  t.processes.emplace_back();
  auto& p = t.processes.back();
  p.header.pid = 1234;
  p.threads.resize(2);
  p.threads[1] = {true, 1234, 0, t.strings.Intern("main")};
  p.streams.resize(2);
  p.streams[1] = {true, 0, 1, 7};
  const char* leaves[] = {"f_attention_norm", "f_linear_wq", "f_lora_a_alpaca", "f_lora_b_alpaca",
                          "f_w1"};
  const char* kernel_names[] = {
      "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
      "void at::native::vectorized_elementwise_kernel<4>", "void at::native::reduce_kernel<512, 1>",
      "fmha_cutlassF_bf16_aligned_64x128_rf_sm80", "void at::native::elementwise_kernel<128, 2>"};
  const uint32_t api_name = t.strings.Intern("cudaLaunchKernel_v7000");
  const size_t layers = 16, per_leaf = 4;
  uint64_t now = 1000, id = 0, corr = 0, gpu = 0;
  size_t made = 0;
  while (made < kernels) {
    tracer::RangeRecord step;
    step.id = ++id;
    step.thread = 1;
    step.name = t.strings.Intern("step");
    step.start_ns = now;
    const size_t step_index = p.ranges.size();
    p.ranges.push_back(step);
    for (size_t l = 0; l < layers && made < kernels; ++l) {
      tracer::RangeRecord layer;
      layer.id = ++id;
      layer.parent_id = step.id;
      layer.depth = 1;
      layer.thread = 1;
      layer.name = t.strings.Intern("layer_" + std::to_string(l));
      layer.start_ns = ++now;
      const size_t layer_index = p.ranges.size();
      p.ranges.push_back(layer);
      for (const char* leaf : leaves) {
        tracer::RangeRecord r;
        r.id = ++id;
        r.parent_id = layer.id;
        r.depth = 2;
        r.thread = 1;
        r.name = t.strings.Intern(std::string(leaf) + "_" + std::to_string(l));
        r.start_ns = ++now;
        for (size_t k = 0; k < per_leaf && made < kernels; ++k, ++made) {
          ++corr;
          now += 5;
          tracer::ApiRecord a;
          a.start_ns = now;
          a.end_ns = now + 3;
          a.thread = 1;
          a.correlation_id = corr;
          a.name = api_name;
          p.api_calls.push_back(a);
          tracer::LaunchRecord lr;
          lr.correlation_id = corr;
          lr.time_ns = now;
          lr.thread = 1;
          lr.range_id = r.id;
          p.launches.push_back(lr);
          tracer::KernelRecord kr;
          gpu = std::max(gpu, now + 10) + 2;
          kr.start_ns = gpu;
          kr.end_ns = gpu + 20 + (made % 7);
          gpu = kr.end_ns;
          kr.name = t.strings.Intern(kernel_names[made % 5]);
          kr.stream = 1;
          kr.correlation_id = corr;
          p.kernels.push_back(kr);
        }
        now += 4;
        r.end_ns = now;
        p.ranges.push_back(r);
      }
      p.ranges[layer_index].end_ns = ++now;
    }
    p.ranges[step_index].end_ns = ++now;
    now += 100;
  }
  return t;
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs every statement of sql, stepping through all result rows; returns
// the number of rows of the last statement.
long long RunSql(sqlite3* db, const std::string& sql) {
  const char* tail = sql.c_str();
  long long rows = 0;
  while (tail && *tail) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, tail, -1, &stmt, &tail) != SQLITE_OK) {
      std::fprintf(stderr, "sql error: %s\n", sqlite3_errmsg(db));
      std::exit(1);
    }
    if (!stmt) continue;  // whitespace / comment
    rows = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      ++rows;
      // Read the columns as a client would.
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) sqlite3_column_text(stmt, c);
    }
    sqlite3_finalize(stmt);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  size_t kernels = 1000000;
  std::string keep_db;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--kernels") && i + 1 < argc) {
      kernels = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--keep-db") && i + 1 < argc) {
      keep_db = argv[++i];
    } else {
      std::fprintf(stderr, "usage: tables_bench [--kernels N] [--keep-db PATH]\n");
      return 2;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  const Trace trace = Generate(kernels);
  const auto& p = trace.processes[0];
  std::printf("generated: %zu kernels, %zu ranges, %zu API calls (%.2f s)\n", p.kernels.size(),
              p.ranges.size(), p.api_calls.size(), Seconds(t0));

  const std::string db_path = keep_db.empty()
                                  ? (std::filesystem::temp_directory_path() /
                                     ("tables_bench_" + std::to_string(getpid()) + ".sqlite"))
                                        .string()
                                  : keep_db;
  t0 = std::chrono::steady_clock::now();
  std::string error;
  if (!tracer::analysis::exporters::WriteSqlite(trace, db_path, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const double export_s = Seconds(t0);

  // Baseline: the study's SQL, verbatim.
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  t0 = std::chrono::steady_clock::now();
  const long long sql_rows = RunSql(db, ReadFile(TRACER_SEEDS_SQL));
  const double sql_s = Seconds(t0);
  sqlite3_close(db);

  // Ours: attribution + range x kernel table; then groups (+ projection).
  t0 = std::chrono::steady_clock::now();
  const tracer::analysis::AnalyzedTrace analyzed(trace, {});
  const double analyze_s = Seconds(t0);
  const auto range_kernels = tracer::analysis::RangeKernelsTable(analyzed, {});
  const double ours_s = Seconds(t0);
  t0 = std::chrono::steady_clock::now();
  const tracer::analysis::reports::ReportModel model(analyzed);
  const double model_s = Seconds(t0);
  const auto rules =
      tracer::analysis::reports::ParseGroupRules(
          "f_lora_{adapter} = f_lora_a_{adapter} + f_lora_b_{adapter}\nf_linear = f_linear_wq\n"
          "f_mlp = f_w1\nf_attention_norm\n",
          "bench.groups")
          .value();
  const auto groups = tracer::analysis::reports::GroupsTable(model, rules).value();
  const double groups_s = Seconds(t0);
  t0 = std::chrono::steady_clock::now();
  const tracer::analysis::reports::KernelCategorizer categorizer;
  const auto categories = tracer::analysis::reports::RangeCategoriesTable(model, categorizer);
  const double categories_s = Seconds(t0);

  std::printf("export to SQLite (nsys tables):        %8.3f s\n", export_s);
  std::printf("user SQL via sqlite3 (baseline):       %8.3f s  (%lld result rows)\n", sql_s,
              sql_rows);
  std::printf(
      "tracer range x kernel (attribution,\n"
      "  table):                              %8.3f s  (%zu rows)\n",
      ours_s, range_kernels.rows.size());
  std::printf("  of which attribution:                %8.3f s\n", analyze_s);
  std::printf(
      "tracer groups (projection, model,\n"
      "  table):                              %8.3f s  (%zu rows)\n",
      groups_s, groups.rows.size());
  std::printf("  of which the report model (with the projection): %.3f s\n", model_s);
  std::printf("tracer range x category (on the model): %6.3f s  (%zu rows)\n", categories_s,
              categories.rows.size());
  std::printf("ratio SQL / tracer range x kernel:     %8.1fx  (target >= 10x)\n",
              ours_s > 0 ? sql_s / ours_s : 0.0);
  const double model_path = analyze_s + groups_s + categories_s;
  std::printf("ratio SQL / tracer attribution + groups + range x category: %.1fx\n",
              model_path > 0 ? sql_s / model_path : 0.0);
  if (keep_db.empty()) std::filesystem::remove(db_path);
  return 0;
}
