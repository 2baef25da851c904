// CuptiApi over a libcupti loaded at run time with dlopen, so the injected
// library has no link-time dependency on CUPTI and a missing or too old one is
// one clear message instead of a failed load of the whole tracer. Tests point
// TRACER_CUPTI_LIBRARY at the fake libcupti and go through this same code.
#pragma once

#include <memory>
#include <string>

#include "libtracer/cupti_api/cupti_api.h"
#include "libtracer/cupti_api/pm_functions.h"

namespace tracer {

class RealCuptiApi final : public CuptiApi {
 public:
  // Loads libcupti from `path` if not empty, else TRACER_CUPTI_LIBRARY, else
  // the toolkit's /usr/local/cuda/lib64, else the loader's search path.
  // Returns nullptr and sets *error (one line) when no usable library is
  // found: missing file, missing symbol, or a version older than
  // kMinCuptiVersion.
  static std::unique_ptr<RealCuptiApi> Load(const std::string& path, std::string* error);
  ~RealCuptiApi() override;

  // The file that was loaded, for the log line.
  const std::string& library_path() const { return path_; }
  uint32_t version() const { return version_; }

  CUptiResult GetVersion(uint32_t* version) override;
  CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                        void* userdata, const char* name, char* other_subscriber,
                        size_t other_subscriber_size) override;
  CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber) override;
  CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                           CUpti_CallbackDomain domain) override;
  CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) override;
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) override;
  CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc now) override;
  CUptiResult ActivityEnable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityDisable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityFlushAll(uint32_t flag) override;
  CUptiResult ActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                    CUpti_Activity** record) override;
  CUptiResult ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                           size_t* dropped) override;
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                              const char** name) override;
  CUptiResult GetGraphId(CUgraph graph, uint32_t* id) override;
  CUptiResult GetGraphNodeId(CUgraphNode node, uint64_t* id) override;
  CUptiResult GetGraphExecId(CUgraphExec exec, uint32_t* id) override;
  CUptiResult Finalize() override;
  const char* ResultString(CUptiResult result) override;
  CUptiResult GetDeviceId(CUcontext context, uint32_t* device) override;
#define TRACER_PM_DECLARE(method, symbol, Params) CUptiResult method(Params* p) override;
  TRACER_CUPTI_PM_FUNCTIONS(TRACER_PM_DECLARE)
#undef TRACER_PM_DECLARE

  // Resolved entry points; public only so the loader in the .cc can fill them.
  struct Table;

 private:
  RealCuptiApi() = default;

  void* handle_ = nullptr;
  std::string path_;
  uint32_t version_ = 0;
  std::unique_ptr<Table> fn_;
};

}  // namespace tracer
