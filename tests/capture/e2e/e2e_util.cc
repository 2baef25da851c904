#include "tests/capture/e2e/e2e_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <set>

extern char** environ;

namespace tracer::testing {

RunResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, LoadPath load) {
  RunResult result;
  char err_path[] = "/tmp/tracer_e2e_stderr_XXXXXX";
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) return result;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err_fd, 2);
    std::vector<std::string> drop;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      std::string key = kv.substr(0, kv.find('='));
      if (key.rfind("TRACER_", 0) == 0 || key == "NVTX_INJECTION64_PATH" ||
          key == "CUDA_INJECTION64_PATH" || key == "LD_PRELOAD") {
        drop.push_back(key);
      }
    }
    for (const auto& k : drop) unsetenv(k.c_str());
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (load == LoadPath::kNvtxInjectionEnv) setenv("NVTX_INJECTION64_PATH", TRACER_LIB, 1);
    if (load == LoadPath::kPreload) setenv("LD_PRELOAD", TRACER_LIB, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = ReadFileBytes(err_path);
  close(err_fd);
  unlink(err_path);
  return result;
}

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/tracer_e2e_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  path_ = mkdtemp(buf.data()) ? buf.data() : "/tmp";
}

TempDir::~TempDir() {
  for (const auto& f : List()) unlink((path_ + "/" + f).c_str());
  rmdir(path_.c_str());
}

std::vector<std::string> TempDir::List() const {
  std::vector<std::string> out;
  if (DIR* d = opendir(path_.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

void ExpectWellFormed(const ParsedTrace& t, bool expect_footer) {
  EXPECT_TRUE(t.magic_ok);
  EXPECT_EQ(t.stop_reason, "");
  for (const auto& p : t.problems) ADD_FAILURE() << p;
  EXPECT_TRUE(t.has_header);
  if (expect_footer) EXPECT_TRUE(t.has_footer);
  std::map<uint64_t, const proto::Range*> by_id;
  for (const auto& r : t.ranges) {
    EXPECT_NE(r.id(), 0u);
    EXPECT_TRUE(by_id.emplace(r.id(), &r).second) << "duplicate range id " << r.id();
    EXPECT_GE(r.end_ns(), r.start_ns()) << t.Name(r.name());
  }
  for (const auto& r : t.ranges) {
    if (r.kind() != proto::RANGE_PUSH_POP) continue;
    if (r.parent_id() == 0) {
      EXPECT_EQ(r.depth(), 0u) << t.Name(r.name());
      continue;
    }
    auto it = by_id.find(r.parent_id());
    if (it == by_id.end()) {
      ADD_FAILURE() << t.Name(r.name()) << ": parent " << r.parent_id() << " missing";
      continue;
    }
    const proto::Range& parent = *it->second;
    EXPECT_EQ(parent.thread(), r.thread()) << t.Name(r.name());
    EXPECT_EQ(r.depth(), parent.depth() + 1) << t.Name(r.name());
    EXPECT_LE(parent.start_ns(), r.start_ns()) << t.Name(r.name());
    EXPECT_GE(parent.end_ns(), r.end_ns()) << t.Name(r.name());
  }
  if (t.has_footer) {
    EXPECT_EQ(FooterValue(t.footer, "records_by_kind", "ranges"), t.ranges.size());
    EXPECT_EQ(FooterValue(t.footer, "records_by_kind", "marks"), t.marks.size());
  }
}

std::map<std::string, size_t> CountByName(const ParsedTrace& t) {
  std::map<std::string, size_t> out;
  for (const auto& r : t.ranges) ++out[t.Name(r.name())];
  return out;
}

uint64_t FooterValue(const proto::Footer& f, const std::string& section, const std::string& name) {
  const auto& list = section == "records_by_kind"    ? f.records_by_kind()
                     : section == "dropped_by_cause" ? f.dropped_by_cause()
                                                     : f.stats();
  for (const auto& c : list) {
    if (c.name() == name) return c.value();
  }
  return 0;
}

}  // namespace tracer::testing
