// `tracer report FILE...`: the per-range, per-kernel, GPU and extra tables from one or more
// streams (or imported traces), as text, CSV, Markdown or JSON.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/frame_scanner.h"
#include "libtracer/analysis/reports/html_report.h"
#include "libtracer/analysis/reports/record_selection.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/reports/row_selection.h"
#include "libtracer/analysis/tables/core_tables.h"
#include "libtracer/analysis/tables/metrics_table.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/streaming_report.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/core/status.h"
#include "tools/cli_util.h"
#include "tools/command.h"
#include "tools/groups_files.h"
#include "tools/report_ranks.h"

namespace tracer::cli {
namespace {

using analysis::Table;

constexpr const char* kHelpFooter = R"(
Examples:
  tracer report run.trace                      summary + ranges (+ GPU tables when present)
  tracer report run.trace --table kernels --top 20
  tracer report run.trace --table range-kernels --filter '^f_lora'
  tracer report rank0.trace rank1.trace --by-process
  tracer report run.trace --table all --format csv -o report_csv   (report_csv/<table>.csv)
  tracer report run.trace --groups peft        default tables + the groups table
  tracer report run.trace --table metrics --groups mlora --by layer_id
                                               PM metrics per range, kernel and group
  tracer report nsys_export.sqlite --main-thread off   (nsys-identical attribution)

Tables (--table, comma separated, or 'all'):
  summary        per process: threads, record counts, dropped records by cause,
                 GPU ops unattributed / outside any range / inherited.
  ranges         per NVTX range name (nsys nvtx_sum): instances, CPU
                 total/avg/med/min/max/stddev, Time %, style (PushPop /
                 StartEnd), nesting depth, threads, GPU projected total/avg,
                 GPU busy, kernel count and time, top kernels.
  kernels        per kernel (nsys cuda_gpu_kern_sum): count,
                 total/avg/med/min/max/stddev, share of all kernel time; names
                 demangled and shortened, with the least template / argument
                 text that tells apart kernels sharing a short name (full name
                 in a column).
  range-kernels  per (range, kernel): a kernel counts toward EVERY range on its
                 stack (nsys nvtx_kern_sum), so "step" includes its layers.
  gpu            per range name: GPU projection statistics over the instances
                 that launched GPU work (nsys nvtx_gpu_proj_sum), with stddev,
                 style and GPU ops per instance.
  memory         memcpy per direction and memset: count, time
                 total/avg/med/min/max/stddev and Time % (nsys
                 cuda_gpu_mem_time_sum), bytes total/avg/med/min/max/stddev
                 (cuda_gpu_mem_size_sum), GB/s.
  api            CUDA runtime/driver API calls per function (nsys
                 cuda_api_sum): calls, total/avg/med/min/max/stddev, Time %;
                 names as nsys prints them (cudaMemcpy2D, not
                 cudaMemcpy2D_v3020).

Statistics are nsys's: median of an even count = mean of the two middle
values, stddev = sample standard deviation (n - 1, 0 for one value), Time % =
share of the table's summed total. nsys prints avg / med / stddev with one
decimal; here they are whole ns (or bytes), rounded half away from zero.
Text and md leave out columns empty in every row (e.g. the GPU columns of an
NVTX-only trace); --columns picks columns. Durations: one unit per column,
named in its header (e.g. Total (ms)), the smallest in which the column's largest
value has at most four digits before the point; --timeunit one unit for
every duration column.

Definitions:
  CPU time       range end - range start on the thread that opened it.
  GPU ops        kernels, memcpys and memsets. An op belongs to the ranges open
                 on the thread that launched it, at launch time (and their
                 ancestors); CUDA graph kernels to the ranges open when the
                 graph node was created or the graph launched.
  projected GPU  per range instance: end of its last GPU op - start of its
                 first, over all streams (child ranges included, not
                 subtracted). Ranges without GPU work show '-', not 0.
  GPU busy       time at least one of the instance's ops was running (the
                 union of their intervals): projected GPU minus idle gaps.
  kernel time    sum of kernel durations;
concurrent kernels count twice,
    so it can exceed busy time
            .inherited ops launched on a worker thread(e.g.PyTorch's autograd threads)
                also count toward the ranges open at that moment on the main thread(--main - thread)
            .'off' gives nsys' numbers.

        Selections(every table, groups, phases, ranks and comm see only these)
    : --steps 10 -
        20 steps numbered per process from the program's own count: 0 is its first step,
and a run captured from-- capture - start N of the step range starts at step N -
    1(the trace records where capture began).A step keeps the ranges inside it,
the GPU ops its ranges launched, API calls starting in it
                                     .--time A
    : B a window from each process's start as its timeline shows it (
                                         nsys export
                                         : nsys's session start; recorded or Kineto trace: its first
                                               record,
                                           where Perfetto opens an exported trace)
                                     .Units ns(default),
us, ms, s;
open ends(200ms
          :, : 3s)
    .A range is kept when it lies inside the window
    whole(one crossing an edge is left out, never clipped),
    a GPU op when its launch(its API call) is inside, wherever it ran; API calls and marks
                 by their start. With --steps, what both keep. These read the
                 input whole (the bounded path says so).

Large inputs: stream files of 2 GiB or more (all inputs together; see
--stream-above), or too large to read whole in half the available memory, are
read as a stream with memory bounded by distinct names, open ranges and the GPU
ops under them (--stream forces it, --no-stream turns it off). That path
computes summary, ranges, kernels, range-kernels, gpu, memory and api with the
same numbers as reading whole, main-thread inheritance included (worker-thread
launches wait for the main thread's range around them to close). When an
input needs what it cannot do while reading (start/end ranges over GPU work,
records far out of order, worker launches waiting on one main-thread range by
the hundred thousand, other tables), it says so on
stderr and reads the input whole: the choice never changes a number. Nsys
SQLite exports and PyTorch profiler (Kineto) JSON traces take that path too
(their events are sorted by time first: an nsys export by SQLite, a Kineto trace
in a temporary file of 48 bytes per event). The ranks table (across processes)
takes the bounded path one file read whole at a time (memory: the largest file,
not all of them; any input format), with the step range chosen over all files
as reading them at once chooses it. An input that must be read whole
and would not fit the available memory (TRACER_REPORT_MEMORY=8G sets it, e.g.
in a container) is refused with what fits instead, unless --no-stream; the
default tables of such an input leave out only the metrics table (PM samples).

HTML (--format html -o report.html): one self-contained page (no network
needed: its script, style and SVG charts are inline) with the tables above and
charts drawn from them: CPU and GPU time per group (--groups, else the first
25 ranges), the phases of each step stacked, a flame graph of one step's ranges
(the step of median CPU time, or --flame-step N; hover for name and duration,
click to zoom) and, with several processes, each step's and range's spread
across ranks (min, median, max, the slowest). The page embeds the tables'
rows as JSON (the numbers --format json prints); each table shows its first
--html-rows rows (default 200) and says how many it has.

Several files are merged: rows aggregate across processes by range name;
--by-process keeps one row per process. Damaged files: every complete record
is used and one warning per file says what was lost. Exit code 0 when
something could be read, 1 otherwise.
)";

struct ReportArgs {
  std::vector<std::string> files;
  std::string tables;
  std::string format = "text";
  size_t top = 0;
  std::string sort = "total";
  bool sort_given = false;  // --sort on the command line
  std::string filter;
  std::string domain;
  std::string main_thread = "auto";
  bool by_process = false;
  std::string ranks, pids;  // --rank / --pid, comma separated
  std::string steps;        // --steps, e.g. 10-20
  std::string time;         // --time, e.g. 1.5s:2.5s
  bool stream = false, no_stream = false;
  std::string stream_above = "2G";
  std::string output;
  int64_t flame_step = -1;  // --flame-step (html)
  size_t html_rows = 200;   // --html-rows (html)
  bool force_overwrite = false;
  analysis::reports::ExtraTableOptions extra;  // groups, timeline, phases, ...
  NameOptions names;
  ViewOptions view;  // --timeunit, --columns
};

// The core tables (`--table all`), in core_tables.h order.
const std::vector<std::string>& AllTables() {
  static const std::vector<std::string> kAll = [] {
    std::vector<std::string> names;
    for (const analysis::CoreTable& t : analysis::CoreTableList()) names.emplace_back(t.name);
    return names;
  }();
  return kAll;
}

// "0,2,3" -> {0, 2, 3}; false on anything else.
bool ParseIntList(const std::string& s, std::vector<int64_t>* out) {
  for (const std::string& item : analysis::reports::SplitComma(s)) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < 0) return false;
    out->push_back(v);
  }
  return true;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tracer report: %s\n", message.c_str());
  return 1;
}

