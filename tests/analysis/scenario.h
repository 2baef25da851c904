// The scripted program most analysis tests read, as the tracer would have
// recorded it (times in ns):
//
//   main thread (tid 100 == pid)            worker thread (tid 101)
//   step  #1 [0, 10000]
//     fwd #2 [100, 5000]
//       layer #3 [200, 2000]   launches K1 K2 K3
//       layer #4 [2100, 4000]  launches K4 K5 M1
//                                           bwd #5 [5500, 9000] launches K6
//     cpu_only #6 [9100, 9500]  (no GPU work)
//   (no range) launches K7 at 10500
//   K8: a kernel whose launch was never recorded (unattributed)
//   epoch #7: start/end range [0, 10000] opened on the worker thread
//
//   op  name        stream  GPU interval    launch (thread, time, range)
//   K1  gemm        1       [1000, 1400]    main, 300,   #3
//   K2  relu        2       [1200, 1300]    main, 400,   #3
//   K3  gemm        1       [1500, 1600]    main, 500,   #3
//   K4  gemm        1       [2500, 2900]    main, 2200,  #4
//   K5  relu        1       [2800, 3000]    main, 2300,  #4
//   M1  HtoD 1000 B 2       [3500, 3600]    main, 2400,  #4
//   K6  bwd_kernel  2       [6000, 6500]    worker, 5600, #5
//   K7  outside     1       [11000, 11100]  main, 10500, none
//   K8  lost        1       [12000, 12100]  (no launch record)
//
// With `api_only`, the same program as an importer produces it: no launch
// records, only CUDA API records (thread, start) with the correlation ids,
// and ranges without parent ids.
#pragma once

#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis::testing {

inline void BuildScenario(TraceFileBuilder* b, bool api_only = false) {
  b->Thread(1, 100, "main");
  b->Thread(2, 101, "autograd");
  b->Stream(1, 0, 7);
  b->Stream(2, 0, 8);
  const auto parent = [&](uint64_t id) { return api_only ? 0 : id; };
  b->Range(1, 0, 1, "step", 0, 10000, 0);
  b->Range(2, parent(1), 1, "fwd", 100, 5000, 1);
  b->Range(3, parent(2), 1, "layer", 200, 2000, 2);
  b->Range(4, parent(2), 1, "layer", 2100, 4000, 2);
  b->Range(5, 0, 2, "bwd", 5500, 9000, 0);
  b->Range(6, parent(1), 1, "cpu_only", 9100, 9500, 1);
  b->Range(7, 0, 2, "epoch", 0, 10000, 0, RangeKind::kStartEnd);
  b->Frame();
  struct Op {
    uint64_t corr;
    uint32_t thread;
    uint64_t time, range;
  };
  const Op launches[] = {{1, 1, 300, 3},  {2, 1, 400, 3},  {3, 1, 500, 3},  {4, 1, 2200, 4},
                         {5, 1, 2300, 4}, {8, 1, 2400, 4}, {6, 2, 5600, 5}, {7, 1, 10500, 0}};
  for (const Op& l : launches) {
    if (api_only) {
      b->Api(l.corr == 8 ? "cudaMemcpyAsync" : "cudaLaunchKernel", l.thread, l.time, l.time + 20,
             l.corr);
    } else {
      b->Launch(l.corr, l.thread, l.time, l.range);
    }
  }
  b->Kernel("gemm", 1, 1000, 1400, 1);
  b->Kernel("relu", 2, 1200, 1300, 2);
  b->Kernel("gemm", 1, 1500, 1600, 3);
  b->Kernel("gemm", 1, 2500, 2900, 4);
  b->Kernel("relu", 1, 2800, 3000, 5);
  b->Kernel("bwd_kernel", 2, 6000, 6500, 6);
  b->Kernel("outside", 1, 11000, 11100, 7);
  b->Kernel("lost", 1, 12000, 12100, 99);
  b->Memcpy(/*HtoD*/ 1, 1000, 2, 3500, 3600, 8);
  b->Frame();
}

}  // namespace tracer::analysis::testing
