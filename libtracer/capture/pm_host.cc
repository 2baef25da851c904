#include "libtracer/capture/pm_host.h"

#include <cstring>

#include "libtracer/cupti_api/cupti_params.h"

namespace tracer {

namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

PmHost::~PmHost() { Deinitialize(); }

void PmHost::Deinitialize() {
  if (host_ == nullptr) return;
  auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  p.pHostObject = host_;
  api_->ProfilerHostDeinitialize(&p);
  host_ = nullptr;
}

bool PmHost::SupportedChips(CuptiApi* api, std::vector<std::string>* chips, std::string* error) {
  auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetSupportedChips_Params);
  CUptiResult r = api->ProfilerHostGetSupportedChips(&p);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("cuptiProfilerHostGetSupportedChips failed: ") + api->ResultString(r);
    return false;
  }
  chips->clear();
  for (size_t i = 0; i < p.numChips && p.ppChipNames != nullptr; ++i) {
    if (p.ppChipNames[i] != nullptr) chips->emplace_back(p.ppChipNames[i]);
  }
  return true;
}

bool PmHost::Initialize(const std::string& chip, const std::vector<uint8_t>& availability,
                        std::string* error) {
  Deinitialize();
  chip_ = chip;
  availability_ = availability;
  auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  p.pChipName = chip_.c_str();
  p.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  CUptiResult r = api_->ProfilerHostInitialize(&p);
  if (r != CUPTI_SUCCESS && !availability_.empty()) {
    // An availability image this CUPTI cannot read: known chips do without.
    availability_.clear();
    p.pCounterAvailabilityImage = nullptr;
    r = api_->ProfilerHostInitialize(&p);
  }
  if (r != CUPTI_SUCCESS || p.pHostObject == nullptr) {
    std::vector<std::string> chips;
    std::string ignored;
    SupportedChips(api_, &chips, &ignored);
    *error = "chip '" + chip + "' is not supported by this libcupti (" + api_->ResultString(r) +
             ")" + (chips.empty() ? "" : "; supported: " + Join(chips));
    return false;
  }
  host_ = p.pHostObject;
  return true;
}

size_t PmHost::PassesFor(const std::vector<const char*>& metrics, CUptiResult* add_result) {
  PmHost probe(api_);
  std::string ignored;
  if (!probe.Initialize(chip_, availability_, &ignored)) return 0;
  auto add = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = probe.host_;
  add.ppMetricNames = const_cast<const char**>(metrics.data());
  add.numMetrics = metrics.size();
  *add_result = api_->ProfilerHostConfigAddMetrics(&add);
  if (*add_result != CUPTI_SUCCESS) return 0;
  std::vector<uint8_t> image;
  if (!probe.BuildConfig({}, &image, &ignored)) return 0;
  auto passes = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = image.size();
  passes.pConfigImage = image.data();
  if (api_->ProfilerHostGetNumOfPasses(&passes) != CUPTI_SUCCESS) return 0;
  return passes.numOfPasses;
}

