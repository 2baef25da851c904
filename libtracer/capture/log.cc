#include "libtracer/capture/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

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

}  // namespace

void SetLogLevel(LogLevel level) noexcept {
  try {
    Logger()->set_level(ToSpd(level));
  } catch (...) {
  }
}

void Log(LogLevel level, std::string_view message) noexcept {
  try {
    Logger()->log(ToSpd(level), "{}", message);
  } catch (...) {
  }
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
