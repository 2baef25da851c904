#include "libtracer/capture/nvtx_handler.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstring>
#include <string>

#include "libtracer/capture/definitions.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/log.h"
#include "libtracer/capture/misuse_counters.h"
#include "libtracer/capture/nvtx_domain_handle.h"
#include "libtracer/capture/session.h"
#include "libtracer/capture/thread_state.h"
#include "libtracer/core/clock.h"
#include "libtracer/core/string_table.h"

namespace tracer {
namespace {

// Published once, by the first NVTX instance to initialize, before it
// installs a callback; every instance's init (they may run concurrently, one
// per library that bundles NVTX) reads it or races to publish the same
// pointer. Read with acquire on every call: a plain load on x86.
std::atomic<NvtxDomain*> g_default_domain_ptr{nullptr};

inline NvtxDomain* DefaultDomain() noexcept {
  return g_default_domain_ptr.load(std::memory_order_acquire);
}

// The default domain's id (Definitions: always 0) and, published with it,
// its `enabled` (fixed when it is created): the push fast path reads one
// flag instead of following the pointer.
constexpr uint16_t kDefaultDomainId = 0;
std::atomic<bool> g_default_domain_enabled{false};

__attribute__((noinline)) void CountInvalidDomainHandle() noexcept {
  GlobalMisuse().invalid_domain_handle.fetch_add(1, std::memory_order_relaxed);
}

// The domain behind a handle (null: the default domain), or nullptr, counted,
// when the host passes a handle the tracer never handed out or destroyed:
// the caller drops the call. The handle is looked up, never dereferenced.
inline NvtxDomain* DomainOf(nvtxDomainHandle_t d) noexcept {
  if (!d) return DefaultDomain();
  NvtxDomain* dom = DomainFromHandleValue(GlobalDefinitions(), reinterpret_cast<uintptr_t>(d));
  if (__builtin_expect(!dom, 0)) CountInvalidDomainHandle();
  return dom;
}

// wchar_t is UTF-32 on Linux. Converted at call time (W variants are rare).
void AppendUtf8(std::string* out, const wchar_t* w) {
  out->clear();
  if (!w) return;
  for (; *w; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (c >> 18)));
      out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

uint32_t InternWide(ThreadState* ts, const wchar_t* w) {
  thread_local std::string utf8;
  AppendUtf8(&utf8, w);
  return ts ? ts->intern_cache().Lookup(std::string_view(utf8)) : GlobalStrings().Intern(utf8).id;
}

inline __attribute__((always_inline)) uint32_t InternAscii(ThreadState* ts, const char* s) {
  if (!s) return 0;
  return ts ? ts->NameId(s) : GlobalStrings().Intern(s).id;
}

struct Attr {
  uint32_t name = 0;
  uint64_t category_color = 0;
  bool has_payload = false;
  Event payload{};
};

void DecodeAttr(ThreadState* ts, const nvtxEventAttributes_t* a, Attr* out) {
  if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return;
  uint32_t color = a->colorType == NVTX_COLOR_ARGB ? a->color : 0;
  out->category_color = a->category | (static_cast<uint64_t>(color) << 32);
  PayloadValue::Type type = PayloadValue::Type::kNone;
  uint64_t bits = 0;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      type = PayloadValue::Type::kU64;
      bits = a->payload.ullValue;
      break;
    case NVTX_PAYLOAD_TYPE_INT64:
      type = PayloadValue::Type::kI64;
      bits = static_cast<uint64_t>(a->payload.llValue);
      break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
      type = PayloadValue::Type::kF64;
      __builtin_memcpy(&bits, &a->payload.dValue, 8);
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
      type = PayloadValue::Type::kU64;
      bits = a->payload.uiValue;
      break;
    case NVTX_PAYLOAD_TYPE_INT32:
      type = PayloadValue::Type::kI64;
      bits = static_cast<uint64_t>(static_cast<int64_t>(a->payload.iValue));
      break;
    case NVTX_PAYLOAD_TYPE_FLOAT: {
      type = PayloadValue::Type::kF64;
      double d = a->payload.fValue;
      __builtin_memcpy(&bits, &d, 8);
      break;
    }
    default:
      break;
  }
  if (type != PayloadValue::Type::kNone) {
    out->has_payload = true;
    out->payload.type = EventType::kPayload;
    out->payload.flags = static_cast<uint8_t>(type);
    out->payload.a = bits;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      out->name = InternAscii(ts, a->message.ascii);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      out->name = InternWide(ts, a->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      // Our handles are string ids; anything else (a stale or made-up
      // pointer) is named "" and counted: it must never reach code that
      // indexes or sizes by it.
      const auto handle = reinterpret_cast<uintptr_t>(a->message.registered);
      if (GlobalStrings().Known(handle)) {
        out->name = static_cast<uint32_t>(handle);
      } else {
        GlobalMisuse().invalid_string_handle.fetch_add(1, std::memory_order_relaxed);
      }
      break;
    }
    default:
      break;
  }
}

// ---- The recording core, shared by every variant ----

// A range or mark the session did not record because it is ending (the
// process called exit() while this thread runs): counted, so the trace says
// what it lacks. Off the hot path (the window is closed).
__attribute__((noinline)) void CountIfSessionEnded(ThreadState* ts, const NvtxDomain* domain,
                                                   Session* s) noexcept {
  if (domain->enabled && s->window().closed()) {
    ThreadCounters::Bump(ts->counters().after_session_end);
  }
}

// Inlined into each entry point: push+pop is the hot path (docs/design.md s.7).
inline __attribute__((always_inline)) int Push(ThreadState* ts, NvtxDomain* domain, uint32_t name,
                                               const Attr* attr) noexcept {
  Session* s = Session::Instance();
  if (!s) return -1;
  uint8_t flags = 0;
  if (name == s->capture_range_name() && name != 0) {
    s->window().OnInstanceStart();
    flags |= ThreadState::kCaptureInstance;
  }
  uint64_t id = ts->NextInstanceId();
  if (domain->enabled && s->window().active()) {
    if (attr && attr->has_payload) {
      Event ev[2];
      ev[0].type = EventType::kPush;
      ev[0].flags = kEventHasPayload;
      ev[0].domain = domain->id;
      ev[0].name = name;
      ev[0].a = id;
      ev[0].b = attr->category_color;
      ev[1] = attr->payload;
      ev[0].time = NowTicks();
      if (ts->AppendPush(ev, 2)) flags |= ThreadState::kRecorded;
    } else if (Event* e = ts->BeginPush()) {
      // Written in place, field by field: no staging copy (store-forwarding
      // stalls showed up in the push+pop benchmark).
      e->type = EventType::kPush;
      e->flags = 0;
      e->domain = domain->id;
      e->name = name;
      e->a = id;
      e->b = attr ? attr->category_color : 0;
      e->time = NowTicks();
      ts->Publish1();
      flags |= ThreadState::kRecorded;
    }
  } else {
    CountIfSessionEnded(ts, domain, s);
  }
  return ts->PushOpen(id, domain->id, flags);
}

// The pop's rarer cases, out of line so the common one needs no register
// saves for them: a range of the capture window ending, a top-level range
// when ranges are flushed as they end (a forked child), a range not recorded.
__attribute__((noinline)) int PopRest(ThreadState* ts, uint8_t flags) noexcept {
  if (flags & ThreadState::kCaptureInstance) {
    if (Session* s = Session::Instance()) s->window().OnInstanceEnd();
  }
  const int depth = ts->depth();
  if (depth == 0 && Session::flush_top_level_ranges() && (flags & ThreadState::kRecorded)) {
    if (Session* s = Session::Instance()) s->DrainAfterTopLevelRange();
  }
  return depth;
}

// Push without attributes (nvtxRangePushA/W): the common case, recorded
// with nothing else to do, inline; everything else goes to Push, out of line.
__attribute__((noinline)) int PushSlow(ThreadState* ts, NvtxDomain* domain,
                                       uint32_t name) noexcept {
  return Push(ts, domain, name, nullptr);
}
inline __attribute__((always_inline)) int PushPlain(ThreadState* ts, NvtxDomain* domain,
                                                    uint32_t name) noexcept {
  Session* s = Session::Instance();
  if (__builtin_expect(s && (name != s->capture_range_name() || name == 0) && domain->enabled &&
                           s->window().active(),
                       1)) {
    const uint64_t id = ts->NextInstanceId();
    const uint16_t domain_id = domain->id;
    Event* e = ts->BeginPush();
    if (__builtin_expect(!e, 0)) return ts->PushOpen(id, domain_id, 0);  // full: counted
    SetEventHead(e, EventType::kPush, domain_id, name);
    e->a = id;
    e->b = 0;
    e->time = NowTicks();
    ts->Publish1();
    return ts->PushOpen(id, domain_id, ThreadState::kRecorded);
  }
  return PushSlow(ts, domain, name);
}

// Never throws: in a forked child a top-level pop only wakes the writer.
inline __attribute__((always_inline)) int Pop(ThreadState* ts, NvtxDomain* domain) noexcept {
  const uint64_t now = NowTicks();
  const uint16_t domain_id = domain->id;
  const ThreadState::OpenRange* open = ts->PopOpen(domain_id);
  if (!open) return -1;
  const uint8_t flags = open->flags;
  if (flags & ThreadState::kRecorded) {
    const uint64_t id = open->id;
    if (Event* e = ts->BeginPop()) {
      SetEventHead(e, EventType::kPop, domain_id, 0);
      e->time = now;
      e->a = id;
      e->b = 0;
      ts->Publish1();
    }
  }
  if (__builtin_expect(flags == ThreadState::kRecorded, 1)) {
    const int depth = ts->depth();
    if (__builtin_expect(depth != 0 || !Session::flush_top_level_ranges(), 1)) return depth;
  }
  return PopRest(ts, flags);
}

// Fills ev[0] with type, domain, name and attr's category / color, and
// ev[1] with attr's payload when it has one; returns the event count (1 or
// 2). The caller sets ev[0].a and ev[0].time.
inline __attribute__((always_inline)) int FillAttrEvent(EventType type, const NvtxDomain* domain,
                                                        uint32_t name, const Attr* attr,
                                                        Event ev[2]) noexcept {
  ev[0].type = type;
  ev[0].domain = domain->id;
  ev[0].name = name;
  if (!attr) return 1;
  ev[0].b = attr->category_color;
  if (!attr->has_payload) return 1;
  ev[0].flags = kEventHasPayload;
  ev[1] = attr->payload;
  return 2;
}

// The highest state slot (bits 40..61 of a range id, ThreadState::slot())
// any start range was given: an id beyond it cannot be one of ours. The
// slot, not the thread's ThreadDef id: a registry hands the two out from
// separate counters, so threads registering at once can get a slot above
// their id, and a check against ids then took their own first End for a
// made-up id (dropped as nvtx_invalid_range_id, its range left open).
std::atomic<uint32_t> g_max_start_thread{0};

inline void NoteStartThread(uint32_t thread) noexcept {
  uint32_t seen = g_max_start_thread.load(std::memory_order_relaxed);
  while (thread > seen &&
         !g_max_start_thread.compare_exchange_weak(seen, thread, std::memory_order_relaxed)) {
  }
}

// Whether id can be one Start returned: a thread index that was handed out
// and a sequence number (never 0). Capture-range instances are checked
// exactly (CaptureInstanceIds).
inline bool PlausibleRangeId(uint64_t id) noexcept {
  const uint64_t bare = id & kRangeIdMask;
  const uint64_t thread = bare >> 40;
  return thread != 0 && thread <= g_max_start_thread.load(std::memory_order_relaxed) &&
         (bare & ((uint64_t{1} << 40) - 1)) != 0;
}

void CountInvalidRangeId() noexcept {
  GlobalMisuse().invalid_range_id.fetch_add(1, std::memory_order_relaxed);
}

nvtxRangeId_t Start(ThreadState* ts, NvtxDomain* domain, uint32_t name, const Attr* attr) noexcept {
  Session* s = Session::Instance();
  if (!s) return kRangeIdNotRecorded;
  uint64_t id = ts->NextInstanceId();
  NoteStartThread(ts->slot());
  if (name == s->capture_range_name() && name != 0) {
    s->window().OnInstanceStart();
    if (s->capture_ids().Add(id)) id |= kRangeIdCaptureInstance;
  }
  if (domain->enabled && s->window().active()) {
    Event ev[2];
    const int n = FillAttrEvent(EventType::kStart, domain, name, attr, ev);
    ev[0].a = id & kRangeIdMask;
    ev[0].time = NowTicks();
    if (ts->Append(ev, n)) return id;
  } else {
    CountIfSessionEnded(ts, domain, s);
  }
  return id | kRangeIdNotRecorded;
}

void End(nvtxRangeId_t id) {
  uint64_t now = NowTicks();
  // 0 and the bare kRangeIdNotRecorded come from starts made while nothing
  // was traced: nothing to end.
  if (id == 0 || id == kRangeIdNotRecorded) return;
  // An id the application made up, or ended twice, changes nothing.
  if (!PlausibleRangeId(id)) return CountInvalidRangeId();
  if (id & kRangeIdCaptureInstance) {
    Session* s = Session::Instance();
    if (!s || !s->capture_ids().Take(id & kRangeIdMask)) return CountInvalidRangeId();
  }
  if (!(id & kRangeIdNotRecorded)) {
    if (ThreadState* ts = CurrentThreadState()) {
      Event e;
      e.type = EventType::kEnd;
      e.time = now;
      e.a = id & kRangeIdMask;
      ts->Append(e);
    }
  }
  if (id & kRangeIdCaptureInstance) {
    if (Session* s = Session::Instance()) s->window().OnInstanceEnd();
  }
}

void Mark(ThreadState* ts, NvtxDomain* domain, uint32_t name, const Attr* attr) noexcept {
  Session* s = Session::Instance();
  if (!s) return;
  if (!domain->enabled || !s->window().active()) return CountIfSessionEnded(ts, domain, s);
  Event ev[2];
  const int n = FillAttrEvent(EventType::kMark, domain, name, attr, ev);
  ev[0].time = NowTicks();
  ts->Append(ev, n);
}

// Fallbacks of the push / start entry points when recording failed (the
// name could not be interned, say): the range still opens, unnamed, on the
// thread's existing state, so the matching pop / end stays paired.
int PushUnnamed(NvtxDomain* domain) noexcept {
  ThreadState* ts = internal::t_current.state;
  return ts && domain ? Push(ts, domain, 0, nullptr) : -1;
}
nvtxRangeId_t StartUnnamed(NvtxDomain* domain) noexcept {
  ThreadState* ts = internal::t_current.state;
  return ts && domain ? Start(ts, domain, 0, nullptr) : 0;
}
int PopFailed() noexcept { return -1; }

// ---- Core module ----
// Each entry point is one guard (entry_guard.h) around code free to throw.

void NVTX_API MarkEx(const nvtxEventAttributes_t* a) noexcept {
  Guarded("nvtxMarkEx", [&] {
    if (ThreadState* ts = CurrentThreadState()) {
      Attr attr;
      DecodeAttr(ts, a, &attr);
      Mark(ts, DefaultDomain(), attr.name, &attr);
    }
  });
}
void NVTX_API MarkA(const char* m) noexcept {
  Guarded("nvtxMarkA", [&] {
    if (ThreadState* ts = CurrentThreadState())
      Mark(ts, DefaultDomain(), InternAscii(ts, m), nullptr);
  });
}
void NVTX_API MarkW(const wchar_t* m) noexcept {
  Guarded("nvtxMarkW", [&] {
    if (ThreadState* ts = CurrentThreadState())
      Mark(ts, DefaultDomain(), InternWide(ts, m), nullptr);
  });
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) noexcept {
  return Guarded(
      "nvtxRangeStartEx", kNotTraced,
      [&]() -> nvtxRangeId_t {
        ThreadState* ts = CurrentThreadState();
        if (!ts) return 0;
        Attr attr;
        DecodeAttr(ts, a, &attr);
        return Start(ts, DefaultDomain(), attr.name, &attr);
      },
      []() noexcept { return StartUnnamed(DefaultDomain()); });
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) noexcept {
  return Guarded(
      "nvtxRangeStartA", kNotTraced,
      [&]() -> nvtxRangeId_t {
        ThreadState* ts = CurrentThreadState();
        return ts ? Start(ts, DefaultDomain(), InternAscii(ts, m), nullptr) : 0;
      },
      []() noexcept { return StartUnnamed(DefaultDomain()); });
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) noexcept {
  return Guarded(
      "nvtxRangeStartW", kNotTraced,
      [&]() -> nvtxRangeId_t {
        ThreadState* ts = CurrentThreadState();
        return ts ? Start(ts, DefaultDomain(), InternWide(ts, m), nullptr) : 0;
      },
      []() noexcept { return StartUnnamed(DefaultDomain()); });
}
void NVTX_API RangeEnd(nvtxRangeId_t id) noexcept {
  Guarded("nvtxRangeEnd", [&] { End(id); });
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) noexcept {
  return Guarded(
      "nvtxRangePushEx", kNotTraced,
      [&] {
        ThreadState* ts = CurrentThreadState();
        if (!ts) return -1;
        Attr attr;
        DecodeAttr(ts, a, &attr);
        return Push(ts, DefaultDomain(), attr.name, &attr);
      },
      []() noexcept { return PushUnnamed(DefaultDomain()); });
}
// The full nvtxRangePushA, out of line: a name not cached yet, a capture
// range, a closed window, a full ring or stack (RangePushA's fast path).
__attribute__((noinline)) int RangePushASlow(const char* m) noexcept {
  return Guarded(
      "nvtxRangePushA", kNotTraced,
      [&] {
        ThreadState* ts = CurrentThreadState();
        return ts ? PushPlain(ts, DefaultDomain(), InternAscii(ts, m)) : -1;
      },
      []() noexcept { return PushUnnamed(DefaultDomain()); });
}
// The same once the name's id is known.
__attribute__((noinline)) int RangePushNamedSlow(ThreadState* ts, uint32_t name) noexcept {
  return Guarded(
      "nvtxRangePushA", kNotTraced, [&] { return PushPlain(ts, DefaultDomain(), name); },
      []() noexcept { return PushUnnamed(DefaultDomain()); });
}

// Whether a push of `name` (an id) in the default domain is recorded with
// nothing else to do: a session, its window open, the name not the capture
// range's, the domain not excluded. The clock is the TSC: the caller checked
// that before it read `now` (not checked twice on the hot path).
inline __attribute__((always_inline)) bool DefaultPushRecords(uint32_t name) noexcept {
  const Session* s = Session::Instance();
  return s && s->window().active() && name != s->capture_range_match() &&
         g_default_domain_enabled.load(std::memory_order_relaxed);
}

// A push of a cached name at `now` (the TSC, read at the call): recorded
// inline when that is all it takes.
inline __attribute__((always_inline)) int PushDefaultAt(ThreadState* ts, uint32_t name,
                                                        uint64_t now) noexcept {
  if (__builtin_expect(!DefaultPushRecords(name), 0)) return RangePushNamedSlow(ts, name);
  return ts->TryPushRecorded(
      kDefaultDomainId, name, [now]() noexcept { return now; },
      [=]() noexcept { return RangePushNamedSlow(ts, name); });
}

// RangePushA when the name was not the predicted one: its address's home
// entry, else the full path.
__attribute__((noinline)) int RangePushAHome(ThreadState* ts, const char* m,
                                             uint64_t now) noexcept {
  const uint64_t name = ts->TryHomeNameId(m);
  if (__builtin_expect(name == ThreadState::kNoNameId, 0)) return RangePushASlow(m);
  return PushDefaultAt(ts, static_cast<uint32_t>(name), now);
}

// RangePushA where ticks are not the TSC: the name from the caches, the
// push (and its clock read) on the full path.
__attribute__((noinline)) int RangePushANoTsc(ThreadState* ts, const char* m) noexcept {
  uint64_t name = ts->TryPredictedNameId(m);
  if (name == ThreadState::kNoNameId) name = ts->TryHomeNameId(m);
  if (name == ThreadState::kNoNameId) return RangePushASlow(m);
  return RangePushNamedSlow(ts, static_cast<uint32_t>(name));
}

// The push+pop hot path (docs/design.md s.7): the common case, the name
// predicted (names come back in the order they came) and recorded in an
// open window, inline and outside the guard (it cannot throw: no
// allocation, no call); anything else takes the full path.
//
// The TSC is read first, before the name is looked up: the read takes
// longer than the lookup and does not depend on it, so the two overlap.
// Read after it, the whole lookup came on top of the read (measured by
// leaving the lookup out: 3 ns of a push+pop with one name, 6 ns with
// 5,000 names cycling); read first, 1-2 ns of that is gone. The range
// starts at the call, a few ns earlier than before.
int NVTX_API RangePushA(const char* m) noexcept {
  ThreadState* ts = internal::t_current.state;
  if (__builtin_expect(ts == nullptr || m == nullptr, 0)) return RangePushASlow(m);
  if (__builtin_expect(!FastTicksReady(), 0)) return RangePushANoTsc(ts, m);
  PointerNameCache* names = internal::t_current.names;  // ts's, set with it
  const uint64_t now = FastTicks();
  const uint64_t name = names->TryPredicted(m);
  if (__builtin_expect(name == ThreadState::kNoNameId, 0)) return RangePushAHome(ts, m, now);
  return PushDefaultAt(ts, static_cast<uint32_t>(name), now);
}
int NVTX_API RangePushW(const wchar_t* m) noexcept {
  return Guarded(
      "nvtxRangePushW", kNotTraced,
      [&] {
        ThreadState* ts = CurrentThreadState();
        return ts ? PushPlain(ts, DefaultDomain(), InternWide(ts, m)) : -1;
      },
      []() noexcept { return PushUnnamed(DefaultDomain()); });
}
__attribute__((noinline)) int RangePopSlow() noexcept {
  return Guarded(
      "nvtxRangePop", kNotTraced,
      [] {
        ThreadState* ts = CurrentThreadState();
        return ts ? Pop(ts, DefaultDomain()) : -1;
      },
      PopFailed);
}
// The pop of a range RangePushA's fast path recorded: inline, outside the
// guard; anything else takes the full path.
int NVTX_API RangePop() noexcept {
  ThreadState* ts = internal::t_current.state;
  if (__builtin_expect(ts == nullptr || !FastTicksReady(), 0)) return RangePopSlow();
  return ts->TryPopRecorded(kDefaultDomainId, FastTicks(), RangePopSlow);
}
void NameCategoryId(uint16_t domain, uint32_t category, uint32_t name) {
  GlobalDefinitions().NameCategory(domain, category, name);
}
void NVTX_API NameCategoryA(uint32_t category, const char* name) noexcept {
  Guarded("nvtxNameCategoryA",
          [&] { NameCategoryId(0, category, InternAscii(CurrentThreadState(), name)); });
}
void NVTX_API NameCategoryW(uint32_t category, const wchar_t* name) noexcept {
  Guarded("nvtxNameCategoryW",
          [&] { NameCategoryId(0, category, InternWide(CurrentThreadState(), name)); });
}
void NameThreadId(uint32_t os_tid, uint32_t name) {
  GlobalDefinitions().NameOsThread(os_tid, name);
}
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) noexcept {
  Guarded("nvtxNameOsThreadA", [&] { NameThreadId(tid, InternAscii(CurrentThreadState(), name)); });
}
void NVTX_API NameOsThreadW(uint32_t tid, const wchar_t* name) noexcept {
  Guarded("nvtxNameOsThreadW", [&] { NameThreadId(tid, InternWide(CurrentThreadState(), name)); });
}

