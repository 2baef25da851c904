// libtracer/core/trace_fields.h is generated from trace.proto's descriptor at
// build time (proto/trace_fields_gen.cc) so that the hand-written encoder
// copies no field number by hand. This checks the generated header against
// the descriptor linked into the reader: every field of every message, and
// protoc's own constants for the fields the encoder and the pre-scan use.
#include "libtracer/core/trace_fields.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/trace.pb.h"

namespace tracer {
namespace {

namespace gp = google::protobuf;

int CountFields(const gp::Descriptor* m) {
  int n = m->field_count();
  for (int i = 0; i < m->nested_type_count(); ++i) n += CountFields(m->nested_type(i));
  return n;
}

TEST(TraceFields, EveryFieldMatchesTheDescriptor) {
  const gp::FileDescriptor* file = proto::Chunk::descriptor()->file();
  const gp::DescriptorPool* pool = file->pool();
  int total = 0;
  for (int i = 0; i < file->message_type_count(); ++i) total += CountFields(file->message_type(i));
  int checked = 0;
  for (const fields::FieldNumber& f : fields::kAllFieldNumbers) {
    const gp::Descriptor* m = pool->FindMessageTypeByName(f.message);
    ASSERT_NE(m, nullptr) << f.message;
    const gp::FieldDescriptor* field = m->FindFieldByName(f.field);
    ASSERT_NE(field, nullptr) << f.message << "." << f.field;
    EXPECT_EQ(static_cast<int>(f.number), field->number()) << f.message << "." << f.field;
    ++checked;
  }
  EXPECT_EQ(checked, total) << "trace_fields.h is out of date with trace.proto";
}

// protoc's kXxxFieldNumber constants are an independent path from the same
// .proto; the names the encoder and record_count_hint.cc use must agree.
static_assert(fields::Chunk::kHeader == proto::Chunk::kHeaderFieldNumber);
static_assert(fields::Chunk::kRanges == proto::Chunk::kRangesFieldNumber);
static_assert(fields::Chunk::kKernels == proto::Chunk::kKernelsFieldNumber);
static_assert(fields::Chunk::kMemcpys == proto::Chunk::kMemcpysFieldNumber);
static_assert(fields::Chunk::kMemsets == proto::Chunk::kMemsetsFieldNumber);
static_assert(fields::Chunk::kApiCalls == proto::Chunk::kApiCallsFieldNumber);
static_assert(fields::Chunk::kLaunches == proto::Chunk::kLaunchesFieldNumber);
static_assert(fields::Chunk::kCounterDeltas == proto::Chunk::kCounterDeltasFieldNumber);
static_assert(fields::Chunk::kFooter == proto::Chunk::kFooterFieldNumber);
static_assert(fields::Range::kPayload == proto::Range::kPayloadFieldNumber);
static_assert(fields::Mark::kPayload == proto::Mark::kPayloadFieldNumber);
static_assert(fields::KernelBatch::kGraph == proto::KernelBatch::kGraphFieldNumber);
static_assert(fields::Header::kSource == proto::Header::kSourceFieldNumber);
static_assert(fields::Payload::kF64 == proto::Payload::kF64FieldNumber);

}  // namespace
}  // namespace tracer