// CSV of several tables to -o: a directory with one DIR/<table>.csv each, so
// that every file is one table a CSV reader (pandas.read_csv) takes as is.
bool CsvDirectory(const ReportArgs& args, analysis::OutputFormat format, size_t explicit_tables) {
  return format == analysis::OutputFormat::kCsv && !args.output.empty() && args.output != "-" &&
         explicit_tables != 1;
}

int WriteCsvDirectory(const std::vector<Table>& tables, const std::string& dir,
                      const analysis::RenderOptions& render) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(dir + ": cannot create the directory: " + ec.message());
  std::vector<std::string> written;
  for (const Table& t : tables) {
    std::string name = t.name;
    for (int n = 2; std::find(written.begin(), written.end(), name) != written.end(); ++n) {
      name = t.name + "-" + std::to_string(n);
    }
    written.push_back(name);
    const std::string path = dir + "/" + name + ".csv";
    if (!WriteOutput(analysis::RenderTable(t, analysis::OutputFormat::kCsv, render), path)) {
      return Fail(path + ": cannot write");
    }
  }
  std::fprintf(stderr, "tracer report: wrote %zu table%s to %s/ (one <table>.csv each)\n",
               written.size(), written.size() == 1 ? "" : "s", dir.c_str());
  return 0;
}

int WriteReport(const std::vector<Table>& tables, analysis::OutputFormat format,
                const ReportArgs& args, size_t explicit_tables) {
  analysis::RenderOptions render;  // --timeunit, --columns
  if (!BuildRenderOptions("report", args.view, tables, &render)) return 1;
  if (CsvDirectory(args, format, explicit_tables))
    return WriteCsvDirectory(tables, args.output, render);
  // One table in CSV, to a file or stdout: the plain table (no "# name"
  // line), so `... --format csv | pandas.read_csv` gets the header first.
  // Several tables to one stream keep their "# name" separators: there is no
  // other way to tell them apart, and -o DIR gives one plain file each.
  const bool plain_csv = format == analysis::OutputFormat::kCsv && tables.size() == 1;
  const std::string text = plain_csv ? analysis::RenderTable(tables.front(), format, render)
                                     : analysis::RenderTables(tables, format, render);
  if (!WriteOutput(text, args.output)) return Fail(args.output + ": cannot write");
  return 0;
}