bool PmHost::BuildConfig(const std::vector<std::string>& metrics, std::vector<uint8_t>* image,
                         std::string* error) {
  if (host_ == nullptr) {
    *error = "no chip initialised";
    return false;
  }
  if (!metrics.empty()) {
    std::vector<const char*> names;
    for (const std::string& m : metrics) names.push_back(m.c_str());
    auto add = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host_;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    CUptiResult r = api_->ProfilerHostConfigAddMetrics(&add);
    if (r != CUPTI_SUCCESS) {
      // CUPTI says INVALID_PARAMETER for the whole list: find the culprits.
      std::vector<std::string> unknown;
      for (const char* m : names) {
        CUptiResult one = CUPTI_SUCCESS;
        PassesFor({m}, &one);
        if (one != CUPTI_SUCCESS) unknown.emplace_back(m);
      }
      *error =
          unknown.empty()
              ? std::string("cuptiProfilerHostConfigAddMetrics failed: ") + api_->ResultString(r)
              : "unknown metric" + std::string(unknown.size() > 1 ? "s" : "") + " for " + chip_ +
                    ": " + Join(unknown) + " (tracer list-metrics --chip " + chip_ + ")";
      return false;
    }
  }
  auto size = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = host_;
  CUptiResult r = api_->ProfilerHostGetConfigImageSize(&size);
  if (r != CUPTI_SUCCESS || size.configImageSize == 0) {
    *error = std::string("cuptiProfilerHostGetConfigImageSize failed: ") + api_->ResultString(r);
    return false;
  }
  image->assign(size.configImageSize, 0);
  auto get = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  get.pHostObject = host_;
  get.configImageSize = image->size();
  get.pConfigImage = image->data();
  r = api_->ProfilerHostGetConfigImage(&get);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("cuptiProfilerHostGetConfigImage failed: ") + api_->ResultString(r);
    return false;
  }
  if (metrics.empty()) return true;  // PassesFor's probe
  auto passes = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = image->size();
  passes.pConfigImage = image->data();
  r = api_->ProfilerHostGetNumOfPasses(&passes);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("cuptiProfilerHostGetNumOfPasses failed: ") + api_->ResultString(r);
    return false;
  }
  if (passes.numOfPasses > 1) {
    std::vector<std::string> heavy;
    for (const std::string& m : metrics) {
      CUptiResult one = CUPTI_SUCCESS;
      const size_t n = PassesFor({m.c_str()}, &one);
      if (n > 1) heavy.push_back(m + " (" + std::to_string(n) + " passes)");
    }
    *error =
        "the metrics need " + std::to_string(passes.numOfPasses) + " passes on " + chip_ +
        "; PM sampling collects one" +
        (heavy.empty() ? std::string(": sample fewer metrics at once") : ": drop " + Join(heavy));
    return false;
  }
  return true;
}

bool PmHost::ListMetrics(std::vector<MetricInfo>* out, std::string* error) {
  out->clear();
  static const char* kTypes[] = {"counter", "ratio", "throughput"};
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; ++t) {
    auto base = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    base.pHostObject = host_;
    base.metricType = static_cast<CUpti_MetricType>(t);
    CUptiResult r = api_->ProfilerHostGetBaseMetrics(&base);
    if (r != CUPTI_SUCCESS) {
      *error = std::string("cuptiProfilerHostGetBaseMetrics failed: ") + api_->ResultString(r);
      return false;
    }
    for (size_t i = 0; i < base.numMetrics && base.ppMetricNames != nullptr; ++i) {
      MetricInfo info;
      info.name = base.ppMetricNames[i];
      info.type = kTypes[t];
      auto props = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
      props.pHostObject = host_;
      props.pMetricName = base.ppMetricNames[i];
      if (api_->ProfilerHostGetMetricProperties(&props) == CUPTI_SUCCESS) {
        if (props.pDescription != nullptr) info.description = props.pDescription;
        if (props.pHwUnit != nullptr) info.unit = props.pHwUnit;
      }
      auto sub = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_GetSubMetrics_Params);
      sub.pHostObject = host_;
      sub.metricType = base.metricType;
      sub.pMetricName = base.ppMetricNames[i];
      if (api_->ProfilerHostGetSubMetrics(&sub) == CUPTI_SUCCESS) {
        for (size_t j = 0; j < sub.numOfSubmetrics && sub.ppSubMetrics != nullptr; ++j) {
          info.submetrics.emplace_back(sub.ppSubMetrics[j]);
        }
      }
      out->push_back(std::move(info));
    }
  }
  return true;
}

CUptiResult PmHost::Evaluate(const uint8_t* image, size_t image_size, size_t sample,
                             const std::vector<const char*>& names, double* values) {
  auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  p.pHostObject = host_;
  p.pCounterDataImage = image;
  p.counterDataImageSize = image_size;
  p.rangeIndex = sample;
  p.ppMetricNames = const_cast<const char**>(names.data());
  p.numMetrics = names.size();
  p.pMetricValues = values;
  return api_->ProfilerHostEvaluateToGpuValues(&p);
}

}  // namespace tracer
