#include "libtracer/analysis/model/pm_samples.h"

#include <cmath>
#include <map>
#include <utility>

namespace tracer::analysis {

uint32_t DeviceOfStream(const ProcessTrace& p, uint32_t stream) {
  return stream < p.streams.size() && p.streams[stream].defined ? p.streams[stream].device : 0;
}

std::vector<DeviceSpan> DeviceSpansOf(const ProcessTrace& p, const InstanceProjection& projection) {
  std::vector<DeviceSpan> out;  // a handful of devices at most
  for (const StreamSpan& s : projection.streams) {
    const uint32_t device = DeviceOfStream(p, s.stream);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const DeviceSpan& d) { return d.device == device; });
    if (it == out.end()) {
      out.push_back({device, s.start_ns, s.end_ns});
    } else {
      it->start_ns = std::min(it->start_ns, s.start_ns);
      it->end_ns = std::max(it->end_ns, s.end_ns);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const DeviceSpan& a, const DeviceSpan& b) { return a.device < b.device; });
  return out;
}

PmSampleIndex::PmSampleIndex(const ProcessTrace& p) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Sample>> by_key;  // (device, metric)
  for (const PmSampleRecord& r : p.pm_samples) {
    if (r.end_ns <= r.start_ns || !std::isfinite(r.value)) {
      ++skipped_;
      continue;
    }
    by_key[{r.device, r.metric}].push_back({r.start_ns, r.end_ns, r.value});
  }
  for (const auto& [key, samples] : by_key) metrics_.push_back(key.second);
  std::sort(metrics_.begin(), metrics_.end());
  metrics_.erase(std::unique(metrics_.begin(), metrics_.end()), metrics_.end());
  for (auto& [key, samples] : by_key) {
    Series s;
    s.device = key.first;
    s.slot = static_cast<uint32_t>(std::lower_bound(metrics_.begin(), metrics_.end(), key.second) -
                                   metrics_.begin());
    // The capture writes each series in time order; stable_sort keeps that
    // cheap and orders anything else.
    std::stable_sort(samples.begin(), samples.end(),
                     [](const Sample& a, const Sample& b) { return a.start < b.start; });
    for (const Sample& x : samples) s.max_len = std::max(s.max_len, x.end - x.start);
    s.samples = std::move(samples);
    series_.push_back(std::move(s));
  }
}

}  // namespace tracer::analysis
