#include "libtracer/analysis/importers/kineto_tokenizer.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace tracer::analysis::importers {

bool MicrosTextToNs(const char* p, size_t n, uint64_t* ns) {
  size_t i = 0;
  uint64_t whole = 0;
  size_t digits = 0;
  for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i, ++digits) {
    if (whole > (UINT64_MAX / 10000)) return false;  // would overflow as ns
    whole = whole * 10 + static_cast<uint64_t>(p[i] - '0');
  }
  if (digits == 0) return false;
  uint64_t frac = 0;  // three decimals = nanoseconds
  if (i < n && p[i] == '.') {
    ++i;
    int k = 0;
    bool round_up = false;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i, ++k) {
      if (k < 3) {
        frac = frac * 10 + static_cast<uint64_t>(p[i] - '0');
      } else if (k == 3) {
        round_up = p[i] >= '5';
      }
    }
    for (int pad = k; pad < 3; ++pad) frac *= 10;
    if (round_up) ++frac;
  }
  if (i != n) return false;  // exponent or garbage: not the plain form
  *ns = whole * 1000 + frac;
  return true;
}

namespace {

using namespace std::literals;

constexpr size_t kBlock = 1 << 18;
constexpr int kMaxDepth = 512;
constexpr size_t kMaxNumber = 64;
// Longest string kept (names, categories, keys): real ones are a few KiB; a
// 14 MB .json.gz can hold a 3 GB string, which would be held whole.
constexpr size_t kMaxString = 16u << 20;

class Parser {
 public:
  Parser(const ByteSource& source, const KinetoEventSink& sink, KinetoTraceInfo* info)
      : source_(source), sink_(sink), info_(info), buf_(kBlock) {
    p_ = end_ = buf_.data();
  }

  bool Run();
  const std::string& error() const { return error_; }

 private:
  // --- bytes ---
  bool Fill() {
    if (eof_) return false;
    base_ += static_cast<size_t>(end_ - buf_.data());
    const size_t n = source_(buf_.data(), buf_.size());
    p_ = buf_.data();
    end_ = p_ + n;
    if (n == 0) eof_ = true;
    return n != 0;
  }
  // Next non-blank byte without consuming it; -1 at the end.
  int PeekNonBlank() {
    for (;;) {
      if (p_ == end_ && !Fill()) return -1;
      const char c = *p_;
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++p_;
        continue;
      }
      return static_cast<unsigned char>(c);
    }
  }
  int Get() {
    if (p_ == end_ && !Fill()) return -1;
    return static_cast<unsigned char>(*p_++);
  }
  size_t Offset() const { return base_ + static_cast<size_t>(p_ - buf_.data()); }

  bool Fail(const std::string& what) {
    if (error_.empty()) {
      error_ = "malformed JSON at byte " + std::to_string(Offset()) + ": " + what;
    }
    return false;
  }
  bool Expect(char c) {
    const int got = PeekNonBlank();
    if (got != c) {
      return Fail(std::string("expected '") + c + "'" +
                  (got < 0 ? std::string(" before the end") : ""));
    }
    ++p_;
    return true;
  }

  // --- tokens ---
  bool String(std::string* out);  // out may be null: skip
  bool Hex4(uint32_t* v);
  // Number text into num_ / num_len_.
  bool NumberText();
  bool NumberInt(int64_t* v);
  bool NumberNs(uint64_t* ns);
  bool Literal(const char* word);
  bool SkipValue(int depth);
  // Calls on_key for each key with the cursor on the value; on_key must
  // consume the value. Handles '{', ',', '}'.
  template <typename F>
  bool Object(int depth, F&& on_key);
  template <typename F>
  bool Array(int depth, F&& on_element);

  // --- Kineto structure ---
  bool TopObject();
  bool TraceEvents();
  bool Event();
  bool Args();
  bool IntArray(uint32_t out[3], bool* seen);
  bool OptionalInt(int64_t* v, bool* present);

