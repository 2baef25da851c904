#include "libtracer/analysis/reports/time_window.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <vector>

namespace tracer::analysis::reports {
namespace {

// "1.5s" -> 1500000000; false when not a number with a known unit, finer
// than 1 ns or too large.
bool ParseTime(const std::string& s, uint64_t* out) {
  size_t digits_end = s.find_first_not_of("0123456789.");
  if (digits_end == std::string::npos) digits_end = s.size();
  const std::string number = s.substr(0, digits_end), unit = s.substr(digits_end);
  uint64_t scale = 0;
  if (unit.empty() || unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1000000;
  } else if (unit == "s") {
    scale = 1000000000;
  } else {
    return false;
  }
  const size_t dot = number.find('.');
  const std::string whole = number.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  if (frac.find('.') != std::string::npos) return false;
  if (dot != std::string::npos && frac.empty()) return false;
  constexpr uint64_t kMax = UINT64_MAX / 10;
  uint64_t w = 0;
  for (char c : whole) {
    if (w > kMax) return false;
    w = w * 10 + static_cast<uint64_t>(c - '0');
  }
  if (w > UINT64_MAX / scale) return false;
  uint64_t value = w * scale;
  // The fraction, exactly: its digits times scale must divide by 10^digits.
  uint64_t f = 0, pow10 = 1;
  for (char c : frac) {
    if (pow10 > kMax || f > kMax) return false;
    f = f * 10 + static_cast<uint64_t>(c - '0');
    pow10 *= 10;
  }
  if (f != 0) {
    if (f > UINT64_MAX / scale) return false;
    const uint64_t scaled = f * scale;
    if (scaled % pow10 != 0) return false;  // finer than 1 ns
    if (value > UINT64_MAX - scaled / pow10) return false;
    value += scaled / pow10;
  }
  *out = value;
  return true;
}

std::string Seconds(uint64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g s", static_cast<double>(ns) / 1e9);
  return buf;
}

// The time a GPU op was launched: its API call's start, else its launch
// record's time; 0 when neither was recorded.
class LaunchTimes {
 public:
  explicit LaunchTimes(const ProcessTrace& p) {
    for (const LaunchRecord& l : p.launches) {
      if (l.correlation_id != 0) by_correlation_.emplace(l.correlation_id, l.time_ns);
    }
    // API calls win over launch records (the same instant, or earlier).
    for (const ApiRecord& a : p.api_calls) {
      if (a.correlation_id != 0) by_correlation_[a.correlation_id] = a.start_ns;
    }
  }
  uint64_t Of(uint64_t correlation, uint64_t op_start) const {
    if (correlation == 0) return op_start;
    auto it = by_correlation_.find(correlation);
    return it == by_correlation_.end() ? op_start : it->second;
  }

 private:
  std::unordered_map<uint64_t, uint64_t> by_correlation_;
};

uint64_t FirstRecordNs(const ProcessTrace& p) {
  uint64_t first = UINT64_MAX;
  for (const RangeRecord& r : p.ranges) first = std::min(first, r.start_ns);
  for (const MarkRecord& m : p.marks) first = std::min(first, m.time_ns);
  for (const KernelRecord& k : p.kernels) first = std::min(first, k.start_ns);
  for (const MemcpyRecord& m : p.memcpys) first = std::min(first, m.start_ns);
  for (const MemsetRecord& m : p.memsets) first = std::min(first, m.start_ns);
  for (const ApiRecord& a : p.api_calls) first = std::min(first, a.start_ns);
  for (const LaunchRecord& l : p.launches) first = std::min(first, l.time_ns);
  return first == UINT64_MAX ? 0 : first;
}

}  // namespace

StatusOr<TimeWindow> ParseTimeWindow(const std::string& spec) {
  const auto bad = [&](const std::string& why) {
    return Status::Error("--time: '" + spec + "' " + why +
                         " (expected START:END from the trace's start, e.g. 1.5s:2.5s, 200ms:, "
                         ":3s, 1000000:2000000 in ns; units ns, us, ms, s)");
  };
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || spec.find(':', colon + 1) != std::string::npos) {
    return bad("needs one ':' between start and end");
  }
  TimeWindow w;
  w.text = spec;
  const std::string a = spec.substr(0, colon), b = spec.substr(colon + 1);
  if (a.empty() && b.empty()) return bad("gives neither a start nor an end");
  if (!a.empty() && !ParseTime(a, &w.start_ns)) return bad("has a bad start '" + a + "'");
  if (!b.empty() && !ParseTime(b, &w.end_ns)) return bad("has a bad end '" + b + "'");
  if (w.start_ns > w.end_ns) return bad("ends before it starts");
  return w;
}

