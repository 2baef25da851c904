// `tracer run [options] -- cmd args...`: sets the environment that makes the
// command load libtracer.so (NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH,
// LD_PRELOAD on request) and the TRACER_* variables the options map onto,
// runs the command, passes its exit status through and says where the
// trace(s) went. Setting those variables by hand works the same.
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libtracer/analysis/read/reader.h"
#include "tools/command.h"

namespace tracer::cli {
namespace {

struct RunArgs {
  std::string output;
  std::string buffer_size;
  std::string flush_interval;
  std::string domains_include;
  std::string domains_exclude;
  std::string capture_range;
  std::string capture_start;
  std::string capture_stop;
  std::string activities;
  std::string log_level;
  std::string fork_mode;
  std::string pm_metrics;
  std::string pm_interval;
  bool preload = false;
  bool no_cuda = false;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child = 0;

// Forward signals someone sent to us; a terminal's Ctrl-C (SI_KERNEL) already
// reached the child through the process group, so it is not sent twice.
void Forward(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && (!info || info->si_code != SI_KERNEL)) kill(g_child, sig);
}

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string path(buf);
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// TRACER_LIBRARY, else next to the executable (build tree: build/tools/tracer
// and build/injection/libtracer.so; install: bin/ and lib/).
std::string FindLibrary(std::string* tried) {
  if (const char* env = getenv("TRACER_LIBRARY")) {
    *tried = env;
    return IsFile(env) ? env : "";
  }
  std::string dir = SelfDir();
  for (const std::string& c :
       {dir + "/../injection/libtracer.so", dir + "/libtracer.so", dir + "/../lib/libtracer.so"}) {
    if (!tried->empty()) *tried += ", ";
    *tried += c;
    char real[PATH_MAX];
    if (IsFile(c) && realpath(c.c_str(), real)) return real;
  }
  return "";
}

void SetIf(const char* var, const std::string& value) {
  if (!value.empty()) setenv(var, value.c_str(), 1);
}

std::string Host() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// Glob patterns for the files the template can produce for this run: %p
// becomes '*' (the command may fork or exec other traced processes), and a
// template without %p also matches the forked children's "name-<pid>.ext".
std::vector<std::string> OutputPatterns(const std::string& tmpl) {
  std::string pat;
  bool has_pid = false;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '%' || i + 1 >= tmpl.size()) {
      pat += tmpl[i];
      continue;
    }
    char p = tmpl[++i];
    if (p == 'p') {
      pat += '*';
      has_pid = true;
    } else if (p == 'h') {
      pat += Host();
    } else if (p == 'r') {
      pat += '*';
    } else if (p == '%') {
      pat += '%';
    } else if (p == 'q') {
      size_t close = tmpl.find('}', i);
      if (close == std::string::npos) break;
      std::string var = tmpl.substr(i + 2, close - i - 2);
      if (const char* v = getenv(var.c_str())) pat += v;
      i = close;
    }
  }
  std::vector<std::string> out = {pat};
  if (!has_pid) {
    size_t slash = pat.rfind('/');
    size_t dot = pat.rfind('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
      out.push_back(pat + "-*");
    } else {
      out.push_back(pat.substr(0, dot) + "-*" + pat.substr(dot));
    }
  }
  return out;
}

void ReportTraces(const std::string& tmpl, const timespec& started) {
  std::set<std::string> files;
  for (const std::string& pattern : OutputPatterns(tmpl)) {
    glob_t g{};
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) != 0) continue;
        bool newer = st.st_mtim.tv_sec > started.tv_sec ||
                     (st.st_mtim.tv_sec == started.tv_sec && st.st_mtim.tv_nsec >= started.tv_nsec);
        if (newer) files.insert(g.gl_pathv[i]);
      }
    }
    globfree(&g);
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "tracer: no trace was written (no NVTX or CUDA call was traced, tracing was "
                 "disabled, or the configuration was rejected: see the lines above)\n");
    return;
  }
  for (const std::string& f : files) {
    // A full disk or a kill leaves a file without footer: say so rather than
    // report success (the tracer logged the write error, if any, above).
    const std::string incomplete = analysis::IncompleteTraceReason(f);
    if (incomplete.empty()) {
      std::fprintf(stderr, "tracer: trace written to %s\n", f.c_str());
    } else {
      std::fprintf(stderr,
                   "tracer: trace %s is incomplete (%s): writing it failed (disk full? see "
                   "above) or the program was killed; `tracer report` reads what it holds\n",
                   f.c_str(), incomplete.c_str());
    }
  }
}