  const ByteSource& source_;
  const KinetoEventSink& sink_;
  KinetoTraceInfo* info_;
  std::vector<char> buf_;
  const char* p_;
  const char* end_;
  size_t base_ = 0;  // document offset of buf_[0]
  bool eof_ = false;
  std::string error_;
  bool saw_events_ = false;
  uint64_t elements_ = 0, objects_ = 0;  // of the events array
  std::string key_, scratch_;
  char num_[kMaxNumber + 1];
  size_t num_len_ = 0;
  KinetoEvent event_;
};

bool Parser::Hex4(uint32_t* v) {
  *v = 0;
  for (int i = 0; i < 4; ++i) {
    const int c = Get();
    uint32_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return Fail("bad \\u escape");
    }
    *v = (*v << 4) | d;
  }
  return true;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool Parser::String(std::string* out) {
  if (!Expect('"')) return false;
  if (out != nullptr) out->clear();
  for (;;) {
    if (p_ == end_ && !Fill()) return Fail("unterminated string");
    const char* start = p_;
    while (p_ < end_ && *p_ != '"' && *p_ != '\\') ++p_;
    if (out != nullptr) {
      out->append(start, p_);
      if (out->size() > kMaxString) {
        if (error_.empty()) {
          error_ = "a string longer than " + std::to_string(kMaxString >> 20) +
                   " MiB (the importer's limit on a name or value) at byte " +
                   std::to_string(Offset());
        }
        return false;
      }
    }
    if (p_ == end_) continue;
    if (*p_++ == '"') return true;
    const int c = Get();
    char plain = 0;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        plain = static_cast<char>(c);
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!Hex4(&cp)) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A surrogate pair: \uD83D\uDE00.
          uint32_t low = 0;
          if (Get() != '\\' || Get() != 'u' || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
            return Fail("bad surrogate pair");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out != nullptr) AppendUtf8(out, cp);
        continue;
      }
      default:
        return Fail("bad escape in string");
    }
    if (out != nullptr) out->push_back(plain);
  }
}

bool Parser::NumberText() {
  num_len_ = 0;
  if (PeekNonBlank() < 0) return Fail("expected a value");
  for (;;) {
    if (p_ == end_ && !Fill()) break;
    const char c = *p_;
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
      if (num_len_ == kMaxNumber) return Fail("number too long");
      num_[num_len_++] = c;
      ++p_;
    } else {
      break;
    }
  }
  if (num_len_ == 0) return Fail("expected a value");
  num_[num_len_] = '\0';
  return true;
}

bool Parser::NumberInt(int64_t* v) {
  if (!NumberText()) return false;
  const char* s = num_;
  bool negative = false;
  if (*s == '-') {
    negative = true;
    ++s;
  }
  // Values past int64 saturate: a crafted trace must not make a conversion
  // undefined (the fuzzer found a 35-digit tid).
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t x = 0;
  const char* digits = s;
  while (*s >= '0' && *s <= '9') {
    const auto digit = static_cast<uint64_t>(*s++ - '0');
    x = x > (kMax + 1 - digit) / 10 ? kMax + 1 : x * 10 + digit;
  }
  if (s == digits) return Fail("bad number");
  if (*s != '\0') {
    // Fraction or exponent: the integer part of the value.
    const double d = std::strtod(num_, nullptr);
    if (!(d == d)) {
      *v = 0;
    } else if (d >= 0x1p63) {
      *v = INT64_MAX;
    } else if (d <= -0x1p63) {
      *v = INT64_MIN;
    } else {
      *v = static_cast<int64_t>(d);
    }
    return true;
  }
  if (negative) {
    *v = x > kMax ? INT64_MIN : -static_cast<int64_t>(x);
  } else {
    *v = x > kMax ? INT64_MAX : static_cast<int64_t>(x);
  }
  return true;
}

bool Parser::NumberNs(uint64_t* ns) {
  if (!NumberText()) return false;
  if (MicrosTextToNs(num_, num_len_, ns)) return true;
  // Exponent form or negative: the double is the best there is.
  const double d = std::strtod(num_, nullptr);
  // NaN and negatives read as 0; values past the int64 range saturate.
  if (!(d > 0)) {
    *ns = 0;
  } else if (d * 1000.0 >= 0x1p63) {
    *ns = static_cast<uint64_t>(INT64_MAX);
  } else {
    *ns = static_cast<uint64_t>(std::llround(d * 1000.0));
  }
  return true;
}

