// Many ranks (issue 11, section 2): processes started by a launcher
// (torchrun, srun, mpirun) each write their own file, named by rank when no
// output is given, and the header says rank, world size, local rank, host
// and device. The launcher is stood for by a shell starting the clients with
// the variables each launcher sets; the files are read back by the analysis
// reader (what `tracer report` uses).
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>

#include "libtracer/analysis/read/reader.h"
#include "tests/capture/e2e/e2e_util.h"

namespace tracer::testing {
namespace {

using analysis::Trace;

std::string Host() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// "tracer-rank<R>-<pid>.trace" -> pid, or 0 when the name is not of that shape.
uint32_t PidOfRankFile(const std::string& name, int rank) {
  const std::string prefix = "tracer-rank" + std::to_string(rank) + "-";
  const std::string suffix = ".trace";
  if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return 0;
  }
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<uint32_t>(std::stoul(digits));
}

HeaderInfo ReadHeader(const std::string& path) {
  Trace trace;
  std::string error;
  EXPECT_TRUE(analysis::ReadTraceFile(path, &trace, &error)) << error;
  if (trace.processes.size() != 1) {
    ADD_FAILURE() << path << ": " << trace.processes.size() << " processes";
    return HeaderInfo();
  }
  return trace.processes[0].header;
}

// Two torchrun-style ranks (RANK, WORLD_SIZE, LOCAL_RANK) started together
// in one directory with no output named: two files named by rank, each with
// its own header.
TEST(RanksE2E, TorchrunStyleRanksWriteOneFileEachNamedByRank) {
  TempDir dir;
  const std::string client = NVTX_CLIENT;
  const std::string script = "cd '" + dir.path() + "' && { RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 '" +
                             client + "' exitcode 0 & RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 '" + client +
                             "' exitcode 0 & wait; }";
  RunResult r = RunProgram({"/bin/sh", "-c", script}, {{"CUDA_VISIBLE_DEVICES", "6,7"}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u);
  std::set<std::string> names(files.begin(), files.end());
  for (int rank = 0; rank < 2; ++rank) {
    std::string name;
    for (const auto& f : names) {
      if (PidOfRankFile(f, rank) != 0) name = f;
    }
    ASSERT_FALSE(name.empty()) << "no tracer-rank" << rank << "-<pid>.trace among " << files[0]
                               << ", " << files[1];
    ParsedTrace t = ReadTraceFile(dir.File(name));
    ExpectWellFormed(t);
    EXPECT_EQ(CountByName(t)["before_exit"], 1u);
    const HeaderInfo h = ReadHeader(dir.File(name));
    EXPECT_EQ(h.pid, PidOfRankFile(name, rank));
    EXPECT_EQ(h.rank, rank);
    EXPECT_EQ(h.world_size, 2);
    EXPECT_EQ(h.local_rank, rank);
    EXPECT_EQ(h.device, rank == 0 ? "6" : "7");  // cuda:LOCAL_RANK among the visible
    EXPECT_EQ(h.cuda_visible_devices, "6,7");
    EXPECT_EQ(h.host, Host());
    bool found = false;
    for (const auto& [k, v] : h.config) {
      if (k == "TRACER_OUTPUT") found = v == "tracer-rank%r-%p.trace";
    }
    EXPECT_TRUE(found) << "the effective TRACER_OUTPUT is the by-rank default";
  }
}

// `tracer run` around a launcher: srun-style and mpirun-style ranks (no
// RANK) each write a file named by rank, and `tracer run` lists both.
TEST(RanksE2E, TracerRunAroundALauncherListsEveryRanksFile) {
  TempDir dir;
  const std::string client = NVTX_CLIENT;
  const std::string script =
      "cd '" + dir.path() + "' && exec '" + TRACER_CLI + "' run -- /bin/sh -c \"" +
      "SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 '" + client + "' exitcode 0 & " +
      "OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 '" + client +
      "' exitcode 0 & wait\"";
  RunResult r = RunProgram({"/bin/sh", "-c", script}, {}, LoadPath::kNone);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 2u) << r.err;
  for (const auto& f : files) {
    int rank = PidOfRankFile(f, 0) != 0 ? 0 : PidOfRankFile(f, 1) != 0 ? 1 : -1;
    ASSERT_NE(rank, -1) << f;
    EXPECT_NE(r.err.find("tracer: trace written to " + dir.File(f)), std::string::npos) << r.err;
    const HeaderInfo h = ReadHeader(dir.File(f));
    EXPECT_EQ(h.rank, rank);
    EXPECT_EQ(h.world_size, 2);
    EXPECT_EQ(h.local_rank, 0);
    EXPECT_EQ(h.pid, PidOfRankFile(f, rank));
  }
}

// A name given by the user is kept, ranks or not (%r expands to the rank).
TEST(RanksE2E, AGivenOutputNameIsKept) {
  TempDir dir;
  RunResult r = RunProgram({NVTX_CLIENT, "exitcode", "0"},
                           {{"SLURM_PROCID", "3"}, {"TRACER_OUTPUT", dir.File("mine-r%r.trace")}},
                           LoadPath::kNvtxInjectionEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = dir.List();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], "mine-r3.trace");
  EXPECT_EQ(ReadHeader(dir.File(files[0])).rank, 3);
}

}  // namespace
}  // namespace tracer::testing
