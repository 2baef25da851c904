// `tracer run [options] cmd args...` (or `... -- cmd args...`): sets the
// environment that makes the command load libtracer.so (NVTX_INJECTION64_PATH,
// CUDA_INJECTION64_PATH, LD_PRELOAD on request) and the TRACER_* variables the options map onto,
// runs the command, passes its exit status through and says where the
// trace(s) went. Setting those variables by hand works the same.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "libtracer/analysis/read/reader.h"
#include "libtracer/capture/config.h"
#include "libtracer/capture/run_id.h"
#include "tools/command.h"

namespace tracer::cli {
namespace {

struct RunArgs {
  std::string output;
  std::string buffer_size;
  std::string buffer_limit;
  std::string buffer_full;
  std::string flush_interval;
  std::string domains_include;
  std::string domains_exclude;
  std::string capture_range;
  std::string capture_start;
  std::string capture_stop;
  std::string activities;
  std::string log_level;
  std::string fork_mode;
  std::string clock;
  std::string pm_metrics;
  std::string pm_interval;
  std::string pm_buffer_size;
  bool preload = false;
  bool no_cuda = false;
  bool force_overwrite = false;
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

// The files the traced processes wrote, as they listed them in the manifest
// (TRACER_RUN_MANIFEST, one path a line): one line per process, and nothing
// that merely matches the template (a shared directory may hold hundreds of
// tracer-*.trace files, or a link someone else planted).
void ReportTraces(const std::string& manifest) {
  std::vector<std::string> files;
  std::vector<std::string> reasons;  // lines "!why": a process that wrote none
  if (FILE* f = std::fopen(manifest.c_str(), "re")) {
    char* line = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
      std::string path(line, static_cast<size_t>(n));
      if (!path.empty() && path.back() == '\n') path.pop_back();
      if (path.size() > 1 && path[0] == '!') {
        if (std::find(reasons.begin(), reasons.end(), path.substr(1)) == reasons.end()) {
          reasons.push_back(path.substr(1));
        }
        continue;
      }
      if (path.empty() || std::find(files.begin(), files.end(), path) != files.end()) continue;
      if (IsFile(path)) files.push_back(path);
    }
    std::free(line);
    std::fclose(f);
  }
  if (files.empty()) {
    // The reason in this very line: with --log-level off nothing came before.
    std::string why;
    if (!reasons.empty()) {
      why = reasons.front();
      if (reasons.size() > 1) why += " (and " + std::to_string(reasons.size() - 1) + " more)";
    } else if (const char* enable = getenv("TRACER_ENABLE");
               enable && (std::string(enable) == "0" || std::string(enable) == "off" ||
                          std::string(enable) == "false" || std::string(enable) == "no")) {
      why = "TRACER_ENABLE=" + std::string(enable) + " turns tracing off";
    } else {
      why =
          "the program made no NVTX call and no CUDA call reached the tracer, so libtracer.so "
          "never started (is it annotated with NVTX, and does it use the GPU?)";
    }
    std::fprintf(stderr, "tracer: no trace was written: %s\n", why.c_str());
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

// A private, empty manifest file (mkstemp: created exclusively, mode 0600).
std::string CreateManifest() {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/tracer-run-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return std::string();
  close(fd);
  return buf.data();
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Whether the traced program expands `tmpl` as this process does: not when
// it names the program's pid (%p), or a rank (%r) or variable (%q{VAR}) this
// environment lacks (a launcher under us sets RANK per process).
bool ExpandsHereAsThere(const std::string& tmpl) {
  for (size_t i = 0; i + 1 < tmpl.size(); ++i) {
    if (tmpl[i] != '%') continue;
    const char p = tmpl[++i];
    if (p == 'p') return false;
    if (p == 'r' && RankFromEnv(getenv) < 0) return false;
    if (p == 'q' && i + 1 < tmpl.size() && tmpl[i + 1] == '{') {
      const size_t close = tmpl.find('}', i);
      if (close == std::string::npos) return false;
      if (getenv(tmpl.substr(i + 2, close - i - 2).c_str()) == nullptr) return false;
    }
  }
  return true;
}

// Before the program starts: the output a user named is never overwritten
// silently (as nsys profile -o). The library checks again when it opens the
// file (it may appear meanwhile, or the name holds the program's pid).
bool OutputIsFree(const RunArgs& args) {
  // Set by hand: the same as the flag. A bad value is the library's to report.
  bool env_forced = false;
  if (const char* force = getenv("TRACER_FORCE_OVERWRITE")) ParseBool(force, &env_forced);
  const bool forced = args.force_overwrite || env_forced;
  const char* env_output = getenv("TRACER_OUTPUT");
  const std::string tmpl = !args.output.empty() ? args.output
                           : env_output         ? env_output
                                                : std::string();
  if (tmpl.empty() || !ExpandsHereAsThere(tmpl)) return true;
  std::string path, why;
  if (!ExpandOutputTemplate(tmpl, static_cast<uint32_t>(getpid()), HostName(), getenv, &path,
                            &why)) {
    return true;  // the library reports the bad template
  }
  // The library replaces an earlier run's file; it tells one from a file of
  // this run by the run id set below (libtracer/capture/run_id.h).
  if (forced) return true;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return true;
  std::fprintf(stderr,
               "tracer run: %s already exists: not overwritten (remove it, choose another -o, or "
               "add --force-overwrite)\n",
               path.c_str());
  return false;
}

int RunCommand(const RunArgs& args) {
  if (args.command.empty()) {
    std::fprintf(stderr, "tracer run: no command given (tracer run [options] cmd args...)\n");
    return 2;
  }
  if (!OutputIsFree(args)) return 2;
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
  SetIf("TRACER_BUFFER_LIMIT", args.buffer_limit);
  SetIf("TRACER_BUFFER_FULL", args.buffer_full);
  SetIf("TRACER_FLUSH_INTERVAL_MS", args.flush_interval);
  SetIf("TRACER_DOMAINS_INCLUDE", args.domains_include);
  SetIf("TRACER_DOMAINS_EXCLUDE", args.domains_exclude);
  SetIf("TRACER_CAPTURE_RANGE", args.capture_range);
  SetIf("TRACER_CAPTURE_START", args.capture_start);
  SetIf("TRACER_CAPTURE_STOP", args.capture_stop);
  SetIf("TRACER_ACTIVITIES", args.activities);
  SetIf("TRACER_LOG_LEVEL", args.log_level);
  SetIf("TRACER_FORK", args.fork_mode);
  SetIf("TRACER_CLOCK", args.clock);
  SetIf("TRACER_PM_METRICS", args.pm_metrics);
  SetIf("TRACER_PM_INTERVAL_NS", args.pm_interval);
  if (args.force_overwrite) setenv("TRACER_FORCE_OVERWRITE", "1", 1);
  SetIf("TRACER_PM_HW_BUFFER_SIZE", args.pm_buffer_size);
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
  const std::string manifest = CreateManifest();
  if (manifest.empty()) {
    unsetenv("TRACER_RUN_MANIFEST");
  } else {
    setenv("TRACER_RUN_MANIFEST", manifest.c_str(), 1);
  }

  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "tracer run: fork failed: %s\n", strerror(errno));
    if (!manifest.empty()) unlink(manifest.c_str());
    return 2;
  }
  if (pid == 0) {
    // Marks the traced program; its descendants are children (TRACER_FORK).
    setenv("TRACER_ROOT_PID", std::to_string(getpid()).c_str(), 1);
    setenv(kRunIdVariable, NewRunId().c_str(), 1);  // a run of its own, even nested
    execvp(argv[0], argv.data());
    const std::string why = strerror(errno);
    std::fprintf(stderr, "tracer run: cannot run '%s': %s\n", argv[0], why.c_str());
    // The closing line's reason: the program never ran, not "it made no NVTX
    // call".
    if (!manifest.empty()) {
      const std::string line =
          std::string("!the program '") + argv[0] + "' could not be started (" + why + ")\n";
      if (int fd = open(manifest.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); fd >= 0) {
        ssize_t n = write(fd, line.data(), line.size());
        (void)n;
        close(fd);
      }
    }
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
      if (!manifest.empty()) unlink(manifest.c_str());
      return 2;
    }
  }
  if (!manifest.empty()) {
    ReportTraces(manifest);
    unlink(manifest.c_str());
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

const Registrar kRun{Command{
    "run", "Run a command with tracing on: tracer run [options] cmd args...", 10,
    [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<RunArgs>();
      sub.description(
          "Run a command with tracing on: tracer run [options] cmd args...\n\n"
          "As with nsys profile, everything from the first word that is not one of the\n"
          "options below (or an option's value) is the command and its arguments, so the\n"
          "command's own options may share a name with tracer's; \"--\" before the command\n"
          "is accepted too.\n\n"
          "Sets NVTX_INJECTION64_PATH and CUDA_INJECTION64_PATH to libtracer.so (found next\n"
          "to this executable, or TRACER_LIBRARY), maps the options below onto TRACER_*\n"
          "variables, runs the command and exits with its exit status (128+N when it dies\n"
          "of signal N). Setting the variables by hand traces the same way. Nothing is\n"
          "written when the program makes no NVTX or CUDA call. An existing output file is\n"
          "never overwritten unless --force-overwrite: tracer run refuses before starting\n"
          "the program, and a process that finds its file taken meanwhile traces nothing\n"
          "(one line says so; the program runs on).\n\n"
          "Examples:\n"
          "  tracer run ./build/samples/lora_step\n"
          "  tracer run -o run.trace python train.py --epochs 1 -o out/\n"
          "  tracer run torchrun --nproc-per-node 8 train.py   (tracer-rank<R>-<pid>.trace)\n"
          "  tracer run -o 'rank%q{RANK}-%h-%p.trace' torchrun --nproc-per-node 8 train.py\n"
          "  tracer run --capture-range step --capture-start 10 --capture-stop 12 python "
          "train.py\n"
          "  tracer run --force-overwrite -o run.trace -- ./app\n"
          "  tracer run --domains-exclude NCCL --preload ./app\n"
          "  tracer run --pm-metrics basic -- python train.py   (GPU metrics per range)\n"
          "then: tracer report run.trace\n\n"
          "Many ranks: under torchrun, srun or mpirun (or around them) each process writes\n"
          "its own file. Its rank is RANK, else SLURM_PROCID / OMPI_COMM_WORLD_RANK /\n"
          "PMI_RANK, else LOCAL_RANK; with a rank and no -o the file is\n"
          "tracer-rank<R>-<pid>.trace. The header records rank, world size (WORLD_SIZE /\n"
          "SLURM_NTASKS / OMPI_COMM_WORLD_SIZE / PMI_SIZE), local rank (LOCAL_RANK /\n"
          "SLURM_LOCALID / OMPI_COMM_WORLD_LOCAL_RANK), host, CUDA_VISIBLE_DEVICES and the\n"
          "expected device (the local rank's entry among the visible devices).");
      sub.add_option("-o,--output", args->output,
                     "output path template (TRACER_OUTPUT): %p pid, %h host, %r rank (see "
                     "Many ranks above; 0 when unknown), %q{VAR} environment variable, %% a "
                     "percent sign. Default: tracer-%p.trace in the current directory, "
                     "tracer-rank%r-%p.trace when a rank is known. Every process writes "
                     "its own file: a forked or exec'ed child whose name is taken writes "
                     "NAME-<pid>.EXT. The file is created without following symbolic links; a "
                     "link, a non-regular file or another user's file there is refused, and an "
                     "existing file is kept unless --force-overwrite");
      sub.add_flag("--force-overwrite", args->force_overwrite,
                   "replace output files that already exist (TRACER_FORCE_OVERWRITE=1); "
                   "without it tracer run refuses to start when the output exists");
      sub.add_option("--buffer-size", args->buffer_size,
                     "per-thread event buffer, 4K to 1G, e.g. 512K, 4M (TRACER_BUFFER_SIZE, "
                     "default 32M: 1M events, a burst of 500k ranges with no drain at all; the "
                     "writer drains a buffer as soon as it is half full). Memory becomes "
                     "resident only as the thread records and goes back once written out, so "
                     "a thread holding little keeps little. When full, events are dropped and "
                     "counted, never blocking the program, and one line says how many");
      sub.add_option("--buffer-limit", args->buffer_limit,
                     "bound on all threads' event buffers together, 64K to 64G and at most half "
                     "the machine's memory (TRACER_BUFFER_LIMIT, default 512M or half the "
                     "memory when less: 16 threads at the default --buffer-size): threads "
                     "registering past it get 4K buffers (their overflow is dropped and "
                     "counted), so the tracer's buffers never exceed it by more than 4K per "
                     "such thread");
      sub.add_option(
             "--buffer-full", args->buffer_full,
             "what a thread does when its buffer is past three quarters full: yield "
             "(default) gives its core to the writer once per event while the writer "
             "is draining (never an open-ended wait: a writer blocked in a write of the "
             "trace for 100 ms, or one that has drained nothing for 2 s, is not waited for), so "
             "threads recording flat out on busy cores run at the writer's "
             "pace instead of losing events; drop only drops when full "
             "(TRACER_BUFFER_FULL)")
          ->check(CLI::IsMember({"yield", "drop"}));
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
                     "GPU hardware metrics sampled continuously with CUPTI PM sampling "
                     "(experimental: runs only with TRACER_PM_EXPERIMENTAL=1, since on a real "
                     "H100 it crashed the program at exit), as "
                     "PmSample records on the trace's timeline (TRACER_PM_METRICS; default "
                     "off): a comma list of metric names and presets. basic = SM active, "
                     "DRAM throughput, tensor pipe active (% of peak); compute = GR active, SM "
                     "active, IPC, tensor pipe active; memory = DRAM throughput, DRAM and L2 "
                     "bytes/s. `tracer list-metrics --chip NAME` lists a chip's "
                     "metrics; all must fit one pass. Needs compute capability 7.5+ and "
                     "access to the performance counters (driver option "
                     "NVreg_RestrictProfilingToAdminUsers=0, or root); any failure is one "
                     "line and tracing goes on without samples");
      sub.add_option("--pm-interval", args->pm_interval,
                     "PM sampling interval in ns of GPU time, 1000 to 1000000000 "
                     "(TRACER_PM_INTERVAL_NS, default 1000000: 1 ms)");
      sub.add_option("--pm-buffer-size", args->pm_buffer_size,
                     "PM sampling hardware buffer (device memory) per GPU, 1M to 4G, e.g. "
                     "256M (TRACER_PM_HW_BUFFER_SIZE, default 128M); the tracer drains it "
                     "every 10 ms; samples lost to a full buffer are counted as dropped "
                     "(pm_hw_buffer_overflow)");
      sub.add_option("--log-level", args->log_level,
                     "error|warn|info|debug|off (TRACER_LOG_LEVEL, default warn)");
      sub.add_option("--fork", args->fork_mode,
                     "child: a forked child writes its own trace; none: it traces nothing "
                     "(TRACER_FORK, default child)");
      sub.add_option("--clock", args->clock,
                     "auto|tsc|monotonic: what the trace clock reads (TRACER_CLOCK, default "
                     "auto). Timestamps are CLOCK_MONOTONIC ns in every mode; auto reads the "
                     "TSC (cheaper) when the CPU says it is invariant and the kernel keeps "
                     "time with it, calibrated and re-calibrated against CLOCK_MONOTONIC; tsc "
                     "reads it whenever it is invariant; monotonic always calls "
                     "clock_gettime");
      sub.add_flag("--preload", args->preload,
                   "also set LD_PRELOAD (for programs that load NVTX/CUDA in unusual ways)");
      sub.add_flag("--no-cuda", args->no_cuda,
                   "NVTX only: do not set CUDA_INJECTION64_PATH (TRACER_CUDA=0)");
      sub.add_option("command", args->command,
                     "the command to run and its arguments: the first word that is not an option "
                     "above starts it (or everything after --)")
          ->expected(-1);
      return [args]() { return RunCommand(*args); };
    },
    /*program_follows=*/true}};

}  // namespace
}  // namespace tracer::cli