// Reading a stream whole takes about this many times its size in memory
// (ingest_bench --rss: 1757 MiB for a 129 MiB file of 10 M kernels).
constexpr uint64_t kInMemoryFactor = 14;
// An nsys export imported whole: about 1.6 times its size (ingest_bench
// --nsys: 1835 MiB for a 1133 MB export of 10 M kernels).
constexpr uint64_t kNsysInMemoryFactor = 2;
// A Kineto JSON trace imported whole (ingest_bench --kineto: 191 MiB for
// 1 M kernels, 390 MB of JSON gzipped to 18 MB): half its size as text,
// about 11 times its size gzipped.
constexpr uint64_t kKinetoInMemoryFactor = 1;
constexpr uint64_t kKinetoGzInMemoryFactor = 11;

// "2G", "512M", "100k", "1048576" (binary units); false when malformed.
bool ParseByteSize(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str()) return false;
  const std::string unit(end);
  int shift = 0;
  if (unit == "k" || unit == "K")
    shift = 10;
  else if (unit == "m" || unit == "M")
    shift = 20;
  else if (unit == "g" || unit == "G")
    shift = 30;
  else if (!unit.empty())
    return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

std::string HumanBytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.0f MiB", static_cast<double>(b) / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(b));
  }
  return buf;
}

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
uint64_t AvailableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib << 10;
  }
  return 0;
}

// Memory a report may take: TRACER_REPORT_MEMORY (a size such as 8G) when
// set, e.g. in a container whose /proc/meminfo shows the host's memory, else
// MemAvailable; 0 when unknown.
uint64_t ReportMemory() {
  if (const char* env = std::getenv("TRACER_REPORT_MEMORY"); env != nullptr && *env != '\0') {
    uint64_t bytes = 0;
    if (ParseByteSize(env, &bytes)) return bytes;
  }
  return AvailableMemory();
}

bool IsGzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char head[2] = {};
  in.read(reinterpret_cast<char*>(head), 2);
  return in.gcount() == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

// analysis::IsRecordedStream, once per file: it parses the file's first
// chunk (an imported trace's holds thousands of records, a few ms), and
// deciding how to read the inputs asks up to three times per file.
bool IsRecordedStreamFile(const std::string& path) {
  static std::map<std::string, bool> known;
  auto [it, inserted] = known.emplace(path, false);
  if (inserted) it->second = analysis::IsRecordedStream(path);
  return it->second;
}

bool IsStreamFile(const std::string& path) {
  analysis::FrameScanner scanner(path);
  std::string error;
  return scanner.Open(&error);
}

// The inputs' size and about what reading them whole takes; false when one
// is missing or of no format these factors know.
bool EstimateWhole(const std::vector<std::string>& files, uint64_t* bytes, uint64_t* estimate) {
  *bytes = *estimate = 0;
  for (const std::string& f : files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (ec) return false;
    // The nsys check first: it reads 16 bytes, the stream check a frame.
    if (analysis::IsNsysExport(f)) {
      *estimate += size * kNsysInMemoryFactor;
    } else if (IsRecordedStreamFile(f)) {
      *estimate += size * kInMemoryFactor;
    } else if (analysis::IsKinetoTrace(f)) {
      *estimate += size * (IsGzip(f) ? kKinetoGzInMemoryFactor : kKinetoInMemoryFactor);
    } else {
      return false;
    }
    *bytes += size;
  }
  return true;
}

// "" when reading the inputs whole fits the memory a report may take, else
// how much it would take. Past it the reader ends in the OOM killer after
// minutes (256 ranks x 1 M kernels: about 90 GB), so the caller stops first.
std::string WholeReadDoesNotFit(const std::vector<std::string>& files) {
  uint64_t bytes = 0, estimate = 0;
  if (!EstimateWhole(files, &bytes, &estimate)) return "";
  // The factors count the trace read whole; the report's tables built on it
  // take about half as much again (parquet_scale.sh: 1,457 MB for four
  // 19 MB streams of 1 M kernels, 14 x 77 MB = 1,080 MB read).
  estimate += estimate / 2;
  const uint64_t available = ReportMemory();
  if (available == 0 || estimate <= available) return "";
  return "reading the input whole would take about " + HumanBytes(estimate) + " of the " +
         HumanBytes(available) + " available";
}

// The tables of the bounded path: the streamed core tables, and ranks, one
// file read whole at a time (report_ranks.h).
bool IsBoundedTable(const std::string& t) { return t == "ranks" || analysis::IsStreamableTable(t); }

