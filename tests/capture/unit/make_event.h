// Test helper: one ring Event (libtracer/capture/event.h) built in a line, as
// a thread's NVTX or launch callback would have stored it.
#pragma once

#include <cstdint>

#include "libtracer/capture/event.h"

namespace tracer::testing {

inline Event MakeEvent(EventType type, uint64_t time, uint64_t a = 0, uint32_t name = 0,
                       uint64_t b = 0, uint16_t domain = 0, uint8_t flags = 0) {
  Event e;
  e.type = type;
  e.time = time;
  e.a = a;
  e.name = name;
  e.b = b;
  e.domain = domain;
  e.flags = flags;
  return e;
}

}  // namespace tracer::testing
