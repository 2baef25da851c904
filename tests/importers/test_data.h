// Where the real traces of shared/data live (../shared/data next to the
// repository, never copied into it). Tests that need them skip, with the
// path in the message, only when that folder is absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace tracer::analysis::importers::testing {

inline std::string SharedDataPath(const std::string& relative) {
  return std::string(TRACER_SHARED_DATA_DIR) + "/" + relative;
}

inline bool SharedDataPresent() { return std::filesystem::is_directory(TRACER_SHARED_DATA_DIR); }

}  // namespace tracer::analysis::importers::testing

#define SKIP_WITHOUT_SHARED_DATA()                                               \
  do {                                                                           \
    if (!::tracer::analysis::importers::testing::SharedDataPresent()) {          \
      GTEST_SKIP() << "shared data folder " TRACER_SHARED_DATA_DIR " is absent"; \
    }                                                                            \
  } while (0)