// Streams (recorded by the tracer, all requested tables streamable) of
// `above` bytes or more in all, or too large to read whole in half the
// available memory, are read with bounded memory unless --no-stream.
bool ShouldStream(const std::vector<std::string>& files, const std::vector<std::string>& tables,
                  bool all_tables, uint64_t above, std::string* why) {
  uint64_t bytes = 0, estimate = 0;
  if (!EstimateWhole(files, &bytes, &estimate)) return false;
  for (const std::string& t : tables) {
    if (!all_tables && !IsBoundedTable(t)) return false;
  }
  if (bytes >= above) {
    *why = HumanBytes(bytes) + " of input, --stream-above " + HumanBytes(above);
    return true;
  }
  const uint64_t available = ReportMemory();
  if (available > 0 && estimate > available / 2) {
    *why = "reading it whole would take about " + HumanBytes(estimate) + " of the " +
           HumanBytes(available) + " available";
    return true;
  }
  return false;
}

// Why the bounded-memory path cannot take these inputs and tables at all
// ("" when it can).
std::string BoundedUnavailable(const std::vector<std::string>& files,
                               const std::vector<std::string>& tables) {
  for (const std::string& t : tables) {
    if (!IsBoundedTable(t)) {
      return "table '" + t +
             "' is computed from the whole trace (bounded: summary, ranges, kernels, "
             "range-kernels, gpu, memory, api, ranks)";
    }
  }
  // ranks alone reads any input, one file whole at a time.
  if (!tables.empty() && std::all_of(tables.begin(), tables.end(),
                                     [](const std::string& t) { return t == "ranks"; })) {
    return "";
  }
  for (const std::string& f : files) {
    // nsys exports and Kineto JSON traces have streaming importers.
    if (analysis::IsNsysExport(f) || analysis::IsKinetoTrace(f)) continue;
    // A file that cannot be opened is no import: reading it says why.
    if (std::ifstream probe(f, std::ios::binary); !probe) continue;
    if (!IsStreamFile(f)) return f + " is not a trace the bounded path reads";
    if (!IsRecordedStreamFile(f)) {
      return f + " was written by `tracer import`, not recorded (no launch records)";
    }
  }
  return "";
}

// The bounded-memory path. Returns -1 when its numbers would differ from the
// whole-trace path's (said on stderr): the caller then reads the input whole.
int RunStreamingReport(const ReportArgs& args, const std::vector<std::string>& tables,
                       const analysis::ReportOptions& options,
                       const analysis::AttributionOptions& attribution,
                       const analysis::RangeNameRules& names, analysis::OutputFormat format,
                       size_t explicit_tables) {
  // ranks: one file whole at a time; the other tables streamed.
  const bool ranks = std::find(tables.begin(), tables.end(), "ranks") != tables.end();
  std::vector<std::string> streamed = tables;
  std::erase(streamed, "ranks");
  BoundedRanks ranks_table;
  if (ranks) {
    ranks_table = BoundedRanksTable(args.files, options, attribution, names, args.extra.step_range);
    if (!ranks_table.error.empty()) return Fail(ranks_table.error);
    if (!ranks_table.inexact.empty()) {
      std::fprintf(stderr,
                   "tracer report: bounded-memory reading cannot give the exact ranks table (%s); "
                   "reading the input whole instead\n",
                   ranks_table.inexact.c_str());
      return -1;
    }
    if (streamed.empty()) return WriteReport({ranks_table.table}, format, args, explicit_tables);
  }
  std::vector<analysis::StreamingInput> inputs;
  for (const std::string& f : args.files) inputs.push_back({f, ProgressBar("report", f)});
  analysis::StreamingResult result =
      analysis::StreamingTables(inputs, streamed, options, attribution, &names);
  if (!result.inexact.empty()) {
    const std::string too_big =
        result.metrics_left_out && result.inexact.size() == 1 && !args.no_stream
            ? WholeReadDoesNotFit(args.files)
            : "";
    if (too_big.empty()) {
      std::fprintf(stderr,
                   "tracer report: bounded-memory reading cannot give the exact numbers for %s; "
                   "reading the input whole instead\n",
                   result.inexact.front().c_str());
      return -1;
    }
    // Only the metrics table needs the whole trace, and the whole trace does
    // not fit: the other default tables, exact, rather than none.
    std::fprintf(stderr,
                 "tracer report: the metrics table is left out (%s; %s): --table metrics "
                 "--no-stream computes it\n",
                 result.inexact.front().c_str(), too_big.c_str());
  }
  for (const std::string& e : result.errors) std::fprintf(stderr, "tracer report: %s\n", e.c_str());
  PrintWarnings("report", result.warnings);
  if (result.files_read == 0) return Fail("nothing could be read");
  if (ranks) {
    // In the order --table names them.
    std::vector<Table> out;
    size_t next = 0;
    for (const std::string& t : tables) {
      if (t == "ranks") {
        out.push_back(std::move(ranks_table.table));
      } else if (next < result.tables.size()) {
        out.push_back(std::move(result.tables[next++]));
      }
    }
    return WriteReport(out, format, args, explicit_tables);
  }
  return WriteReport(result.tables, format, args, explicit_tables);
}

// What a whole-trace report builds is never freed: the process ends right
// after the report, and freeing every record, string and table cell one by
// one took about 4 % of a report on a name-heavy export. The pointers kept
// here leave it reachable, so leak checkers do not count it.
template <typename T, typename... Args>
T& KeepUntilExit(Args&&... args) {
  static auto* const kept = new std::vector<const void*>();
  T* object = new T(std::forward<Args>(args)...);
  kept->push_back(object);
  return *object;
}

