// Logging of the injected library: one line per problem to stderr, prefixed
// "tracer: ", level from TRACER_LOG_LEVEL. spdlog stays inside log.cc so no
// other file pays for its headers.
#pragma once

#include <string_view>

#include "libtracer/capture/config.h"

namespace tracer {

void SetLogLevel(LogLevel level) noexcept;
// Whether a message of this level would be printed: lets exit paths skip
// building messages nobody sees (building one allocates).
bool LogEnabled(LogLevel level) noexcept;
// Never throws; falls back to one raw write(2) when the logger cannot run
// (out of memory).
void Log(LogLevel level, std::string_view message) noexcept;
// Logs the first time `key` is seen; later calls with the same key are silent.
void LogOnce(std::string_view key, LogLevel level, std::string_view message) noexcept;

}  // namespace tracer
