// `tracer list-metrics [--chip NAME]`: the metrics CUPTI PM sampling offers
// on a chip, from libcupti's profiler-host API (no GPU needed with --chip).
// Without --chip the chip of a visible GPU is used; without a driver one
// line says so and names the chips to pass.
#include <dlfcn.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "libtracer/capture/pm_host.h"
#include "libtracer/capture/pm_metrics.h"
#include "libtracer/cupti_api/real_cupti_api.h"
#include "tools/command.h"

namespace tracer::cli {
namespace {

struct ListArgs {
  std::string chip;
  int device = 0;
  bool all = false;
};

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// The chip of `device` when a driver and that device are there; else empty
// with *why set. cuptiDeviceGetChipName crashes without a driver, so the
// driver is asked first (dlopen + cuInit + cuDeviceGetCount).
std::string DeviceChip(CuptiApi* api, int device, std::string* why) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    *why = "no GPU driver here (libcuda.so.1 not found)";
    return "";
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0 || n == 0) {
    *why = "no usable GPU (cuInit or cuDeviceGetCount failed, or no device)";
    return "";
  }
  if (device < 0 || device >= n) {
    *why = "no device " + std::to_string(device) + " (" + std::to_string(n) + " visible)";
    return "";
  }
  CUpti_Profiler_Initialize_Params init_params{};
  init_params.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  api->ProfilerInitialize(&init_params);
  CUpti_Device_GetChipName_Params p{};
  p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  p.deviceIndex = static_cast<size_t>(device);
  CUptiResult r = api->DeviceGetChipName(&p);
  if (r != CUPTI_SUCCESS || p.pChipName == nullptr) {
    *why = std::string("cuptiDeviceGetChipName failed: ") + api->ResultString(r);
    return "";
  }
  return p.pChipName;
}

int ListMetrics(const ListArgs& args) {
  std::string error;
  std::unique_ptr<RealCuptiApi> api = RealCuptiApi::Load("", &error);
  if (api == nullptr) {
    std::fprintf(stderr, "tracer list-metrics: %s\n", error.c_str());
    return 2;
  }
  std::vector<std::string> chips;
  if (!PmHost::SupportedChips(api.get(), &chips, &error)) {
    std::fprintf(stderr, "tracer list-metrics: %s (libcupti %s)\n", error.c_str(),
                 api->library_path().c_str());
    return 2;
  }
  std::string chip = args.chip;
  if (chip.empty()) {
    std::string why;
    chip = DeviceChip(api.get(), args.device, &why);
    if (chip.empty()) {
      std::fprintf(stderr, "tracer list-metrics: %s; pass --chip NAME, one of: %s\n", why.c_str(),
                   Join(chips).c_str());
      return 2;
    }
  }
  PmHost host(api.get());
  if (!host.Initialize(chip, {}, &error)) {
    std::fprintf(stderr, "tracer list-metrics: %s\n", error.c_str());
    return 2;
  }
  std::vector<PmHost::MetricInfo> metrics;
  if (!host.ListMetrics(&metrics, &error)) {
    std::fprintf(stderr, "tracer list-metrics: %s\n", error.c_str());
    return 2;
  }
  std::printf("# PM sampling metrics on %s (%zu base metrics; libcupti %s)\n", chip.c_str(),
              metrics.size(), api->library_path().c_str());
  std::printf("# presets for --pm-metrics:\n");
  for (const PmPreset& p : PmPresets()) {
    std::string names;
    for (const char* m : p.metrics) names += (names.empty() ? "" : ",") + std::string(m);
    std::vector<uint8_t> image;
    PmHost probe(api.get());
    std::string why;
    const bool fits = probe.Initialize(chip, {}, &why) &&
                      probe.BuildConfig({p.metrics.begin(), p.metrics.end()}, &image, &why);
    std::printf("#   %-8s %s: %s%s\n", p.name, p.description, names.c_str(),
                fits ? "" : ("  [not on this chip: " + why + "]").c_str());
  }
  std::printf(
      "# A metric to sample is a base metric plus one of its suffixes, e.g.\n"
      "# dram__throughput.avg.pct_of_peak_sustained_elapsed; --all lists every full name.\n"
      "# All metrics sampled together must fit one pass (tracer says which do not).\n");
  for (const PmHost::MetricInfo& m : metrics) {
    if (args.all) {
      for (const std::string& s : m.submetrics) std::printf("%s%s\n", m.name.c_str(), s.c_str());
      continue;
    }
    std::string description = m.description;  // one line per metric
    std::replace(description.begin(), description.end(), '\n', ' ');
    std::printf("%-60s %-10s %-8s %s\n", m.name.c_str(), m.type, m.unit.c_str(),
                description.c_str());
  }
  return 0;
}

const Registrar kListMetrics{Command{
    "list-metrics", "The metrics PM sampling offers on a chip: tracer list-metrics [--chip NAME]",
    15, [](CLI::App& sub) -> std::function<int()> {
      auto args = std::make_shared<ListArgs>();
      sub.description(
          "The metrics CUPTI PM sampling offers on a chip (for tracer run --pm-metrics),\n"
          "from libcupti's profiler-host API: no GPU is needed with --chip. Without --chip,\n"
          "the chip of GPU --device (default 0). Prints the presets first, then one line\n"
          "per base metric: name, type (counter, ratio, throughput), unit, description.\n\n"
          "Examples:\n"
          "  tracer list-metrics --chip GA102\n"
          "  tracer list-metrics --chip GH100 --all | grep dram__");
      sub.add_option("--chip", args->chip, "chip name, e.g. GA102, GH100, AD102, GB202");
      sub.add_option("--device", args->device, "GPU whose chip to use without --chip (default 0)");
      sub.add_flag("--all", args->all, "every full metric name (base metric + suffix), one a line");
      return [args]() { return ListMetrics(*args); };
    }}};

}  // namespace
}  // namespace tracer::cli