int RunCommand(const RunArgs& args) {
  if (args.command.empty()) {
    std::fprintf(stderr, "tracer run: no command given (tracer run [options] -- cmd args...)\n");
    return 2;
  }
  std::string tried;
  std::string lib = FindLibrary(&tried);
  if (lib.empty()) {
    std::fprintf(stderr,
                 "tracer run: libtracer.so not found (looked at: %s); build target "
                 "tracer_injection or set TRACER_LIBRARY\n",
                 tried.c_str());
    return 2;
  }
  SetIf("TRACER_OUTPUT", args.output);
  SetIf("TRACER_BUFFER_SIZE", args.buffer_size);
  SetIf("TRACER_FLUSH_INTERVAL_MS", args.flush_interval);
  SetIf("TRACER_DOMAINS_INCLUDE", args.domains_include);
  SetIf("TRACER_DOMAINS_EXCLUDE", args.domains_exclude);
  SetIf("TRACER_CAPTURE_RANGE", args.capture_range);
  SetIf("TRACER_CAPTURE_START", args.capture_start);
  SetIf("TRACER_CAPTURE_STOP", args.capture_stop);
  SetIf("TRACER_ACTIVITIES", args.activities);
  SetIf("TRACER_LOG_LEVEL", args.log_level);
  SetIf("TRACER_FORK", args.fork_mode);
  SetIf("TRACER_PM_METRICS", args.pm_metrics);
  SetIf("TRACER_PM_INTERVAL_NS", args.pm_interval);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
  if (args.no_cuda) {
    setenv("TRACER_CUDA", "0", 1);
    unsetenv("CUDA_INJECTION64_PATH");
  } else {
    setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  }
  if (args.preload) {
    std::string preload = lib;
    if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
    setenv("LD_PRELOAD", preload.c_str(), 1);
  }
  const char* out_env = getenv("TRACER_OUTPUT");
  std::string tmpl = out_env && *out_env ? out_env : "tracer-%p.trace";

  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  timespec started{};
  // The coarse clock is the one the kernel stamps file times with.
  clock_gettime(CLOCK_REALTIME_COARSE, &started);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "tracer run: fork failed: %s\n", strerror(errno));
    return 2;
  }
  if (pid == 0) {
    // Marks the traced program; its descendants are children (TRACER_FORK).
    setenv("TRACER_ROOT_PID", std::to_string(getpid()).c_str(), 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "tracer run: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  g_child = pid;
  struct sigaction sa {};
  sa.sa_sigaction = Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  sigaction(SIGQUIT, &sa, nullptr);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "tracer run: waitpid failed: %s\n", strerror(errno));
      return 2;
    }
  }
  ReportTraces(tmpl, started);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

const Registrar kRun{Command{
    "run", "Run a command with tracing on: tracer run [options] -- cmd args...", 10,
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<RunArgs>();
      sub.description(
          "Run a command with tracing on: tracer run [options] -- cmd args...\n\n"
          "Sets NVTX_INJECTION64_PATH and CUDA_INJECTION64_PATH to libtracer.so (found next\n"
          "to this executable, or TRACER_LIBRARY), maps the options below onto TRACER_*\n"
          "variables, runs the command and exits with its exit status (128+N when it dies\n"
          "of signal N). Setting the variables by hand traces the same way. Nothing is\n"
          "written when the program makes no NVTX or CUDA call.\n\n"
          "Examples:\n"
          "  tracer run -- ./build/samples/lora_step\n"
          "  tracer run -o run.trace -- python train.py --epochs 1\n"
          "  tracer run -o 'rank%r-%h-%p.trace' -- torchrun --nproc-per-node 8 train.py\n"
          "  tracer run --capture-range step --capture-start 10 --capture-stop 12 -- python "
          "train.py\n"
          "  tracer run --domains-exclude NCCL --preload -- ./app\n"
          "then: tracer report run.trace");
      sub.add_option("-o,--output", args->output,
                     "output path template (TRACER_OUTPUT): %p pid, %h host, %r rank (RANK, "
                     "then LOCAL_RANK), %q{VAR} environment variable, %% a percent sign. "
                     "Default: tracer-%p.trace in the current directory. A forked child "
                     "writes its own file (NAME-<pid>.EXT when the template has no %p)");
      sub.add_option("--buffer-size", args->buffer_size,
                     "per-thread event buffer, e.g. 512K, 4M (TRACER_BUFFER_SIZE, default 1M); "
                     "when full, events are dropped and counted, never blocking the program");
      sub.add_option("--flush-interval", args->flush_interval,
                     "ms between writer drains (TRACER_FLUSH_INTERVAL_MS, default 200)");
      sub.add_option("--domains-include", args->domains_include,
                     "comma list of NVTX domains to record; the default domain is named "
                     "\"default\" (TRACER_DOMAINS_INCLUDE; default: all)");
      sub.add_option("--domains-exclude", args->domains_exclude,
                     "comma list of NVTX domains to ignore (TRACER_DOMAINS_EXCLUDE)");
      sub.add_option("--capture-range", args->capture_range,
                     "record only inside instances of this NVTX range; GPU work launched "
                     "inside is kept however late it runs, work launched outside is not "
                     "(TRACER_CAPTURE_RANGE)");
      sub.add_option("--capture-start", args->capture_start,
                     "start at the N-th instance of the capture range, 1-based "
                     "(TRACER_CAPTURE_START, default 1)");
      sub.add_option("--capture-stop", args->capture_stop,
                     "stop after the M-th instance ends; 0 = never (TRACER_CAPTURE_STOP, "
                     "default: the start instance)");
      sub.add_option("--activities", args->activities,
                     "CUDA activity kinds: kernel,memcpy,memset,runtime,driver,sync,overhead,"
                     "graph (TRACER_ACTIVITIES, default all but graph)");
      sub.add_option("--pm-metrics", args->pm_metrics,
                     "comma list of PM sampling metrics (TRACER_PM_METRICS)");
      sub.add_option("--pm-interval", args->pm_interval,
                     "PM sampling interval in ns (TRACER_PM_INTERVAL_NS)");
      sub.add_option("--log-level", args->log_level,
                     "error|warn|info|debug|off (TRACER_LOG_LEVEL, default warn)");
      sub.add_option("--fork", args->fork_mode,
                     "child: a forked child writes its own trace; none: it traces nothing "
                     "(TRACER_FORK, default child)");
      sub.add_flag("--preload", args->preload,
                   "also set LD_PRELOAD (for programs that load NVTX/CUDA in unusual ways)");
      sub.add_flag("--no-cuda", args->no_cuda,
                   "NVTX only: do not set CUDA_INJECTION64_PATH (TRACER_CUDA=0)");
      sub.add_option("command", args->command, "the command to run, after --")->expected(-1);
      return [args]() { return RunCommand(*args); };
    }}};

}  // namespace
}  // namespace tracer::cli
