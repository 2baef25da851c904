// ImportNsysSqlite(report_only): the import `tracer report` runs leaves out
// only the columns no report reads (NVTX category, color, payload; kernel
// launch configuration). On the real exports of ../shared/data every other
// field of every record, the threads and the names are those of the full
// import; cudf-groupby.sqlite has colored ranges, so the left-out fields are
// seen to differ there.
#include <gtest/gtest.h>

#include <string>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "tests/importers/test_data.h"

namespace tracer::analysis::importers {
namespace {

using testing::SharedDataPath;

void ExpectSameButLeftOut(const std::string& path, bool* colors_seen) {
  Trace full, lean;
  std::string error;
  ASSERT_TRUE(ImportNsysSqlite(path, &full, &error)) << error;
  ASSERT_TRUE(ImportNsysSqlite(path, &lean, &error, ImportFields::kReported)) << error;
  ASSERT_EQ(full.processes.size(), lean.processes.size());
  for (size_t i = 0; i < full.processes.size(); ++i) {
    const ProcessTrace& f = full.processes[i];
    const ProcessTrace& l = lean.processes[i];
    EXPECT_EQ(f.header.pid, l.header.pid);
    EXPECT_EQ(f.threads.size(), l.threads.size());
    EXPECT_EQ(f.streams.size(), l.streams.size());
    EXPECT_EQ(f.domain_names, l.domain_names);
    ASSERT_EQ(f.ranges.size(), l.ranges.size());
    for (size_t r = 0; r < f.ranges.size(); ++r) {
      const RangeRecord& a = f.ranges[r];
      const RangeRecord& b = l.ranges[r];
      EXPECT_EQ(a.id, b.id);
      EXPECT_EQ(a.parent_id, b.parent_id);
      EXPECT_EQ(a.start_ns, b.start_ns);
      EXPECT_EQ(a.end_ns, b.end_ns);
      EXPECT_EQ(a.thread, b.thread);
      EXPECT_EQ(a.end_thread, b.end_thread);
      EXPECT_EQ(full.strings.Get(a.name), lean.strings.Get(b.name));
      EXPECT_EQ(a.domain, b.domain);
      EXPECT_EQ(a.depth, b.depth);
      EXPECT_EQ(a.flags, b.flags);
      EXPECT_EQ(b.color, 0u);
      EXPECT_EQ(b.category, 0u);
      if (a.color != 0) *colors_seen = true;
    }
    ASSERT_EQ(f.marks.size(), l.marks.size());
    ASSERT_EQ(f.kernels.size(), l.kernels.size());
    for (size_t k = 0; k < f.kernels.size(); ++k) {
      EXPECT_EQ(f.kernels[k].start_ns, l.kernels[k].start_ns);
      EXPECT_EQ(f.kernels[k].end_ns, l.kernels[k].end_ns);
      EXPECT_EQ(f.kernels[k].correlation_id, l.kernels[k].correlation_id);
      EXPECT_EQ(f.kernels[k].stream, l.kernels[k].stream);
      EXPECT_EQ(full.strings.Get(f.kernels[k].name), lean.strings.Get(l.kernels[k].name));
      EXPECT_EQ(f.kernels[k].graph_id, l.kernels[k].graph_id);
      EXPECT_EQ(l.kernels[k].launch_config, 0u);
    }
    EXPECT_EQ(f.api_calls.size(), l.api_calls.size());
    EXPECT_EQ(f.memcpys.size(), l.memcpys.size());
    EXPECT_EQ(f.memsets.size(), l.memsets.size());
    EXPECT_EQ(f.counters, l.counters);
  }
}

TEST(NsysReportOnlyTest, SameRecordsWithoutTheUnreportedColumns) {
  SKIP_WITHOUT_SHARED_DATA();
  bool colors = false;
  for (const char* f :
       {"nsys/h100_2gpu_mfu.sqlite", "nsys/cudf-groupby.sqlite", "nsys/workflow.sqlite"}) {
    SCOPED_TRACE(f);
    ExpectSameButLeftOut(SharedDataPath(f), &colors);
  }
  EXPECT_TRUE(colors) << "no colored range: the left-out columns were never seen read";
}

}  // namespace
}  // namespace tracer::analysis::importers
