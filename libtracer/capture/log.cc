#include "libtracer/capture/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>

namespace tracer {
namespace {

spdlog::level::level_enum ToSpd(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// Leaked on purpose: logging must work from atexit handlers and library
// destructors, whatever order static objects die in. Not registered with
// spdlog's global registry, so the host's own spdlog (if any) is untouched.
spdlog::logger* Logger() {
  static spdlog::logger* logger = [] {
    auto* l = new spdlog::logger("tracer", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("tracer: %v");
    l->set_level(spdlog::level::warn);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return logger;
}

// The level, readable without the logger: the fallback below must honour it.
std::atomic<int> g_level{static_cast<int>(spdlog::level::warn)};

// When spdlog cannot log (its first use or a long line allocates, and memory
// may be what just ran out): one writev, no allocation.
void WriteRaw(std::string_view message) noexcept {
  static const char kPrefix[] = "tracer: ";
  iovec parts[3] = {{const_cast<char*>(kPrefix), sizeof(kPrefix) - 1},
                    {const_cast<char*>(message.data()), message.size()},
                    {const_cast<char*>("\n"), 1}};
  ssize_t ignored = writev(STDERR_FILENO, parts, 3);
  (void)ignored;
}

}  // namespace

void SetLogLevel(LogLevel level) noexcept {
  g_level.store(static_cast<int>(ToSpd(level)), std::memory_order_relaxed);
  try {
    Logger()->set_level(ToSpd(level));
  } catch (...) {
  }
}

bool LogEnabled(LogLevel level) noexcept {
  return static_cast<int>(ToSpd(level)) >= g_level.load(std::memory_order_relaxed);
}

void Log(LogLevel level, std::string_view message) noexcept {
  if (!LogEnabled(level)) return;
  try {
    Logger()->log(ToSpd(level), "{}", message);
    return;
  } catch (...) {
  }
  WriteRaw(message);
}

void LogOnce(std::string_view key, LogLevel level, std::string_view message) noexcept {
  try {
    static std::mutex* mu = new std::mutex;
    static std::set<std::string>* seen = new std::set<std::string>;
    {
      std::lock_guard<std::mutex> lock(*mu);
      if (!seen->emplace(key).second) return;
    }
    Log(level, message);
  } catch (...) {
  }
}

}  // namespace tracer
