#include "libtracer/analysis/importers/kineto_converter.h"

#include <cstdint>

#include "libtracer/analysis/importers/kineto_json_importer.h"

namespace tracer::analysis::importers {
namespace {

using namespace std::literals;

// proto CopyKind from Kineto's memcpy name, "Memcpy DtoD (Device -> Device)".
uint32_t CopyKindFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, uint32_t> kKinds[] = {
      {"HtoD", 1}, {"DtoH", 2}, {"HtoA", 3}, {"AtoH", 4}, {"AtoA", 5},
      {"AtoD", 6}, {"DtoA", 7}, {"DtoD", 8}, {"HtoH", 9}, {"PtoP", 10}};
  if (name.starts_with("Memcpy ")) name.remove_prefix(7);
  for (const auto& [text, kind] : kKinds) {
    if (name.starts_with(text)) return kind;
  }
  return 0;
}

}  // namespace

uint32_t KinetoConverter::GpuStream(const KinetoEvent& e) {
  // GPU events carry args.device/stream; pid/tid repeat them (pid = device,
  // tid = stream) and are the fallback.
  const int64_t device = e.device >= 0 ? e.device : e.pid;
  const int64_t stream = e.stream >= 0 ? e.stream : e.tid;
  return builder_.Stream(static_cast<uint32_t>(device),
                         static_cast<uint32_t>(e.context < 0 ? 0 : e.context),
                         static_cast<uint64_t>(stream));
}

uint32_t KinetoConverter::GpuTrack(uint32_t stream_id) {
  auto [it, inserted] = gpu_tracks_.emplace(stream_id, 0);
  if (inserted) {
    const StreamInfo& s = process_.streams[stream_id];
    ThreadInfo t;
    t.defined = true;
    t.os_tid = 0;  // not an OS thread
    t.name = Name("GPU " + std::to_string(s.device) + " stream " + std::to_string(s.stream));
    it->second = static_cast<uint32_t>(process_.threads.size());
    process_.threads.push_back(t);
  }
  return it->second;
}

void KinetoConverter::AddRange(const KinetoEvent& e, uint32_t thread, uint32_t domain,
                               uint32_t category) {
  RangeRecord r;
  r.kind = RangeKind::kPushPop;
  r.thread = thread;
  r.name = Name(e.name);
  r.domain = domain;
  r.category = category;
  r.start_ns = e.ts_ns;
  r.end_ns = e.ts_ns + e.dur_ns;
  process_.ranges.push_back(r);
}

// PyTorch's memory profiler writes one per allocation or free (c10
// DeviceType in "Device Type": 0 CPU, 1 CUDA; "Device Id" -1 on the CPU).
void KinetoConverter::AddMemorySample(const KinetoEvent& e) {
  if (!e.has_ts || (e.total_allocated < 0 && e.total_reserved < 0)) {
    Skip("import_events_skipped_memory");
    return;
  }
  MemoryUsageSample m;
  m.ts_ns = e.ts_ns;
  const bool cuda = e.device_type == 1 || (e.device_type < 0 && e.device_id >= 0);
  m.device = cuda && e.device_id >= 0 ? e.device_id : -1;
  if (cuda && e.device_id < 0) {
    Skip("import_events_skipped_memory");
    return;
  }
  if (e.device_type > 1) {  // another accelerator: not a CUDA device's memory
    Skip("import_events_skipped_memory_device_type_" + std::to_string(e.device_type));
    return;
  }
  m.allocated = e.total_allocated;
  m.reserved = e.total_reserved;
  process_.memory_usage.push_back(m);
}