// --sort KEY.
Status ParseSortKey(const std::string& key, analysis::SortKey* out) {
  if (key == "total") {
    *out = analysis::SortKey::kTotal;
  } else if (key == "count") {
    *out = analysis::SortKey::kCount;
  } else if (key == "avg") {
    *out = analysis::SortKey::kAvg;
  } else if (key == "name") {
    *out = analysis::SortKey::kName;
  } else {
    return Status::Error("--sort: unknown key '" + key + "' (total, count, avg, name)");
  }
  return Status();
}

// What the flags ask for, checked before any input is read.
struct ReportPlan {
  bool html = false;  // a page of tables and charts (html_report.h), not a table renderer
  analysis::OutputFormat format = analysis::OutputFormat::kJson;
  analysis::ReportOptions options;
  analysis::AttributionOptions attribution;
  std::string group_keys;  // --by keys other than rank / process
  std::vector<std::string> tables;
  bool explicit_tables = false;  // --table given
  bool all_tables = false;       // --table all
  bool add_groups = false;       // --groups without --table groups
  size_t explicit_count = 0;     // how many tables --table names (0: the default set)
};

// --format, the row options (--top, --filter, --domain, --rank, --pid, --by,
// --sort) and --main-thread.
Status ParseReportOptions(const ReportArgs& args, ReportPlan* plan) {
  plan->html = args.format == "html";
  if (!plan->html && !analysis::ParseOutputFormat(args.format, &plan->format)) {
    return Status::Error("--format: unknown format '" + args.format +
                         "' (text, csv, md, json, html)");
  }
  analysis::ReportOptions& options = plan->options;
  options.top = args.top;
  options.filter = args.filter;
  options.domain = args.domain;
  options.by_process = args.by_process;
  if (!ParseIntList(args.ranks, &options.processes.ranks)) {
    return Status::Error("--rank: expected rank numbers separated by commas (e.g. 0,3), got '" +
                         args.ranks + "'");
  }
  if (!ParseIntList(args.pids, &options.processes.pids)) {
    return Status::Error("--pid: expected process ids separated by commas, got '" + args.pids +
                         "'");
  }
  // --by rank (or process): one row per process in the core tables; other
  // keys are the groups table's placeholders.
  for (const std::string& key : analysis::reports::SplitComma(args.extra.by)) {
    if (key == "rank" || key == "process") {
      options.by_process = true;
    } else {
      plan->group_keys += (plan->group_keys.empty() ? "" : ",") + key;
    }
  }
  if (Status s = ParseSortKey(args.sort, &options.sort); !s.ok()) return s;
  if (Status s = analysis::RangeFilter::Check(options); !s.ok()) return s;
  if (!analysis::ParseMainThreadOption(args.main_thread, &plan->attribution)) {
    return Status::Error("--main-thread: expected auto, off or an OS thread id, got '" +
                         args.main_thread + "'");
  }
  return Status();
}

// --table (and --groups, which asks for the groups table).
Status ParseTableList(const ReportArgs& args, ReportPlan* plan) {
  std::vector<std::string>& tables = plan->tables;
  plan->explicit_tables = !args.tables.empty();
  for (const std::string& t : analysis::reports::SplitComma(args.tables)) {
    if (t == "all") {
      tables = AllTables();
      plan->all_tables = true;
      break;
    }
    if (std::find(AllTables().begin(), AllTables().end(), t) == AllTables().end() &&
        !analysis::reports::IsExtraTable(t)) {
      return Status::Error("--table: unknown table '" + t +
                           "' (summary, ranges, kernels, range-kernels, gpu, memory, api, groups, "
                           "timeline, phases, categories, gaps, top, ranks, comm, metrics, all)");
    }
    tables.push_back(t);
  }
  // --groups asks for the groups table: it comes after the tables shown
  // anyway (the default ones or --table's) unless --table places it.
  plan->add_groups = !args.extra.groups_file.empty() &&
                     std::find(tables.begin(), tables.end(), "groups") == tables.end();
  if (plan->add_groups) tables.push_back("groups");
  plan->explicit_count = plan->explicit_tables ? (plan->all_tables ? 2 : tables.size()) : 0;
  return Status();
}

// The bounded-memory path when --stream asks for it or the input is large:
// its exit code, or -1 when the input is to be read whole (the bounded path
// cannot take it, or its numbers would differ).
int MaybeRunStreaming(const ReportArgs& args, const ReportPlan& plan,
                      const analysis::RangeNameRules& names) {
  if (args.stream && args.no_stream) return Fail("--stream and --no-stream exclude each other");
  uint64_t stream_above = 0;
  if (!ParseByteSize(args.stream_above, &stream_above)) {
    return Fail("--stream-above: expected a size such as 2G, 512M or 1048576, got '" +
                args.stream_above + "'");
  }
  std::string why;
  if (!args.stream &&
      (args.no_stream || plan.html ||
       !ShouldStream(args.files, plan.tables, plan.all_tables, stream_above, &why))) {
    return -1;
  }
  // Same numbers either way: the bounded path is only a way of computing.
  const std::string unavailable =
      plan.html             ? "--format html draws phases and steps from the whole trace"
      : !args.steps.empty() ? "--steps chooses steps from the whole trace"
      : !args.time.empty()  ? "--time counts from each process's start, found in the whole trace"
                            : BoundedUnavailable(args.files, plan.tables);
  if (!unavailable.empty()) {
    std::fprintf(stderr, "tracer report: --stream: %s; reading the input whole\n",
                 unavailable.c_str());
    return -1;
  }
  if (!args.stream) {
    std::fprintf(stderr,
                 "tracer report: large input (%s): reading it as a stream with bounded "
                 "memory (--no-stream reads it whole; the numbers are the same)\n",
                 why.c_str());
  }
  return RunStreamingReport(args, plan.tables, plan.options, plan.attribution, names, plan.format,
                            plan.explicit_count);
}

