#include "tests/cupti/scenario_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace tracer::testing {

int ScenarioRun::TracerLines(const std::string& containing) const {
  std::istringstream in(stderr_text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("tracer: ", 0) == 0 && line.find(containing) != std::string::npos) ++n;
  }
  return n;
}

namespace {
// Outputs live until the test process ends (golden tests read the trace
// again with `tracer report`), then go.
std::vector<std::string>* g_outputs = nullptr;
void RemoveOutputs() {
  for (const std::string& p : *g_outputs) unlink(p.c_str());
}
}  // namespace

ScenarioRun RunScenario(const std::string& scenario,
                        const std::map<std::string, std::string>& overrides) {
  static int counter = 0;
  if (g_outputs == nullptr) {
    g_outputs = new std::vector<std::string>();
    std::atexit(RemoveOutputs);
  }
  ScenarioRun run;
  const std::string dir = ::testing::TempDir();
  const std::string base =
      dir + "/cupti_e2e_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
  run.trace_path = base + ".trace";
  const std::string stderr_path = base + ".stderr";
  g_outputs->push_back(run.trace_path);
  g_outputs->push_back(stderr_path);

  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    // The test controls every tracer and fake setting.
    if (kv.rfind("TRACER_", 0) == 0 || kv.rfind("FAKE_CUPTI_", 0) == 0 ||
        kv.rfind("CUDA_INJECTION64_PATH", 0) == 0 || kv.rfind("NVTX_INJECTION", 0) == 0) {
      continue;
    }
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  env["CUDA_INJECTION64_PATH"] = TRACER_SO_PATH;
  env["NVTX_INJECTION64_PATH"] = TRACER_SO_PATH;
  env["TRACER_CUPTI_LIBRARY"] = FAKE_CUPTI_PATH;
  env["TRACER_OUTPUT"] = run.trace_path;
  env["TRACER_LOG_LEVEL"] = "warn";
  for (const auto& [k, v] : overrides) env[k] = v;

  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string scenario_path = std::string(SCENARIO_DIR) + "/" + scenario;
  std::string driver = FAKE_DRIVER_PATH;
  // A hung tracer must fail the test, not the suite: timeout(1) bounds it.
  std::string timeout = "/usr/bin/timeout", limit = "60";
  std::vector<char*> argv = {timeout.data(), limit.data(), driver.data(),
                             const_cast<char*>(scenario_path.c_str()), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, timeout.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) {
    run.stderr_text = "spawn failed";
    return run;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err(stderr_path);
  std::stringstream ss;
  ss << err.rdbuf();
  run.stderr_text = ss.str();
  run.trace = ReadTrace(run.trace_path);
  return run;
}

}  // namespace tracer::testing