uint64_t ProcessTimeOrigin(const ProcessTrace& p) {
  // nsys times are already offsets from its session start, the timeline's 0.
  if (p.header.source == "nsys-sqlite") return p.header.session_start_trace_ns;
  return FirstRecordNs(p);
}

StatusOr<StepPlan> PlanTimeWindow(const Trace& trace, const TimeWindow& window) {
  StepPlan plan;
  plan.processes.resize(trace.processes.size());
  size_t kept = 0;
  std::string spans;
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    const ProcessTrace& pt = trace.processes[p];
    StepPlan::Keep& k = plan.processes[p];
    const uint64_t origin = ProcessTimeOrigin(pt);
    // Absolute bounds; saturating, so an open end stays open.
    const uint64_t lo = origin + std::min(window.start_ns, UINT64_MAX - origin);
    const uint64_t hi = origin + std::min(window.end_ns, UINT64_MAX - origin);
    auto in = [&](uint64_t t) { return t >= lo && t <= hi; };
    uint64_t last = origin;
    const uint64_t first = FirstRecordNs(pt);
    k.ranges.resize(pt.ranges.size());
    for (size_t i = 0; i < pt.ranges.size(); ++i) {
      const RangeRecord& r = pt.ranges[i];
      k.ranges[i] = in(r.start_ns) && in(std::max(r.end_ns, r.start_ns));
      last = std::max(last, r.end_ns);
    }
    k.marks.resize(pt.marks.size());
    for (size_t i = 0; i < pt.marks.size(); ++i) k.marks[i] = in(pt.marks[i].time_ns);
    const LaunchTimes launch(pt);
    k.kernels.resize(pt.kernels.size());
    for (size_t i = 0; i < pt.kernels.size(); ++i) {
      const KernelRecord& o = pt.kernels[i];
      k.kernels[i] = in(launch.Of(o.correlation_id, o.start_ns));
      last = std::max(last, o.end_ns);
    }
    k.memcpys.resize(pt.memcpys.size());
    for (size_t i = 0; i < pt.memcpys.size(); ++i) {
      const MemcpyRecord& o = pt.memcpys[i];
      k.memcpys[i] = in(launch.Of(o.correlation_id, o.start_ns));
      last = std::max(last, o.end_ns);
    }
    k.memsets.resize(pt.memsets.size());
    for (size_t i = 0; i < pt.memsets.size(); ++i) {
      const MemsetRecord& o = pt.memsets[i];
      k.memsets[i] = in(launch.Of(o.correlation_id, o.start_ns));
      last = std::max(last, o.end_ns);
    }
    k.api_calls.resize(pt.api_calls.size());
    for (size_t i = 0; i < pt.api_calls.size(); ++i) {
      k.api_calls[i] = in(pt.api_calls[i].start_ns);
      last = std::max(last, pt.api_calls[i].end_ns);
    }
    k.launches.resize(pt.launches.size());
    for (size_t i = 0; i < pt.launches.size(); ++i) k.launches[i] = in(pt.launches[i].time_ns);
    for (const auto* v : {&k.ranges, &k.marks, &k.kernels, &k.memcpys, &k.memsets, &k.api_calls}) {
      kept += static_cast<size_t>(std::count(v->begin(), v->end(), true));
    }
    if (spans.size() < 200) {
      spans += (spans.empty() ? "" : ", ") + ProcessLabelOf(pt) + " has records from " +
               Seconds(first - std::min(first, origin)) + " to " +
               Seconds(last - std::min(last, origin));
    }
  }
  if (kept == 0) {
    return Status::Error("--time '" + window.text +
                         "': no range, GPU op or API call in the window (" + spans + ")");
  }
  plan.note = "--time '" + window.text + "'" +
              ": only records inside the window (from each process's start; ranges "
              "whole, GPU ops by their launch) are in every table";
  return plan;
}

}  // namespace tracer::analysis::reports
