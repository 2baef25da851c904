// libFuzzer target: the NVTX entry points of libtracer.so with arbitrary
// arguments. This is a real NVTX client (the toolkit's nvtx3 headers): NVTX
// loads the library from NVTX_INJECTION64_PATH at the first call, as in a
// traced program. An input is a sequence of calls, a byte picking the entry
// point and the next bytes its arguments. Domain handles, registered-string
// handles and range ids are raw 64-bit values from the input or ones the
// tracer returned earlier; event attributes take their size, version,
// types, colour and payload from the input. Strings stay valid C strings
// (the host's side of the contract): from a fixed set, or input bytes up to
// a NUL. The capture window (TRACER_CAPTURE_RANGE) opens at the first
// "fuzz_window" range and closes for good at its 200th, which bounds what a
// long run writes to its (temporary) trace.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | Byte();
    return v;
  }
  // Input bytes up to a NUL or 32 bytes.
  std::string Text() {
    std::string s;
    while (!empty() && s.size() < 32) {
      const char c = static_cast<char>(Byte());
      if (c == 0) break;
      s.push_back(c);
    }
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

const char* const kNames[] = {"fuzz_window", "step", "", "forward", "a:b:c"};
const wchar_t* const kWideNames[] = {L"fuzz_window", L"w\u00e9ide", L"", L"\U0001F600"};

// What the tracer handed out, reused by later calls (and later inputs).
struct Handles {
  std::vector<nvtxDomainHandle_t> domains;
  std::vector<nvtxStringHandle_t> strings;
  std::vector<nvtxRangeId_t> ranges;
};

template <typename T>
T Pick(Input& in, const std::vector<T>& saved) {
  const uint8_t how = in.Byte() % 4;
  if (how == 0) return T{};
  if (how == 1 && !saved.empty()) return saved[in.Byte() % saved.size()];
  if (how == 2) {  // a value shaped like the tracer's domain handles
    const uint64_t v = 0x7d0e'0000'0000'0000ull | (in.Byte() << 8) | in.Byte();
    if constexpr (std::is_pointer_v<T>)
      return reinterpret_cast<T>(v);
    else
      return static_cast<T>(v);
  }
  const uint64_t v = in.U64();
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<T>(v);
  else
    return static_cast<T>(v);
}

struct Strings {
  std::string text;  // keeps the input's string alive for the call
  const char* Ascii(Input& in) {
    const uint8_t c = in.Byte();
    if (c < 200) return kNames[c % std::size(kNames)];
    text = in.Text();
    return text.c_str();
  }
  const wchar_t* Wide(Input& in) { return kWideNames[in.Byte() % std::size(kWideNames)]; }
};

nvtxEventAttributes_t Attributes(Input& in, Strings& strings, Handles& h) {
  nvtxEventAttributes_t a = {};
  const uint8_t size_kind = in.Byte() % 4;
  a.size = size_kind == 0   ? NVTX_EVENT_ATTRIB_STRUCT_SIZE
           : size_kind == 1 ? 0
                            : static_cast<uint16_t>(in.Byte() | (in.Byte() << 8));
  a.version = in.Byte() % 2 ? NVTX_VERSION : in.Byte();
  a.category = static_cast<uint32_t>(in.U64());
  a.colorType = in.Byte() % 3;
  a.color = static_cast<uint32_t>(in.U64());
  a.payloadType = in.Byte() % 9;
  a.payload.ullValue = in.U64();
  a.messageType = in.Byte() % 5;
  switch (a.messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      a.message.ascii = strings.Ascii(in);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      a.message.unicode = strings.Wide(in);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      a.message.registered = Pick(in, h.strings);
      break;
    default:  // unknown: a value the tracer must not read as a pointer
      a.message.ascii = reinterpret_cast<const char*>(in.U64());
      break;
  }
  return a;
}

std::string g_dir;

void Setup() {
  char tmpl[] = "/tmp/fuzz_nvtx.XXXXXX";
  const char* dir = mkdtemp(tmpl);
  g_dir = dir ? dir : "/tmp";
  setenv("NVTX_INJECTION64_PATH", TRACER_LIB, 1);
  setenv("TRACER_OUTPUT", (g_dir + "/nvtx-%p.trace").c_str(), 1);
  setenv("TRACER_CAPTURE_RANGE", "fuzz_window", 1);
  setenv("TRACER_CAPTURE_START", "1", 1);
  setenv("TRACER_CAPTURE_STOP", "200", 1);
  setenv("TRACER_CUDA", "0", 1);
  // Runs after the tracer's own exit handler (registered later, at the
  // first NVTX call), once the trace is written.
  atexit([] {
    std::error_code ec;
    if (g_dir != "/tmp") std::filesystem::remove_all(g_dir, ec);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Handles h;
  static const bool ready = (Setup(), true);
  (void)ready;
  Input in(data, size);
  Strings strings;
  for (int calls = 0; !in.empty() && calls < 64; ++calls) {
    switch (in.Byte() % 20) {
      case 0:
        nvtxRangePushA(strings.Ascii(in));
        break;
      case 1:
        nvtxRangePop();
        break;
      case 2: {
        nvtxEventAttributes_t a = Attributes(in, strings, h);
        nvtxRangePushEx(&a);
        break;
      }
      case 3:
        nvtxMarkA(strings.Ascii(in));
        break;
      case 4:
        if (h.ranges.size() < 256) h.ranges.push_back(nvtxRangeStartA(strings.Ascii(in)));
        break;
      case 5:
        nvtxRangeEnd(Pick(in, h.ranges));
        break;
      case 6:
        if (h.domains.size() < 64) h.domains.push_back(nvtxDomainCreateA(strings.Ascii(in)));
        break;
      case 7:
        nvtxDomainDestroy(Pick(in, h.domains));
        break;
      case 8: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        nvtxEventAttributes_t a = Attributes(in, strings, h);
        nvtxDomainRangePushEx(d, &a);
        break;
      }
      case 9:
        nvtxDomainRangePop(Pick(in, h.domains));
        break;
      case 10: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        nvtxEventAttributes_t a = Attributes(in, strings, h);
        nvtxDomainMarkEx(d, &a);
        break;
      }
      case 11: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        nvtxEventAttributes_t a = Attributes(in, strings, h);
        const nvtxRangeId_t id = nvtxDomainRangeStartEx(d, &a);
        if (h.ranges.size() < 256) h.ranges.push_back(id);
        break;
      }
      case 12: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        nvtxDomainRangeEnd(d, Pick(in, h.ranges));
        break;
      }
      case 13: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, strings.Ascii(in));
        if (h.strings.size() < 256) h.strings.push_back(s);
        break;
      }
      case 14: {
        nvtxDomainHandle_t d = Pick(in, h.domains);
        const auto category = static_cast<uint32_t>(in.U64());
        nvtxDomainNameCategoryA(d, category, strings.Ascii(in));
        break;
      }
      case 15: {
        const auto category = static_cast<uint32_t>(in.U64());
        nvtxNameCategoryA(category, strings.Ascii(in));
        break;
      }
      case 16: {
        const auto tid = static_cast<uint32_t>(in.U64());
        nvtxNameOsThreadA(tid, strings.Ascii(in));
        break;
      }
      case 17:
        nvtxRangePushW(strings.Wide(in));
        break;
      case 18:
        nvtxMarkW(strings.Wide(in));
        break;
      case 19: {
        nvtxEventAttributes_t a = Attributes(in, strings, h);
        nvtxMarkEx(&a);
        break;
      }
    }
  }
  return 0;
}
