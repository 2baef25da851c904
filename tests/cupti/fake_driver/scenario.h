// The fake driver's scenario scripts (tests/cupti/scenarios/*.scn): one CUDA
// or NVTX operation per line, optionally prefixed by the thread that runs it,
// so that a test reads as the program it stands for:
//
//   # comment
//   cupti buffer_limit 4096          fake libcupti settings (before init)
//   cupti gpu latency=2000000 queue=4  a GPU that lags: runs work 2 ms after
//                                     its launch at the earliest, in real
//                                     time; launches block with 4 unfinished
//   init                              cuInit: InitializeInjection of CUDA_INJECTION64_PATH
//   thread 1: push forward            nvtxRangePushA
//   thread 1: launch runtime kernel=gemm stream=7 dur=1200 grid=64,1,1 block=256,1,1
//   thread 1: pop
//   memcpy htod bytes=4096 stream=7 dur=300
//   graph create g1 nodes=3 kernel=gk dur=50
//   graph launch g1 stream=9 times=5
//   graph memcpy g1 dtod bytes=64     graph memset g1 bytes=64   graph kernel g1 kernel=k
//   graph instantiate g1 exec=e1      graph update e1 from=g2    graph launch e1
//   capture begin stream=7            capture end g2 stream=7
//   module load m1 kernel=k           launch runtime module=m1   module unload m1
//   sync                              cudaDeviceSynchronize
//   context create device=1           a CUDA context on device 1 (CONTEXT_CREATED)
//   context destroy device=1          its CONTEXT_DESTROY_STARTING
//   pm device 1 chip=GH100 supported=1  PM sampling's device half (fake_pm_sampling.cc)
//   pm anchor                         pm sample at=NS counts from the GPU clock now
//   pm sample device=0 at=0 dur=1000000 values=12.5,40,3
//   pm overflow device=0              pm stall device=0 ms=8000
//   pm wait device=0 state=started    until the tracer started sampling (5 s at most)
//   exit 0
//
// Parsing is separate from running so that a bad script is one clear error
// naming the line.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fake_driver {

struct Op {
  int line = 0;
  int thread = 0;                         // 0 = the main thread
  std::vector<std::string> words;         // positional words, e.g. {"launch", "runtime"}
  std::map<std::string, std::string> kv;  // key=value arguments
  std::string rest;                       // text after the first word (names with spaces)

  const std::string& verb() const { return words[0]; }
  std::string Word(size_t i) const { return i < words.size() ? words[i] : ""; }
  bool Has(const std::string& key) const { return kv.count(key) != 0; }
  uint64_t Num(const std::string& key, uint64_t fallback) const;
  std::string Str(const std::string& key, const std::string& fallback) const;
};

// Parses a whole script; on error returns false with "<line>: <problem>".
bool ParseScenario(const std::string& text, std::vector<Op>* ops, std::string* error);

}  // namespace fake_driver