// ---- Core2 module (domains) ----

void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) noexcept {
  Guarded("nvtxDomainMarkEx", [&] {
    NvtxDomain* domain = DomainOf(d);
    if (!domain) return;
    if (ThreadState* ts = CurrentThreadState()) {
      Attr attr;
      DecodeAttr(ts, a, &attr);
      Mark(ts, domain, attr.name, &attr);
    }
  });
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d,
                                          const nvtxEventAttributes_t* a) noexcept {
  return Guarded(
      "nvtxDomainRangeStartEx", kNotTraced,
      [&]() -> nvtxRangeId_t {
        NvtxDomain* domain = DomainOf(d);
        ThreadState* ts = domain ? CurrentThreadState() : nullptr;
        if (!ts) return 0;
        Attr attr;
        DecodeAttr(ts, a, &attr);
        return Start(ts, domain, attr.name, &attr);
      },
      [d]() noexcept { return StartUnnamed(DomainOf(d)); });
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) noexcept {
  Guarded("nvtxDomainRangeEnd", [&] { End(id); });
}
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) noexcept {
  return Guarded(
      "nvtxDomainRangePushEx", kNotTraced,
      [&] {
        NvtxDomain* domain = DomainOf(d);
        ThreadState* ts = domain ? CurrentThreadState() : nullptr;
        if (!ts) return -1;
        Attr attr;
        DecodeAttr(ts, a, &attr);
        return Push(ts, domain, attr.name, &attr);
      },
      [d]() noexcept { return PushUnnamed(DomainOf(d)); });
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) noexcept {
  return Guarded(
      "nvtxDomainRangePop", kNotTraced,
      [d] {
        NvtxDomain* domain = DomainOf(d);
        ThreadState* ts = domain ? CurrentThreadState() : nullptr;
        return ts ? Pop(ts, domain) : -1;
      },
      PopFailed);
}
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t category,
                                  const char* name) noexcept {
  Guarded("nvtxDomainNameCategoryA", [&] {
    if (NvtxDomain* domain = DomainOf(d))
      NameCategoryId(domain->id, category, InternAscii(CurrentThreadState(), name));
  });
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t category,
                                  const wchar_t* name) noexcept {
  Guarded("nvtxDomainNameCategoryW", [&] {
    if (NvtxDomain* domain = DomainOf(d))
      NameCategoryId(domain->id, category, InternWide(CurrentThreadState(), name));
  });
}
// A registered string handle is our global string id (0, the empty name, when
// registering failed). Strings are process-wide: the domain handle is not
// used (so never dereferenced), whatever it is.
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) noexcept {
  return Guarded("nvtxDomainRegisterStringA", [&] {
    uint32_t id = InternAscii(CurrentThreadState(), s);
    return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
  });
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) noexcept {
  return Guarded("nvtxDomainRegisterStringW", [&] {
    uint32_t id = InternWide(CurrentThreadState(), s);
    return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
  });
}
nvtxDomainHandle_t CreateDomainNamed(uint32_t name, std::string_view text) {
  Session* s = Session::Instance();
  bool enabled = s ? s->config().DomainEnabled(text) : true;
  NvtxDomain* d = GlobalDefinitions().CreateDomain(name, enabled);
  if (!d) {
    LogOnce("domains", LogLevel::kWarn, "too many NVTX domains; later ones use the default");
    return nullptr;
  }
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(DomainHandleValue(d->id)));
}
// A null handle (creation failed) makes later calls use the default domain.
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) noexcept {
  return Guarded("nvtxDomainCreateA", [&]() -> nvtxDomainHandle_t {
    if (!name) return nullptr;
    return CreateDomainNamed(GlobalStrings().Intern(name).id, name);
  });
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) noexcept {
  return Guarded("nvtxDomainCreateW", [&]() -> nvtxDomainHandle_t {
    if (!name) return nullptr;
    std::string utf8;
    AppendUtf8(&utf8, name);
    return CreateDomainNamed(GlobalStrings().Intern(utf8).id, utf8);
  });
}
// Later calls with the handle are dropped and counted (creating the name
// again revives it). The domain's id and name stay defined: events may still
// be buffered for it.
void NVTX_API DomainDestroy(nvtxDomainHandle_t d) noexcept {
  Guarded("nvtxDomainDestroy", [&] {
    if (!d) return;  // the default domain is never destroyed
    if (NvtxDomain* domain = DomainOf(d)) domain->destroyed.store(true, std::memory_order_relaxed);
  });
}
void NVTX_API Initialize(const void*) noexcept {}