bool Parser::Literal(const char* word) {
  for (const char* w = word; *w != '\0'; ++w) {
    if (Get() != *w) return Fail(std::string("expected '") + word + "'");
  }
  return true;
}

template <typename F>
bool Parser::Object(int depth, F&& on_key) {
  if (depth > kMaxDepth) return Fail("nesting too deep");
  if (!Expect('{')) return false;
  if (PeekNonBlank() == '}') {
    ++p_;
    return true;
  }
  for (;;) {
    if (!String(&key_) || !Expect(':')) return false;
    if (!on_key()) return false;
    const int c = PeekNonBlank();
    if (c < 0) return Fail("unterminated object");
    ++p_;
    if (c == '}') return true;
    if (c != ',') return Fail("expected ',' or '}' in object");
  }
}

template <typename F>
bool Parser::Array(int depth, F&& on_element) {
  if (depth > kMaxDepth) return Fail("nesting too deep");
  if (!Expect('[')) return false;
  if (PeekNonBlank() == ']') {
    ++p_;
    return true;
  }
  for (;;) {
    if (!on_element()) return false;
    const int c = PeekNonBlank();
    if (c < 0) return Fail("unterminated array");
    ++p_;
    if (c == ']') return true;
    if (c != ',') return Fail("expected ',' or ']' in array");
  }
}

bool Parser::SkipValue(int depth) {
  switch (PeekNonBlank()) {
    case '{':
      return Object(depth + 1, [&] { return SkipValue(depth + 1); });
    case '[':
      return Array(depth + 1, [&] { return SkipValue(depth + 1); });
    case '"':
      return String(nullptr);
    case 't':
      return Literal("true");
    case 'f':
      return Literal("false");
    case 'n':
      return Literal("null");
    case -1:
      return Fail("expected a value before the end");
    default:
      return NumberText();
  }
}

bool Parser::OptionalInt(int64_t* v, bool* present) {
  const int c = PeekNonBlank();
  if ((c >= '0' && c <= '9') || c == '-') {
    if (present != nullptr) *present = true;
    return NumberInt(v);
  }
  return SkipValue(2);  // "Spans" and other non-numeric ids
}

bool Parser::IntArray(uint32_t out[3], bool* seen) {
  if (PeekNonBlank() != '[') return SkipValue(3);
  *seen = true;
  int i = 0;
  return Array(4, [&] {
    int64_t v = 0;
    const int c = PeekNonBlank();
    if (!((c >= '0' && c <= '9') || c == '-')) return SkipValue(4);
    if (!NumberInt(&v)) return false;
    if (i < 3) out[i] = static_cast<uint32_t>(v);
    ++i;
    return true;
  });
}

bool Parser::Args() {
  if (PeekNonBlank() != '{') return SkipValue(2);
  return Object(3, [&] {
    const std::string& k = key_;
    int64_t* target = nullptr;
    if (k == "correlation"sv) {
      target = &event_.correlation;
    } else if (k == "device"sv) {
      target = &event_.device;
    } else if (k == "stream"sv) {
      target = &event_.stream;
    } else if (k == "context"sv) {
      target = &event_.context;
    } else if (k == "bytes"sv) {
      target = &event_.bytes;
    } else if (k == "cbid"sv) {
      target = &event_.cbid;
    } else if (k == "registers per thread"sv) {
      target = &event_.registers;
    } else if (k == "shared memory"sv) {
      target = &event_.shared_memory;
    } else if (k == "Total Allocated"sv) {
      target = &event_.total_allocated;
    } else if (k == "Total Reserved"sv) {
      target = &event_.total_reserved;
    } else if (k == "Device Id"sv) {
      target = &event_.device_id;
    } else if (k == "Device Type"sv) {
      target = &event_.device_type;
    } else if (k == "grid"sv) {
      return IntArray(event_.grid, &event_.has_grid);
    } else if (k == "block"sv) {
      return IntArray(event_.block, &event_.has_block);
    } else if (k == "name"sv) {
      if (PeekNonBlank() == '"') return String(&event_.arg_name);
      return SkipValue(3);
    }
    if (target != nullptr) return OptionalInt(target, nullptr);
    return SkipValue(3);
  });
}

