// An in-process CuptiApi for unit tests (the Kineto pattern): it stands for
// libcupti behind the adapter's narrow interface, so a test can hand-build
// CUpti_Activity records, inject an error into any call, and drive the
// adapter's real callbacks and decoder without a .so or a driver.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/cupti_api/cupti_api.h"
#include "tests/cupti/fake_cupti/activity_buffer.h"

namespace tracer::testing {

class InProcessCupti : public CuptiApi {
 public:
  // Makes the named call (e.g. "cuptiActivityEnable") return `result`.
  void FailCall(const std::string& name, CUptiResult result) { errors_[name] = result; }
  std::string other_subscriber;  // reported on MULTIPLE_SUBSCRIBERS
  size_t dropped = 0;            // returned (and reset) by GetNumDroppedRecords

  // What the adapter did.
  std::vector<std::string> calls;
  std::set<int> enabled_kinds;
  std::set<std::pair<int, uint32_t>> enabled_callbacks;
  std::vector<uint32_t> flushes;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;

  CUptiResult GetVersion(uint32_t* v) override {
    *v = 130001;
    return Call("cuptiGetVersion");
  }
  CUptiResult Subscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc cb, void* ud, const char*,
                        char* other, size_t other_size) override {
    CUptiResult r = Call("cuptiSubscribe");
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && other != nullptr) {
      std::snprintf(other, other_size, "%s", other_subscriber.c_str());
    }
    if (r != CUPTI_SUCCESS) return r;
    *s = reinterpret_cast<CUpti_SubscriberHandle>(this);
    callback = cb;
    userdata = ud;
    return r;
  }
  CUptiResult Unsubscribe(CUpti_SubscriberHandle) override { return Call("cuptiUnsubscribe"); }
  CUptiResult EnableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) override {
    return Call("cuptiEnableDomain");
  }
  CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain d,
                             CUpti_CallbackId cbid) override {
    CUptiResult r = Call("cuptiEnableCallback");
    if (r == CUPTI_SUCCESS && enable) enabled_callbacks.insert({static_cast<int>(d), cbid});
    return r;
  }
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                        CUpti_BuffersCallbackCompleteFunc done) override {
    CUptiResult r = Call("cuptiActivityRegisterCallbacks");
    if (r == CUPTI_SUCCESS) {
      requested = req;
      completed = done;
    }
    return r;
  }
  CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) override {
    CUptiResult r = Call("cuptiActivityRegisterTimestampCallback");
    if (r == CUPTI_SUCCESS) timestamp = f;
    return r;
  }
  CUptiResult ActivityEnable(CUpti_ActivityKind k) override {
    CUptiResult r = Call("cuptiActivityEnable");
    if (r == CUPTI_SUCCESS) enabled_kinds.insert(k);
    return r;
  }
  CUptiResult ActivityDisable(CUpti_ActivityKind k) override {
    enabled_kinds.erase(k);
    return Call("cuptiActivityDisable");
  }
  CUptiResult ActivityFlushAll(uint32_t flag) override {
    flushes.push_back(flag);
    return Call("cuptiActivityFlushAll");
  }
  CUptiResult ActivityGetNextRecord(uint8_t* b, size_t valid, CUpti_Activity** rec) override {
    return fake_cupti::NextRecord(b, valid, rec);
  }
  CUptiResult ActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* n) override {
    *n = dropped;
    dropped = 0;
    return Call("cuptiActivityGetNumDroppedRecords");
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char** name) override {
    CUptiResult r = Call("cuptiGetCallbackName");
    if (r != CUPTI_SUCCESS) return r;
    auto it = names_.find({static_cast<int>(d), cbid});
    if (it == names_.end()) {
      it = names_
               .emplace(std::make_pair(static_cast<int>(d), cbid),
                        (d == CUPTI_CB_DOMAIN_DRIVER_API ? "driver_" : "runtime_") +
                            std::to_string(cbid))
               .first;
    }
    *name = it->second.c_str();
    return r;
  }
  CUptiResult GetGraphId(CUgraph g, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(g));
    return Call("cuptiGetGraphId");
  }
  CUptiResult GetGraphNodeId(CUgraphNode n, uint64_t* id) override {
    *id = reinterpret_cast<uintptr_t>(n);
    return Call("cuptiGetGraphNodeId");
  }
  CUptiResult GetGraphExecId(CUgraphExec e, uint32_t* id) override {
    *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(e));
    return Call("cuptiGetGraphExecId");
  }
  CUptiResult Finalize() override { return Call("cuptiFinalize"); }
  const char* ResultString(CUptiResult r) override {
    result_text_ = "CUPTI_RESULT_" + std::to_string(static_cast<int>(r));
    return result_text_.c_str();
  }

  // Plays CUPTI's buffer cycle: asks the adapter for a buffer, lets `fill`
  // write records into it, and hands it back. Returns false when declined.
  template <typename Fill>
  bool DeliverBuffer(Fill fill) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    requested(&buffer, &size, &max_records);
    if (buffer == nullptr) return false;
    fake_cupti::BufferWriter w(buffer, size);
    fill(w);
    completed(nullptr, 0, buffer, size, w.used());
    return true;
  }

 private:
  CUptiResult Call(const std::string& name) {
    calls.push_back(name);
    auto it = errors_.find(name);
    return it == errors_.end() ? CUPTI_SUCCESS : it->second;
  }
  std::map<std::string, CUptiResult> errors_;
  std::map<std::pair<int, uint32_t>, std::string> names_;
  std::string result_text_;
};

}  // namespace tracer::testing