// Reading the input whole: an error when it would not fit in memory (unless
// --no-stream insists), saying what reads it in bounded memory.
Status CheckWholeReadFits(const ReportArgs& args, const ReportPlan& plan) {
  if (args.no_stream) return Status();
  const std::string too_big = WholeReadDoesNotFit(args.files);
  if (too_big.empty()) return Status();
  const std::string why_whole =
      plan.html ? "--format html" : BoundedUnavailable(args.files, plan.tables);
  return Status::Error(
      too_big + (why_whole.empty() ? "" : ": " + why_whole) +
      ". Bounded tables without --steps / --time read it in bounded memory (ranks: one "
      "file at a time), and tracer export --format parquet one file at a time, for "
      "DuckDB (docs/parquet.md); --no-stream reads it whole anyway");
}

// Without --table: summary and ranges, and the tables of what the trace
// holds (kernels, memory ops, API calls, PM samples).
std::vector<std::string> DefaultTables(const analysis::Trace& trace, bool add_groups) {
  std::vector<std::string> tables = {"summary", "ranges"};
  bool kernels = false, memory = false, api = false;
  for (const auto& p : trace.processes) {
    kernels |= !p.kernels.empty();
    memory |= !p.memcpys.empty() || !p.memsets.empty();
    api |= !p.api_calls.empty();
  }
  if (kernels) tables.insert(tables.end(), {"kernels", "gpu"});
  if (memory) tables.push_back("memory");
  if (api) tables.push_back("api");
  if (analysis::HasPmSamples(trace)) tables.push_back("metrics");
  if (add_groups) tables.push_back("groups");
  return tables;
}

// The extra tables' options as the flags give them.
analysis::reports::ExtraTableOptions ExtraOptions(const ReportArgs& args, const ReportPlan& plan) {
  analysis::reports::ExtraTableOptions extra = args.extra;
  if (args.top > 0) extra.top = args.top;
  extra.by = plan.group_keys;
  extra.report = plan.options;
  return extra;
}

// Every table asked for, in order, with --filter / --top / --sort applied.
Status BuildTables(const ReportArgs& args, const ReportPlan& plan,
                   const analysis::AnalyzedTrace& analyzed, std::vector<Table>* out) {
  // The core tables' rows are built once for all of them (core_tables.h).
  std::vector<std::string> core_names;
  for (const std::string& t : plan.tables) {
    if (analysis::FindCoreTable(t) != nullptr) core_names.push_back(t);
  }
  std::vector<Table>& core =
      KeepUntilExit<std::vector<Table>>(analysis::CoreTables(analyzed, core_names, plan.options));
  size_t next_core = 0;
  const analysis::reports::ExtraTableOptions extra = ExtraOptions(args, plan);
  for (const std::string& t : plan.tables) {
    if (analysis::FindCoreTable(t) != nullptr) out->push_back(std::move(core[next_core++]));
    if (!analysis::reports::IsExtraTable(t)) continue;
    auto tables = analysis::reports::BuildExtraTables(analyzed, {t}, extra);
    if (!tables.ok()) return tables.status();
    for (auto& x : *tables) {
      // ranks and comm apply --filter/--top/--sort as they build.
      if (t != "ranks" && t != "comm") {
        analysis::reports::RowSelection selection;
        selection.report = plan.options;
        // "top": --top is kernels per range, rows stay ranked per range.
        selection.sort_given = args.sort_given && t != "top";
        selection.trim = t != "top";
        analysis::reports::SelectRows(selection, &x);
      }
      out->push_back(std::move(x));
    }
  }
  return Status();
}

// --format html: the page of the tables and charts.
int WriteHtmlPage(const ReportArgs& args, const ReportPlan& plan,
                  const analysis::AnalyzedTrace& analyzed, std::vector<Table> tables,
                  const std::string& steps_note) {
  analysis::reports::HtmlReportOptions page;
  page.extra = ExtraOptions(args, plan);
  page.flame_step = args.flame_step;
  page.max_rows = args.html_rows == 0 ? SIZE_MAX : args.html_rows;
  std::string inputs = "Input:";
  for (const std::string& f : args.files) inputs += " " + f;
  page.header_lines = {inputs};
  if (!steps_note.empty()) page.header_lines.push_back(steps_note);
  auto text = analysis::reports::HtmlReport(analyzed, std::move(tables), page);
  if (!text.ok()) return Fail("error: " + text.status().message());
  if (!WriteOutput(*text, args.output)) return Fail(args.output + ": cannot write");
  return 0;
}

