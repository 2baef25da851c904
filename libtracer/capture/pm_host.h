// The profiler-host half of CUPTI PM sampling for one chip: config images for
// a metric list, the metrics a chip offers, and evaluation of decoded samples
// to metric values. It needs no GPU (docs/cupti.md section 6), so
// `tracer list-metrics` and the sampler's config step run on the real
// libcupti in tests. Every failure is a one-line *error naming what to do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libtracer/cupti_api/cupti_api.h"

namespace tracer {

class PmHost {
 public:
  explicit PmHost(CuptiApi* api) : api_(api) {}
  ~PmHost();
  PmHost(const PmHost&) = delete;
  PmHost& operator=(const PmHost&) = delete;

  // The chips this libcupti can build configurations for.
  static bool SupportedChips(CuptiApi* api, std::vector<std::string>* chips, std::string* error);

  // availability: the device's counter-availability image, or empty (known
  // chips do without it).
  bool Initialize(const std::string& chip, const std::vector<uint8_t>& availability,
                  std::string* error);

  // The config image for `metrics` in one pass. Unknown metrics and sets
  // needing several passes are errors naming the metrics.
  bool BuildConfig(const std::vector<std::string>& metrics, std::vector<uint8_t>* image,
                   std::string* error);

  struct MetricInfo {
    std::string name;
    const char* type = "";  // counter, ratio, throughput
    std::string description;
    std::string unit;
    std::vector<std::string> submetrics;  // suffixes: ".avg.pct_of_peak_sustained_elapsed"
  };
  bool ListMetrics(std::vector<MetricInfo>* out, std::string* error);

  // Evaluates one sample of a decoded counter-data image. values has
  // names.size() entries.
  CUptiResult Evaluate(const uint8_t* image, size_t image_size, size_t sample,
                       const std::vector<const char*>& names, double* values);

  const std::string& chip() const { return chip_; }

 private:
  void Deinitialize();
  // Passes needed by `metrics` alone on this chip (0 when CUPTI refuses).
  size_t PassesFor(const std::vector<const char*>& metrics, CUptiResult* add_result);

  CuptiApi* api_;
  std::string chip_;
  std::vector<uint8_t> availability_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

}  // namespace tracer
