// What a record producer (the NVTX event decoder, the CUPTI activity decoder,
// the PM sampler) hands its records to. Implemented by the writer thread:
// every call happens on the writer thread, so implementations need no locks.
#pragma once

#include <cstdint>
#include <string_view>

#include "libtracer/core/records.h"

namespace tracer {

class RecordSink {
 public:
  virtual ~RecordSink() = default;

  // Ids for definitions; each is defined in the stream on first use.
  virtual uint32_t InternString(std::string_view text) = 0;
  virtual uint32_t StreamId(uint32_t device, uint32_t context, uint64_t stream) = 0;
  virtual uint32_t LaunchConfigId(const LaunchConfigRecord& config) = 0;  // config.id ignored
  // Our thread id for a CUPTI thread id (pthread_self() value); defines an
  // anonymous thread when the thread never used NVTX.
  virtual uint32_t ThreadIdForPthread(uint64_t pthread_id) = 0;

  virtual void Kernel(const KernelRecord& r) = 0;
  virtual void Memcpy(const MemcpyRecord& r) = 0;
  virtual void Memset(const MemsetRecord& r) = 0;
  virtual void Api(const ApiRecord& r) = 0;
  virtual void Sync(const SyncRecord& r) = 0;
  virtual void Overhead(const OverheadRecord& r) = 0;
  virtual void GraphLaunch(const GraphLaunchRecord& r) = 0;
  virtual void PmSample(const PmSampleRecord& r) = 0;
  // Increments a named counter (dropped records by cause, errors, ...).
  virtual void Count(std::string_view counter, uint64_t delta) = 0;
};

// A producer polled by the writer thread: Drain hands every record that is
// ready to the sink. final = true at shutdown (after a forced flush).
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // May throw: it runs on the writer thread, whose guard handles it.
  virtual void Drain(RecordSink& sink, bool final) = 0;
};

}  // namespace tracer