bool Parser::Event() {
  ++elements_;
  if (PeekNonBlank() != '{') return SkipValue(1);  // not an event object
  ++objects_;
  event_.clear();
  const bool ok = Object(2, [&] {
    const std::string& k = key_;
    if (k == "ph"sv) {
      if (PeekNonBlank() != '"') return SkipValue(2);
      if (!String(&scratch_)) return false;
      event_.ph = scratch_.empty() ? 0 : scratch_[0];
      return true;
    }
    if (k == "cat"sv || k == "name"sv) {
      if (PeekNonBlank() != '"') return SkipValue(2);
      return String(k == "cat"sv ? &event_.cat : &event_.name);
    }
    if (k == "pid"sv) return OptionalInt(&event_.pid, &event_.has_pid);
    if (k == "tid"sv) return OptionalInt(&event_.tid, &event_.has_tid);
    if (k == "ts"sv || k == "dur"sv) {
      const int c = PeekNonBlank();
      if (!((c >= '0' && c <= '9') || c == '-')) return SkipValue(2);
      if (k == "ts"sv) {
        event_.has_ts = true;
        return NumberNs(&event_.ts_ns);
      }
      return NumberNs(&event_.dur_ns);
    }
    if (k == "args"sv) return Args();
    return SkipValue(2);
  });
  if (ok) {
    if (event_.device >= 0 && (event_.cat == "kernel"sv || event_.cat == "gpu_memcpy"sv ||
                               event_.cat == "gpu_memset"sv)) {
      info_->NoteGpuDevice(event_.device);
    }
    sink_(event_);
  }
  return ok;
}

bool Parser::TraceEvents() {
  saw_events_ = true;
  return Array(1, [&] { return Event(); });
}

bool Parser::TopObject() {
  return Object(0, [&] {
    const std::string& k = key_;
    if (k == "traceEvents"sv) {
      if (PeekNonBlank() != '[') return SkipValue(1);
      return TraceEvents();
    }
    if (k == "distributedInfo"sv) {
      if (PeekNonBlank() != '{') return SkipValue(1);
      return Object(1, [&] {
        if (key_ == "rank"sv || key_ == "world_size"sv) {
          const int c = PeekNonBlank();
          if ((c >= '0' && c <= '9') || c == '-') {
            return NumberInt(key_ == "rank"sv ? &info_->rank : &info_->world_size);
          }
        }
        return SkipValue(1);
      });
    }
    if (k == "deviceProperties"sv) {
      if (PeekNonBlank() != '[') return SkipValue(1);
      return Array(1, [&] {
        ++info_->device_properties;
        return SkipValue(1);
      });
    }
    if (k == "host_name"sv || k == "displayTimeUnit"sv) {
      if (PeekNonBlank() != '"') return SkipValue(1);
      return String(k == "host_name"sv ? &info_->host_name : &info_->display_time_unit);
    }
    return SkipValue(1);
  });
}

bool Parser::Run() {
  const int c = PeekNonBlank();
  bool ok = false;
  if (c == '{') {
    ok = TopObject();
  } else if (c == '[') {
    ok = TraceEvents();  // the Chrome "JSON array" form
  } else {
    return Fail("expected '{' or '['");
  }
  if (!ok) return false;
  if (!saw_events_) {
    error_ = "not a Chrome trace: no traceEvents array";
    return false;
  }
  // [1,2,3] is a JSON array but no trace: say so rather than import nothing.
  if (elements_ > 0 && objects_ == 0) {
    error_ = "not a Chrome trace: its events array holds " + std::to_string(elements_) +
             " value(s) and no event object";
    return false;
  }
  return true;
}

}  // namespace

bool TokenizeKinetoJson(const ByteSource& source, const KinetoEventSink& sink,
                        KinetoTraceInfo* info, std::string* error) {
  Parser parser(source, sink, info);
  if (parser.Run()) return true;
  *error = parser.error();
  return false;
}

}  // namespace tracer::analysis::importers