// A report builds its model once and exits: memory it frees (a vector
// outgrown, an importer's buffers) is best kept for its next allocations.
// glibc's defaults hand blocks of 128 KiB and more back to the kernel (mmap
// and munmap, trimming the heap's top), so each was faulted in again page
// by page: 4-7 % of the page faults of a report of an nsys export.
// Blocks of 32 MiB and more (large traces' arrays) are still mapped apart.
void KeepFreedMemoryForReuse() {
  constexpr int kMapApartBytes = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kMapApartBytes);
  mallopt(M_TRIM_THRESHOLD, 2 * kMapApartBytes);
  // The heap grows 4 MiB at a time: fewer brk calls (address space only;
  // pages are faulted in as they are used).
  mallopt(M_TOP_PAD, 4 << 20);
}

// Backs the heap's next growth with transparent huge pages where the kernel
// grants them on request (THP "madvise" mode; nothing changes where it is
// off or declines). A report touches each page of its model once: its 4 KiB
// page faults were about a fifth of its CPU time on a real nsys export, and
// 2 MiB pages take a sixth as many (h100_2gpu_mfu.sqlite: 1,820 faults ->
// 600, 7 % less CPU; peak RSS 2-4 MiB more). The heap is grown now by
// kHugeHeapBytes of address space (malloc's top pad: pages are still
// touched only as used), and the 2 MiB-aligned part of that asked for huge
// pages.
void BackHeapWithHugePages() {
  constexpr size_t kHuge = size_t{2} << 20;
  constexpr size_t kHugeHeapBytes = size_t{32} << 20;
  mallopt(M_TOP_PAD, static_cast<int>(kHugeHeapBytes));
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  // One block larger than the heap's free top: malloc grows the heap by it
  // plus the pad, in one brk call; freed, it stays as the heap's top.
  // volatile: a compiler may drop a malloc whose block is only freed.
  void* volatile probe = malloc(256 << 10);
  free(probe);
  const auto after = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t from = (before + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t to = after & ~(kHuge - 1);
  if (before != static_cast<uintptr_t>(-1) && to > from) {
    madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
  }
  mallopt(M_TOP_PAD, 4 << 20);
}

// The whole-trace path: read every input, select, build and write the tables.
int RunWholeReport(const ReportArgs& args, ReportPlan plan, const analysis::RangeNameRules& names) {
  if (Status s = CheckWholeReadFits(args, plan); !s.ok()) return Fail(s.message());
  KeepFreedMemoryForReuse();
  BackHeapWithHugePages();
  analysis::Trace& trace = KeepUntilExit<analysis::Trace>();
  // Every table and format reads only what a report shows.
  if (LoadInputs("report", args.files, &trace, analysis::importers::ImportFields::kReported) == 0) {
    return Fail("nothing could be read");
  }
  if (const std::string e = analysis::SelectProcesses(plan.options.processes, &trace); !e.empty()) {
    return Fail(e);
  }
  analysis::NormalizeRangeNames(&trace, names);
  // --steps / --time: cut before any table, so every table sees the selection.
  const auto selected = analysis::reports::SelectRecords(
      {args.steps, args.time, args.extra.step_range}, plan.attribution, &trace);
  if (!selected.ok()) return Fail(selected.status().message());
  const std::string& steps_note = *selected;

  if (!plan.explicit_tables) plan.tables = DefaultTables(trace, plan.add_groups);
  // The page's bars need the groups or the ranges table.
  auto& tables = plan.tables;
  if (plan.html && std::find(tables.begin(), tables.end(), "groups") == tables.end() &&
      std::find(tables.begin(), tables.end(), "ranges") == tables.end()) {
    tables.push_back("ranges");
  }

  const analysis::AnalyzedTrace& analyzed =
      KeepUntilExit<analysis::AnalyzedTrace>(trace, plan.attribution);
  std::vector<Table>& out = KeepUntilExit<std::vector<Table>>();
  if (Status s = BuildTables(args, plan, analyzed, &out); !s.ok()) {
    return Fail("error: " + s.message());
  }
  if (!steps_note.empty()) {
    for (Table& t : out) t.notes.push_back(steps_note);
  }
  if (plan.html) return WriteHtmlPage(args, plan, analyzed, std::move(out), steps_note);
  return WriteReport(out, plan.format, args, plan.explicit_count);
}

int RunReport(ReportArgs args) {
  if (!args.extra.groups_file.empty()) {
    std::string error;
    args.extra.groups_file = ResolveGroupsFile(args.extra.groups_file, &error);
    if (args.extra.groups_file.empty()) return Fail(error);
  }
  ReportPlan plan;
  if (Status s = ParseReportOptions(args, &plan); !s.ok()) return Fail(s.message());
  analysis::RangeNameRules names;
  if (!BuildNameRules("report", args.names, &names)) return 1;
  if (Status s = ParseTableList(args, &plan); !s.ok()) return Fail(s.message());
  // Before reading: an input may take minutes, the refusal none.
  if (!MayWrite("report", args.output, args.force_overwrite)) return 1;
  if (const int rc = MaybeRunStreaming(args, plan, names); rc >= 0) return rc;
  return RunWholeReport(args, std::move(plan), names);
}

const Registrar kReport{Command{
    "report", "Print per-range, per-kernel and GPU tables from trace files", 20,
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<ReportArgs>();
      sub.add_option("files", args->files,
                     "Trace files (.trace streams; several are merged per process)")
          ->required();
      sub.add_option(
          "--table,-t", args->tables,
          "Tables, comma separated: summary,ranges,kernels,range-kernels,gpu,memory,"
          "api or all (the core tables); groups (--groups alone adds it), timeline, phases, "
          "categories, gaps, top, ranks, comm, metrics (default: summary,ranges + GPU tables when "
          "the trace has GPU data, + metrics when it has PM samples)");
      sub.add_option("--format,-f", args->format,
                     "text (default), csv, md, json, or html (a page with charts, see below)");
      sub.add_option("--top", args->top,
                     "Keep the first N rows of every table (0 = all; the top table: N kernels "
                     "per range)");
      CLI::Option* sort_option = sub.add_option(
          "--sort", args->sort,
          "Row order of every table: total (default), count, avg or name. Timeline, phases, "
          "groups, categories and gaps keep their own order unless --sort is given; total is "
          "a table's first time column, count its first count");
      sub.add_option("--filter", args->filter,
                     "Only ranges whose name matches this regular expression (ECMAScript): in "
                     "the range tables, and the rows' range or group name in timeline, groups, "
                     "categories, gaps and top (kernels, kernels by category, memory and api "
                     "are not per range and stay whole)");
      sub.add_option("--domain", args->domain, "Only ranges of this NVTX domain");
      sub.add_option("--main-thread", args->main_thread,
                     "Thread whose open ranges worker-thread launches inherit: auto (default), "
                     "an OS thread id, or off (nsys-identical attribution)");
      sub.add_flag("--by-process", args->by_process,
                   "One row per process instead of aggregating processes by name (also "
                   "--by rank)");
      sub.add_option("--rank", args->ranks,
                     "Only these ranks (comma separated; the rank a run recorded from RANK, "
                     "LOCAL_RANK, ...)");
      sub.add_option("--pid", args->pids, "Only these process ids (comma separated)");
      sub.add_option("--steps", args->steps,
                     "Only these training steps, by the program's own numbers (ProfilerStep#12 is "
                     "step 12; unnumbered steps count from 0, a capture from --capture-start N "
                     "beginning at step N-1): 10-20, 5, 3- (skip steps 0-2), "
                     "or a list; the step range is chosen as for phases (--step-range). Every "
                     "table covers the selection only");
      sub.add_option("--time", args->time,
                     "Only records inside this window, from each process's start: START:END "
                     "with units ns (default), us, ms, s; an end may be left out (1.5s:2.5s, "
                     "200ms:, :3s). Ranges inside it whole, GPU ops by their launch; with "
                     "--steps, what both keep");
      sub.add_flag("--stream", args->stream,
                   "Compute the tables while reading, with memory bounded by distinct names and "
                   "open ranges (default for large inputs, see --stream-above); same numbers as "
                   "reading whole, which it falls back to (saying why) when it cannot");
      sub.add_flag("--no-stream", args->no_stream, "Always read the whole trace into memory");
      sub.add_option("--stream-above", args->stream_above,
                     "Stream (as --stream) recorded inputs of this size or more, e.g. 2G "
                     "(default), 512M; inputs too large to read whole in half the available "
                     "memory are streamed whatever this says");
      sub.add_option("--output,-o", args->output,
                     "Write to this file instead of stdout; with --format csv and several tables "
                     "(all, a list, or the default set) a directory with one <table>.csv each "
                     "(to stdout, several CSV tables are separated by a '# <table>' line and a "
                     "blank line; one table is plain CSV, header first). "
                     "An existing file or directory is refused unless --force-overwrite");
      AddForceOverwrite(sub, &args->force_overwrite);
      sub.add_option("--flame-step", args->flame_step,
                     "html: the step the flame graph shows, by the program's own number "
                     "(default: the step of median CPU time)");
      sub.add_option("--html-rows", args->html_rows,
                     "html: rows shown per table (default 200, 0 = all; the page says how many "
                     "each table has)");
      sub.add_option(
          "--groups", args->extra.groups_file,
          "Groups file, or the name of a shipped one (mlora, peft); adds the groups table "
          "after the default tables (or --table's)");
      sub.add_option("--by", args->extra.by,
                     "groups: placeholders kept apart, comma separated (layer_id, adapter, ...); "
                     "rank (or process): one row per process in every table");
      sub.add_option("--step-range", args->extra.step_range,
                     "timeline/phases: name of the step range (default: the repeated top-level "
                     "range covering the most time)");
      sub.add_option("--iteration", args->extra.iteration,
                     "timeline: the step numbered N (the program's own numbers, as phases and "
                     "--steps count; default: the first recorded step)");
      sub.add_option("--phase-rules", args->extra.phase_rules_file,
                     "phases: rules file '<regex> -> <phase>' (default: data/phases.rules)");
      sub.add_option("--category-rules", args->extra.category_rules_file,
                     "categories: rules '<regex> -> <category>' tried before the built-in ones");
      AddViewOptions(sub, &args->view);
      AddNameOptions(sub, &args->names);
      sub.footer(std::string(kHelpFooter) + std::string(analysis::reports::ExtraTablesHelp()) +
                 std::string(analysis::RangeNamesHelp()));
      return [args, sort_option] {
        args->sort_given = sort_option->count() > 0;
        return RunReport(*args);
      };
    }}};

}  // namespace
}  // namespace tracer::cli
