#include "libtracer/capture/run_id.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "libtracer/capture/trace_file.h"
#include "libtracer/core/chunk_builder.h"
#include "libtracer/core/frame_crc.h"
#include "libtracer/core/trace_fields.h"

namespace tracer {
namespace {

// The header frame holds the header alone (Writer::Begin); its command line
// makes it long at most. A longer one is taken as unreadable.
constexpr uint32_t kMaxHeaderFrame = 1u << 20;
// A longer TRACER_RUN_ID is not one we set: a new id is made instead.
constexpr size_t kMaxRunIdLength = 256;

bool ReadVarint(std::string_view* s, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && !s->empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(s->front());
    s->remove_prefix(1);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80u) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// One protobuf field: its number, and its bytes when length-delimited.
// Other wire types are skipped. False on malformed input.
bool NextField(std::string_view* s, uint32_t* number, std::string_view* bytes, bool* is_bytes) {
  uint64_t tag = 0;
  if (!ReadVarint(s, &tag)) return false;
  *number = static_cast<uint32_t>(tag >> 3);
  *is_bytes = false;
  uint64_t len = 0;
  switch (tag & 7) {
    case 0:
      return ReadVarint(s, &len);
    case 1:
      len = 8;
      break;
    case 5:
      len = 4;
      break;
    case 2:
      if (!ReadVarint(s, &len)) return false;
      *is_bytes = true;
      break;
    default:
      return false;
  }
  if (len > s->size()) return false;
  *bytes = s->substr(0, len);
  s->remove_prefix(len);
  return true;
}

// The Header message in a Chunk payload; false when there is none.
bool FindHeader(std::string_view chunk, std::string_view* header) {
  uint32_t number;
  std::string_view bytes;
  bool is_bytes;
  while (!chunk.empty()) {
    if (!NextField(&chunk, &number, &bytes, &is_bytes)) return false;
    if (number == fields::Chunk::kHeader && is_bytes) {
      *header = bytes;
      return true;
    }
  }
  return false;
}

bool ReadFully(int fd, char* out, size_t size, off_t offset) {
  while (size > 0) {
    const ssize_t n = pread(fd, out, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

uint32_t LittleEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// The boot id, or "noboot"; written without allocating.
void BootId(char* out, size_t size) {
  snprintf(out, size, "noboot");
  const int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[64] = {};
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  size_t len = n > 0 ? static_cast<size_t>(n) : 0;
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) --len;
  buf[len] = '\0';
  if (len > 0) snprintf(out, size, "%s", buf);
}

// "pid.starttime" of a process, or just "pid" when /proc cannot say: a pid
// and its start tick name one process of a boot.
void ProcessMark(pid_t pid, char* out, size_t size) {
  uint64_t ticks = 0;
  if (ProcessStartTicks(pid, &ticks)) {
    snprintf(out, size, "%d.%llu", static_cast<int>(pid), static_cast<unsigned long long>(ticks));
  } else {
    snprintf(out, size, "%d", static_cast<int>(pid));
  }
}

// The parts of an id NewRunId made.
struct MadeUpId {
  std::string_view boot, self, parent;
};
bool ParseMadeUp(std::string_view id, MadeUpId* out) {
  const size_t a = id.find(':');
  if (a == std::string_view::npos) return false;
  const size_t b = id.find(':', a + 1);
  if (b == std::string_view::npos || id.find(':', b + 1) != std::string_view::npos) return false;
  *out = {id.substr(0, a), id.substr(a + 1, b - a - 1), id.substr(b + 1)};
  return !out->boot.empty() && !out->self.empty() && !out->parent.empty();
}

}  // namespace

bool FormatNewRunId(char* out, size_t size) noexcept {
  char boot[64], self[48], parent[48];
  BootId(boot, sizeof(boot));
  ProcessMark(getpid(), self, sizeof(self));
  ProcessMark(getppid(), parent, sizeof(parent));
  const int n = snprintf(out, size, "%s:%s:%s", boot, self, parent);
  return n > 0 && static_cast<size_t>(n) < size;
}

std::string NewRunId() {
  char id[kRunIdBufferSize];
  return FormatNewRunId(id, sizeof(id)) ? std::string(id) : std::string("noid");
}

const std::string& ThisRunId() {
  static const std::string id = [] {
    const char* v = getenv(kRunIdVariable);
    if (v && *v && strlen(v) <= kMaxRunIdLength) return std::string(v);
    return NewRunId();
  }();
  return id;
}

bool SameRun(std::string_view file_id, std::string_view ours) {
  if (file_id == ours) return true;
  MadeUpId file, self;
  if (!ParseMadeUp(file_id, &file) || !ParseMadeUp(ours, &self) || file.boot != self.boot) {
    return false;
  }
  // This process before an exec, a child it forked or exec'ed before the
  // library was loaded, or the parent that exec'ed it. Not two children of
  // one parent: two runs started one after the other by a shell are those.
  return file.self == self.self || file.parent == self.self || file.self == self.parent;
}

namespace {

TraceRunId ReadRunIdOrThrow(int fd, std::string* id) {
  char head[sizeof(kTraceMagic) + 8];
  if (!ReadFully(fd, head, sizeof(head), 0) ||
      memcmp(head, kTraceMagic, sizeof(kTraceMagic)) != 0) {
    return TraceRunId::kUnreadable;
  }
  const uint32_t length = LittleEndian32(head + sizeof(kTraceMagic));
  const uint32_t crc = LittleEndian32(head + sizeof(kTraceMagic) + 4);
  if (length == 0 || length > kMaxHeaderFrame) return TraceRunId::kUnreadable;
  std::string payload(length, '\0');
  if (!ReadFully(fd, payload.data(), length, sizeof(head)) ||
      FrameCrc32(payload.data(), length) != crc) {
    return TraceRunId::kUnreadable;
  }
  std::string_view header;
  if (!FindHeader(payload, &header)) return TraceRunId::kUnreadable;
  uint32_t number;
  std::string_view bytes;
  bool is_bytes;
  while (!header.empty()) {
    if (!NextField(&header, &number, &bytes, &is_bytes)) return TraceRunId::kUnreadable;
    if (number != fields::Header::kConfig || !is_bytes) continue;
    std::string_view key, value;
    while (!bytes.empty()) {
      std::string_view b;
      uint32_t n;
      bool nb;
      if (!NextField(&bytes, &n, &b, &nb)) return TraceRunId::kUnreadable;
      if (n == fields::KeyValue::kKey && nb) key = b;
      if (n == fields::KeyValue::kValue && nb) value = b;
    }
    if (key == kRunIdVariable) {
      id->assign(value);
      return TraceRunId::kFound;
    }
  }
  return TraceRunId::kAbsent;
}

}  // namespace

TraceRunId ReadTraceRunId(int fd, std::string* id) noexcept {
  // Out of memory (a header frame may take 1 MiB): unreadable, and the
  // caller still closes its descriptor.
  try {
    return ReadRunIdOrThrow(fd, id);
  } catch (...) {
    return TraceRunId::kUnreadable;
  }
}

}  // namespace tracer
