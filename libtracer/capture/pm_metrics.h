// PM sampling metric lists: the named presets users start from, and how a
// TRACER_PM_METRICS value (names and presets, comma separated) becomes the
// list of metric names handed to CUPTI.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tracer {

struct PmPreset {
  const char* name;
  const char* description;
  std::vector<const char*> metrics;
};

// basic, compute, memory. Each compiles to one PM-sampling pass on GA100,
// GA102, GH100, AD102, GB100 and GB202 (tests check it with the real
// profiler-host API). Turing needs two passes for some of them.
const std::vector<PmPreset>& PmPresets();

// The preset called `name`, or null.
const PmPreset* FindPmPreset(std::string_view name);

// Expands presets in place and drops repeats (first occurrence kept).
// Returns false and sets *error ("has 'x', neither ...", naming the entry,
// to follow the variable's value) when an entry is neither a
// preset nor shaped like a metric name (letters, digits, '_', '.', with the
// "__" of unit__counter).
bool ExpandPmMetrics(const std::vector<std::string>& entries, std::vector<std::string>* out,
                     std::string* error);

}  // namespace tracer
