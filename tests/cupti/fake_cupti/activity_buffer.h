// Activity-buffer layout shared by the fake libcupti and the in-process fake
// CuptiApi: records packed back to back at sizeof(struct) of the 13.0 structs
// (measured with the real libcupti, docs/cupti.md section 3, "M"), and an iterator with
// the real cuptiActivityGetNextRecord's observable behaviour. The conformance
// test checks both against the real libcupti.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fake_cupti {

// Size of the record struct CUPTI 13.0 writes for `kind`; 0 for kinds the
// fakes never write.
inline size_t RecordSize(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return sizeof(CUpti_ActivityGraphTrace2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    default:
      return 0;
  }
}

// cuptiActivityGetNextRecord as measured: *record = NULL starts at the
// front; MAX_LIMIT_REACHED at the end or at a truncated tail record (leaving
// *record at the last one); INVALID_KIND for kind 0 or a kind it does not
// know; INVALID_PARAMETER for a NULL buffer or record pointer.
inline CUptiResult NextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const auto* cur = reinterpret_cast<uint8_t*>(*record);
    if (cur < buffer || cur >= buffer + valid) return CUPTI_ERROR_INVALID_PARAMETER;
    offset = static_cast<size_t>(cur - buffer) + RecordSize((*record)->kind);
  }
  if (offset + sizeof(CUpti_ActivityKind) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  uint32_t kind = 0;
  std::memcpy(&kind, buffer + offset, sizeof(kind));
  const size_t size = RecordSize(kind);
  if (kind == 0 || size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

// Appends records to a client-provided buffer.
class BufferWriter {
 public:
  BufferWriter(uint8_t* buffer, size_t capacity) : buffer_(buffer), capacity_(capacity) {}
  template <typename Record>
  bool Append(const Record& r) {
    return AppendBytes(&r, RecordSize(r.kind));
  }
  bool AppendBytes(const void* r, size_t size) {
    if (size == 0 || used_ + size > capacity_) return false;
    std::memcpy(buffer_ + used_, r, size);
    used_ += size;
    return true;
  }
  bool Fits(size_t size) const { return used_ + size <= capacity_; }
  uint8_t* buffer() const { return buffer_; }
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }

 private:
  uint8_t* buffer_;
  size_t capacity_;
  size_t used_ = 0;
};

}  // namespace fake_cupti
