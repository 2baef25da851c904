#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "libtracer/analysis/export/column_batch.h"
#include "libtracer/analysis/export/parquet_rows.h"
#include "libtracer/analysis/read/trace_model.h"
#include "tools/cli_util.h"
#include "tools/parquet_export.h"

namespace tracer::cli {
namespace {

namespace fs = std::filesystem;

// The dataset's table folders and description file (parquet_writer.py): what
// --force-overwrite removes, and nothing else of the folder.
constexpr const char* kTables[] = {"processes", "threads", "names",     "ranges",
                                   "gpu_ops",   "stacks",  "api_calls", "pm_samples"};
constexpr const char* kDescription = "_tracer_dataset.json";

int Fail(const std::string& message) {
  std::fprintf(stderr, "tracer export: %s\n", message.c_str());
  return 1;
}

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// TRACER_PYTHON, else python3 on PATH; "" when neither is there.
std::string FindPython() {
  const char* env = std::getenv("TRACER_PYTHON");
  std::string want = env != nullptr && *env != '\0' ? env : "python3";
  if (want.find('/') != std::string::npos) return Executable(want) ? want : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + want;
    if (Executable(candidate)) return candidate;
    begin = end + 1;
  }
  return "";
}

// The writer script: installed beside the CLI (<prefix>/share/tracer/python),
// else the source tree's; empty = run it as the installed package's module
// (`pip install ./python`).
std::vector<std::string> WriterCommand(const std::string& python) {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "tracer" / "python" /
                         "tracer" / "parquet_writer.py");
  }
#ifdef TRACER_SOURCE_DIR
  candidates.push_back(fs::path(TRACER_SOURCE_DIR) / "python" / "tracer" / "parquet_writer.py");
#endif
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c, ec)) return {python, c.string()};
  }
  return {python, "-m", "tracer.parquet_writer"};
}

// Starts argv with its stdin on a pipe; returns the pipe (nullptr on error).
std::FILE* Spawn(const std::vector<std::string>& argv, pid_t* pid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  *pid = ::fork();
  if (*pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return nullptr;
  }
  if (*pid == 0) {
    ::dup2(fds[0], 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[0]);
  std::FILE* f = ::fdopen(fds[1], "wb");
  if (f != nullptr) std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  return f;
}

int Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// "" when the output folder may be written, else why not.
std::string PrepareOutput(const std::string& dir, bool force) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return "";
  if (!fs::is_directory(st)) return dir + ": exists and is not a folder";
  if (fs::is_empty(dir, ec)) return "";
  if (!force) return dir + ": not empty (--force-overwrite replaces the dataset in it)";
  for (const char* t : kTables) {
    fs::remove_all(fs::path(dir) / t, ec);
    if (ec) return (fs::path(dir) / t).string() + ": " + ec.message();
  }
  fs::remove(fs::path(dir) / kDescription, ec);
  return "";
}

}  // namespace

int RunParquetExport(const ParquetExportArgs& args, const analysis::RangeNameRules& names) {
  std::string output = args.output;
  if (output.empty()) {
    output = fs::path(args.files.front()).filename().string();
    const size_t dot = output.find('.');
    if (dot != std::string::npos && dot > 0) output.resize(dot);
    output += "_parquet";
  }
  if (output == "-") return Fail("--format parquet writes a folder: give -o DIR");
  const std::string python = FindPython();
  if (python.empty()) {
    return Fail(
        "--format parquet needs python3 with pyarrow (set TRACER_PYTHON or put python3 "
        "on PATH)");
  }
  std::vector<std::string> command = WriterCommand(python);
  {
    // pyarrow missing: the writer says so in one line and exits 2.
    std::vector<std::string> check = command;
    check.push_back("--check");
    pid_t pid = 0;
    std::FILE* f = Spawn(check, &pid);
    if (f == nullptr) return Fail("cannot start " + python + ": " + std::strerror(errno));
    std::fclose(f);
    const int rc = Wait(pid);
    if (rc == 127) return Fail("cannot run " + python);
    if (rc != 0) return 1;
  }
  if (const std::string why = PrepareOutput(output, args.force_overwrite); !why.empty()) {
    return Fail(why);
  }
  std::error_code ec;
  const bool created = !fs::exists(output, ec);

  command.push_back(output);
  command.push_back(TRACER_VERSION);
  // A writer that exits early (disk full, a bad folder) must not kill us
  // with SIGPIPE: the write fails and its own message says why.
  ::signal(SIGPIPE, SIG_IGN);
  pid_t pid = 0;
  std::FILE* pipe = Spawn(command, &pid);
  if (pipe == nullptr) return Fail("cannot start " + python + ": " + std::strerror(errno));
  size_t read = 0;
  uint32_t next_process = 0;
  bool ok = true;
  std::string error;
  analysis::exporters::DatasetNames dataset_names;
  for (const std::string& file : args.files) {
    // One input at a time: memory holds one file's trace, whatever the
    // number of ranks.
    analysis::Trace trace;
    if (LoadInputs("export", {file}, &trace) == 0) continue;
    ++read;
    analysis::NormalizeRangeNames(&trace, names);
    if (!analysis::exporters::WriteParquetBatches(trace, next_process, {}, &dataset_names, pipe,
                                                  &error)) {
      ok = false;
      break;
    }
    next_process += static_cast<uint32_t>(trace.processes.size());
  }
  if (ok && read > 0) ok = dataset_names.Write(pipe);
  if (ok) ok = analysis::exporters::WriteEndOfBatches(pipe);
  std::fclose(pipe);
  const int rc = Wait(pid);
  if (rc != 0) return ok ? Fail("the Parquet writer failed (exit " + std::to_string(rc) + ")") : 1;
  if (!ok) return Fail(error);
  if (read == 0) {
    // No dataset: leave no empty one behind.
    if (created) fs::remove_all(output, ec);
    return Fail("nothing could be read");
  }
  std::fprintf(stderr, "tracer export: wrote %s (%u process%s)\n", output.c_str(), next_process,
               next_process == 1 ? "" : "es");
  return read == args.files.size() ? 0 : 1;
}

}  // namespace tracer::cli
