// Fuzz helper: the importers read paths, so an input is written to a file of
// this process's own (one per target and process, rewritten each run).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tracer::fuzz {

inline std::string WriteInputFile(const char* stem, const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path =
      std::string(dir ? dir : "/tmp") + "/tracer_fuzz_" + stem + "_" + std::to_string(getpid());
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace tracer::fuzz