void KinetoConverter::Add(const KinetoEvent& e) {
  if (e.ph == 'M') {
    if (e.name == "thread_name"sv && e.has_tid) thread_names_.emplace_back(e.tid, e.arg_name);
    return;
  }
  if (e.ph == 's' || e.ph == 'f' || e.ph == 't') {
    ++flows_;
    return;
  }
  if (e.ph == 'i' && e.name == "[memory]"sv) {
    AddMemorySample(e);
    return;
  }
  if (e.ph != 'X') {
    Skip("import_events_skipped_ph_" + std::string(1, e.ph == 0 ? '?' : e.ph));
    return;
  }
  if (!e.has_ts || !e.has_pid || !e.has_tid) {
    Skip("import_events_skipped_" + (e.cat.empty() ? std::string("no_cat") : e.cat));
    return;
  }
  const std::string& cat = e.cat;
  if (cat == "kernel"sv) {
    KernelRecord k;
    k.name = Name(e.name);
    GpuOpFields(e, &k);
    if (e.has_grid || e.has_block) {
      LaunchConfigRecord lc;
      for (int i = 0; i < 3; ++i) {
        lc.grid[i] = e.grid[i];
        lc.block[i] = e.block[i];
      }
      lc.registers_per_thread = e.registers < 0 ? 0 : static_cast<uint32_t>(e.registers);
      lc.static_shared_memory = e.shared_memory < 0 ? 0 : static_cast<uint32_t>(e.shared_memory);
      k.launch_config = builder_.LaunchConfig(lc);
    }
    process_.kernels.push_back(k);
  } else if (cat == "gpu_memcpy"sv) {
    MemcpyRecord m;
    GpuOpFields(e, &m);
    m.bytes = e.bytes < 0 ? 0 : static_cast<uint64_t>(e.bytes);
    m.copy_kind = CopyKindFromName(e.name);
    process_.memcpys.push_back(m);
  } else if (cat == "gpu_memset"sv) {
    MemsetRecord m;
    GpuOpFields(e, &m);
    m.bytes = e.bytes < 0 ? 0 : static_cast<uint64_t>(e.bytes);
    process_.memsets.push_back(m);
  } else if (cat == "cuda_runtime"sv || cat == "cuda_driver"sv) {
    NoteCpuPid(e.pid);
    ApiRecord a;
    a.start_ns = e.ts_ns;
    a.end_ns = e.ts_ns + e.dur_ns;
    a.domain = cat == "cuda_driver"sv ? ApiDomain::kDriver : ApiDomain::kRuntime;
    a.cbid = e.cbid < 0 ? 0 : static_cast<uint32_t>(e.cbid);
    a.thread = builder_.Thread(static_cast<uint64_t>(e.tid));
    a.correlation_id = e.correlation < 0 ? 0 : static_cast<uint64_t>(e.correlation);
    a.name = Name(e.name);
    process_.api_calls.push_back(a);
  } else if (cat == "cpu_op"sv || cat == "user_annotation"sv) {
    NoteCpuPid(e.pid);
    AddRange(e, builder_.Thread(static_cast<uint64_t>(e.tid)), 0,
             cat == "cpu_op"sv ? kKinetoCategoryCpuOp : kKinetoCategoryUserAnnotation);
  } else if (cat == "gpu_user_annotation"sv) {
    AddRange(e, GpuTrack(GpuStream(e)), kKinetoGpuAnnotationDomain,
             kKinetoCategoryGpuUserAnnotation);
  } else {
    // python_function, Trace spans, ...: nothing the reports use.
    Skip("import_events_skipped_" + (cat.empty() ? std::string("no_cat") : cat));
  }
}

void KinetoConverter::FinishDefinitions(const KinetoTraceInfo& info, const std::string& path) {
  for (const auto& [tid, name] : thread_names_) {
    // Kineto names a thread twice ("thread 1262 (pt_main_thread)" then
    // "... (pt_autograd_0)"); the last one wins.
    builder_.NameThread(static_cast<uint64_t>(tid), Name(name));
  }
  for (const auto& [what, n] : skipped_) process_.counters[what] += n;
  if (flows_ != 0) process_.counters["import_flow_events"] += flows_;

  process_.domain_names[kKinetoGpuAnnotationDomain] = Name("gpu_user_annotation");
  process_.category_names[{0, kKinetoCategoryCpuOp}] = Name("cpu_op");
  process_.category_names[{0, kKinetoCategoryUserAnnotation}] = Name("user_annotation");
  process_.category_names[{kKinetoGpuAnnotationDomain, kKinetoCategoryGpuUserAnnotation}] =
      Name("gpu_user_annotation");

  HeaderInfo& h = process_.header;
  h.source = "kineto-json";
  h.pid = cpu_pid_ < 0 ? 0 : static_cast<uint32_t>(cpu_pid_);
  h.rank = static_cast<int32_t>(info.rank);
  // distributedInfo.world_size; a Kineto trace names no local rank. The
  // device: the CUDA device index every GPU activity ran on (the trace
  // names devices so), when they ran on one.
  if (info.world_size > 0 && info.world_size <= INT32_MAX) {
    h.world_size = static_cast<int32_t>(info.world_size);
  }
  if (info.gpu_device >= 0) h.device = std::to_string(info.gpu_device);
  h.host = info.host_name;
  h.clock_description = "Kineto trace clock (Unix epoch; microseconds in the file, " +
                        std::string("converted to ns exactly)");
  process_.source_file = path;
}

FooterInfo KinetoFooter(uint64_t ranges, uint64_t kernels, uint64_t memcpys, uint64_t memsets,
                        uint64_t api_calls, uint64_t end_ns, const KinetoTraceInfo& info) {
  FooterInfo footer;
  footer.session_end_trace_ns = end_ns;
  footer.records_by_kind = {
      {"ranges", ranges},       {"kernels", kernels},
      {"memcpys", memcpys},     {"memsets", memsets},
      {"api_calls", api_calls}, {"device_properties", info.device_properties}};
  return footer;
}

}  // namespace tracer::analysis::importers
