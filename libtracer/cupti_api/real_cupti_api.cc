#include "libtracer/cupti_api/real_cupti_api.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "libtracer/cupti_api/pm_functions.h"

namespace tracer {

struct RealCuptiApi::Table {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr;  // optional
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) get_num_dropped = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&cuptiGetGraphId) get_graph_id = nullptr;
  decltype(&cuptiGetGraphNodeId) get_graph_node_id = nullptr;
  decltype(&cuptiGetGraphExecId) get_graph_exec_id = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  // Optional: PM sampling only (NOT_SUPPORTED when this libcupti lacks them).
  decltype(&cuptiGetDeviceId) get_device_id = nullptr;
#define TRACER_PM_SLOT(method, symbol, Params) decltype(&symbol) method = nullptr;
  TRACER_CUPTI_PM_FUNCTIONS(TRACER_PM_SLOT)
#undef TRACER_PM_SLOT
};

namespace {

std::vector<std::string> Candidates(const std::string& path) {
  if (!path.empty()) return {path};
  if (const char* env = std::getenv("TRACER_CUPTI_LIBRARY"); env != nullptr && *env != '\0') {
    return {env};
  }
  return {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so",
          "libcupti.so.13", "libcupti.so"};
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<RealCuptiApi> RealCuptiApi::Load(const std::string& path, std::string* error) {
  std::string tried;
  void* handle = nullptr;
  std::string loaded;
  for (const std::string& candidate : Candidates(path)) {
    // RTLD_LOCAL: libcupti's own symbols must not interpose on the host's.
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      loaded = candidate;
      break;
    }
    const char* why = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += why != nullptr ? why : candidate;
  }
  if (handle == nullptr) {
    *error = "libcupti not found (" + tried + "); set TRACER_CUPTI_LIBRARY";
    return nullptr;
  }

  auto fn = std::make_unique<Table>();
  std::string missing;
  Resolve(handle, "cuptiGetVersion", &fn->get_version, &missing);
  Resolve(handle, "cuptiSubscribe", &fn->subscribe, &missing);
  Resolve(handle, "cuptiUnsubscribe", &fn->unsubscribe, &missing);
  Resolve(handle, "cuptiEnableDomain", &fn->enable_domain, &missing);
  Resolve(handle, "cuptiEnableCallback", &fn->enable_callback, &missing);
  Resolve(handle, "cuptiActivityRegisterCallbacks", &fn->register_callbacks, &missing);
  Resolve(handle, "cuptiActivityRegisterTimestampCallback", &fn->register_timestamp, &missing);
  Resolve(handle, "cuptiActivityEnable", &fn->activity_enable, &missing);
  Resolve(handle, "cuptiActivityDisable", &fn->activity_disable, &missing);
  Resolve(handle, "cuptiActivityFlushAll", &fn->flush_all, &missing);
  Resolve(handle, "cuptiActivityGetNextRecord", &fn->get_next_record, &missing);
  Resolve(handle, "cuptiActivityGetNumDroppedRecords", &fn->get_num_dropped, &missing);
  Resolve(handle, "cuptiGetCallbackName", &fn->get_callback_name, &missing);
  Resolve(handle, "cuptiGetGraphId", &fn->get_graph_id, &missing);
  Resolve(handle, "cuptiGetGraphNodeId", &fn->get_graph_node_id, &missing);
  Resolve(handle, "cuptiGetGraphExecId", &fn->get_graph_exec_id, &missing);
  Resolve(handle, "cuptiFinalize", &fn->finalize, &missing);
  Resolve(handle, "cuptiGetResultString", &fn->get_result_string, &missing);
  std::string optional_missing;
  Resolve(handle, "cuptiSubscribe_v2", &fn->subscribe_v2, &optional_missing);
  Resolve(handle, "cuptiGetDeviceId", &fn->get_device_id, &optional_missing);
#define TRACER_PM_RESOLVE(method, symbol, Params) \
  Resolve(handle, #symbol, &fn->method, &optional_missing);
  TRACER_CUPTI_PM_FUNCTIONS(TRACER_PM_RESOLVE)
#undef TRACER_PM_RESOLVE
  if (!missing.empty()) {
    *error = loaded + " lacks " + missing + " (CUPTI from CUDA 13 or later is required)";
    dlclose(handle);
    return nullptr;
  }
  uint32_t version = 0;
  CUptiResult r = fn->get_version(&version);
  if (r != CUPTI_SUCCESS || version < kMinCuptiVersion) {
    *error = loaded + ": CUPTI API version " + std::to_string(version) +
             " is too old (need >= " + std::to_string(kMinCuptiVersion) + ", CUDA 13)";
    dlclose(handle);
    return nullptr;
  }

  std::unique_ptr<RealCuptiApi> api(new RealCuptiApi());
  api->handle_ = handle;
  api->path_ = loaded;
  api->version_ = version;
  api->fn_ = std::move(fn);
  return api;
}

// The handle is never dlclose'd: CUPTI may still hold our callbacks or run its
// worker thread during process exit, and unloading it under them would crash.
RealCuptiApi::~RealCuptiApi() = default;

CUptiResult RealCuptiApi::GetVersion(uint32_t* version) { return fn_->get_version(version); }

CUptiResult RealCuptiApi::Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata, const char* name, char* other_subscriber,
                                    size_t other_subscriber_size) {
  if (other_subscriber != nullptr && other_subscriber_size > 0) other_subscriber[0] = '\0';
  if (fn_->subscribe_v2 == nullptr) return fn_->subscribe(subscriber, callback, userdata);
  CUpti_SubscriberParams params;
  std::memset(&params, 0, sizeof(params));
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = name;
  params.oldSubscriberName = other_subscriber;
  params.oldSubscriberSize = other_subscriber != nullptr ? other_subscriber_size : 0;
  CUptiResult r = fn_->subscribe_v2(subscriber, callback, userdata, &params);
  if (other_subscriber != nullptr && other_subscriber_size > 0) {
    other_subscriber[other_subscriber_size - 1] = '\0';
  }
  return r;
}

CUptiResult RealCuptiApi::Unsubscribe(CUpti_SubscriberHandle subscriber) {
  return fn_->unsubscribe(subscriber);
}
CUptiResult RealCuptiApi::EnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain) {
  return fn_->enable_domain(enable, subscriber, domain);
}
CUptiResult RealCuptiApi::EnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return fn_->enable_callback(enable, subscriber, domain, cbid);
}
CUptiResult RealCuptiApi::ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  return fn_->register_callbacks(requested, completed);
}
CUptiResult RealCuptiApi::ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc now) {
  return fn_->register_timestamp(now);
}
CUptiResult RealCuptiApi::ActivityEnable(CUpti_ActivityKind kind) {
  return fn_->activity_enable(kind);
}
CUptiResult RealCuptiApi::ActivityDisable(CUpti_ActivityKind kind) {
  return fn_->activity_disable(kind);
}
CUptiResult RealCuptiApi::ActivityFlushAll(uint32_t flag) { return fn_->flush_all(flag); }
CUptiResult RealCuptiApi::ActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                                CUpti_Activity** record) {
  return fn_->get_next_record(buffer, valid_bytes, record);
}
CUptiResult RealCuptiApi::ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                       size_t* dropped) {
  return fn_->get_num_dropped(context, stream_id, dropped);
}
CUptiResult RealCuptiApi::GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char** name) {
  return fn_->get_callback_name(domain, cbid, name);
}
CUptiResult RealCuptiApi::GetGraphId(CUgraph graph, uint32_t* id) {
  return fn_->get_graph_id(graph, id);
}
CUptiResult RealCuptiApi::GetGraphNodeId(CUgraphNode node, uint64_t* id) {
  return fn_->get_graph_node_id(node, id);
}
CUptiResult RealCuptiApi::GetGraphExecId(CUgraphExec exec, uint32_t* id) {
  return fn_->get_graph_exec_id(exec, id);
}
CUptiResult RealCuptiApi::Finalize() { return fn_->finalize(); }

CUptiResult RealCuptiApi::GetDeviceId(CUcontext context, uint32_t* device) {
  if (fn_->get_device_id == nullptr) return CUPTI_ERROR_NOT_SUPPORTED;
  return fn_->get_device_id(context, device);
}
#define TRACER_PM_FORWARD(method, symbol, Params)                 \
  CUptiResult RealCuptiApi::method(Params* p) {                   \
    if (fn_->method == nullptr) return CUPTI_ERROR_NOT_SUPPORTED; \
    return fn_->method(p);                                        \
  }
TRACER_CUPTI_PM_FUNCTIONS(TRACER_PM_FORWARD)
#undef TRACER_PM_FORWARD

const char* RealCuptiApi::ResultString(CUptiResult result) {
  const char* text = nullptr;
  if (fn_->get_result_string(result, &text) == CUPTI_SUCCESS && text != nullptr) return text;
  // Unknown codes: a per-thread buffer keeps the pointer valid for the caller.
  thread_local char buf[32];
  std::snprintf(buf, sizeof(buf), "CUPTI error %d", static_cast<int>(result));
  return buf;
}

}  // namespace tracer