template <typename Fn>
void SetSlot(NvtxFunctionTable table, unsigned size, unsigned cbid, Fn fn) {
  if (cbid < size && table[cbid]) *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

int InstallNvtxCallbacks(NvtxGetExportTable get_export_table) {
  if (!get_export_table) return 0;
  Session* s = Session::Instance();
  if (!DefaultDomain()) {
    // Definitions::DefaultDomain sets `enabled` once, under its lock, and
    // returns the same object to every caller.
    NvtxDomain* d =
        GlobalDefinitions().DefaultDomain(s ? s->config().DomainEnabled("default") : true);
    NvtxDomain* expected = nullptr;
    g_default_domain_ptr.compare_exchange_strong(expected, d, std::memory_order_acq_rel);
    // Every initializer stores the same value (the one object, its flag set
    // once), before any callback of its instance is installed.
    g_default_domain_enabled.store(DefaultDomain()->enabled, std::memory_order_release);
  }
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      !callbacks->GetModuleFunctionTable) {
    LogOnce("nvtx-etbl", LogLevel::kWarn, "NVTX export table missing; NVTX not traced");
    return 0;
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || !core) {
    LogOnce("nvtx-core", LogLevel::kWarn, "NVTX core table missing; NVTX not traced");
    return 0;
  }
  SetSlot(core, core_size, NVTX_CBID_CORE_MarkEx, &MarkEx);
  SetSlot(core, core_size, NVTX_CBID_CORE_MarkA, &MarkA);
  SetSlot(core, core_size, NVTX_CBID_CORE_MarkW, &MarkW);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartEx, &RangeStartEx);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePushA, &RangePushA);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePushW, &RangePushW);
  SetSlot(core, core_size, NVTX_CBID_CORE_RangePop, &RangePop);
  SetSlot(core, core_size, NVTX_CBID_CORE_NameCategoryA, &NameCategoryA);
  SetSlot(core, core_size, NVTX_CBID_CORE_NameCategoryW, &NameCategoryW);
  SetSlot(core, core_size, NVTX_CBID_CORE_NameOsThreadA, &NameOsThreadA);
  SetSlot(core, core_size, NVTX_CBID_CORE_NameOsThreadW, &NameOsThreadW);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) && core2) {
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, &DomainNameCategoryA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, &DomainNameCategoryW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &DomainDestroy);
    SetSlot(core2, core2_size, NVTX_CBID_CORE2_Initialize, &Initialize);
  }
  if (auto* version =
          static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO))) {
    if (version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
        version->SetInjectionNvtxVersion) {
      version->SetInjectionNvtxVersion(NVTX_VERSION);
    }
  }
  return 1;
}

}  // namespace tracer
