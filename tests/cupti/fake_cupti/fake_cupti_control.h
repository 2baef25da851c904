/* Control API of the fake libcupti (libfake_cupti.so), for the fake driver
 * that plays libcuda and for tests. Each call plays one CUDA API call the way
 * the real driver + CUPTI would present it to a CUPTI client: a fresh
 * process-wide correlation id, ENTER/EXIT callbacks on the calling thread, an
 * API activity record in the calling thread's buffer, and the GPU record
 * later, on the fake's worker thread. Functions return the correlation id of
 * the outermost API call. */
#ifndef TRACER_TESTS_FAKE_CUPTI_CONTROL_H_
#define TRACER_TESTS_FAKE_CUPTI_CONTROL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int driver;       /* 0: runtime API launch (cbid default 505), 1: driver (307) */
  uint32_t cbid;    /* 0 = the default for the domain */
  const char* name; /* kernel (mangled) name */
  uint32_t device, context, stream;
  uint64_t duration_ns;
  int32_t grid[3], block[3];
  int32_t static_smem, dynamic_smem;
  uint16_t registers;
  uint64_t module; /* 0, or fakeCuptiModuleLoad's handle: the name is the module's */
} FakeKernelLaunch;

typedef struct {
  uint64_t buffers_requested, buffers_declined, buffers_completed;
  uint64_t records_written, records_dropped;
  uint64_t callbacks_invoked;
  uint64_t pending_ops;
} FakeCuptiStats;

/* Make `function` (e.g. "cuptiSubscribe") return `result` from now on; 0
 * clears. Also read at load from FAKE_CUPTI_ERRORS="name=code,name=code". */
void fakeCuptiSetError(const char* function, int result);
/* Another tool already holds CUPTI (FAKE_CUPTI_OTHER_SUBSCRIBER). */
void fakeCuptiSetOtherSubscriber(const char* name);
/* Use at most this many bytes of each client buffer, so records of one run
 * spread over many buffers (FAKE_CUPTI_BUFFER_LIMIT); 0 = whole buffer. */
void fakeCuptiSetBufferLimit(size_t bytes);
/* Complete pending GPU work in launch order instead of by end time. */
void fakeCuptiSetInOrder(int in_order);
/* A GPU that lags like a real one: each op starts launch_latency_ns after its
 * launch call (and after its stream's previous op), completes when the clock
 * passes its end (its record then reaches a buffer that FlushAll(0) returns),
 * launch calls block while queue_depth ops are unfinished (0 = no limit), and
 * cudaDeviceSynchronize waits for the work. Without this call, work
 * completes only at a synchronize (and starts 1 us after its launch). */
void fakeCuptiSetGpu(uint64_t launch_latency_ns, size_t queue_depth);

uint32_t fakeCuptiLaunchKernel(const FakeKernelLaunch* launch);
/* copy_kind: CUpti_ActivityMemcpyKind. Runtime copies nest a driver call. */
uint32_t fakeCuptiMemcpy(int driver, int copy_kind, uint64_t bytes, uint32_t stream,
                         uint64_t duration_ns);
uint32_t fakeCuptiMemset(int driver, uint64_t bytes, uint32_t value, uint32_t stream,
                         uint64_t duration_ns);
/* A non-launch API call (e.g. cudaStreamSynchronize), to exercise the shared
 * correlation counter and API records. */
uint32_t fakeCuptiApiCall(int driver, uint32_t cbid, uint64_t duration_ns);
/* cudaDeviceSynchronize: the GPU finishes every launched op (records then
 * reach the worker thread's buffers) and a synchronization record is made. */
uint32_t fakeCuptiSynchronize(void);

/* CUDA graphs: a graph of `nodes` kernel nodes named kernel_0, kernel_1, ...
 * (cudaGraphCreate, then cudaGraphAddKernelNode each, GRAPHNODE_CREATED
 * between its ENTER and EXIT); more kernel, memcpy and memset nodes; an
 * instantiation (a new exec with its own id, whose nodes are clones with new
 * ids: GRAPHNODE_CREATED then GRAPHNODE_CLONED per node) and launches
 * (cudaGraphLaunch; every record of one launch carries the launch's
 * correlation id, the exec's id as graphId and the clone's id as
 * graphNodeId). Handles are > 0. */
uint64_t fakeCuptiGraphCreate(int nodes, const char* kernel, uint64_t duration_ns);
uint32_t fakeCuptiGraphAddKernelNode(uint64_t graph, const char* kernel, uint64_t duration_ns);
uint32_t fakeCuptiGraphAddMemcpyNode(uint64_t graph, int copy_kind, uint64_t bytes,
                                     uint64_t duration_ns);
uint32_t fakeCuptiGraphAddMemsetNode(uint64_t graph, uint64_t bytes, uint32_t value,
                                     uint64_t duration_ns);
uint64_t fakeCuptiGraphInstantiate(uint64_t graph);
uint32_t fakeCuptiGraphLaunch(uint64_t exec, uint32_t stream);
/* cudaGraphExecUpdate: the exec keeps its id and node ids, its nodes take the
 * parameters of the graph's nodes paired by position; 0, or 910
 * (cudaErrorGraphExecUpdateFailure) when the topology differs. The EXIT
 * callback's functionReturnValue points to the result. */
int fakeCuptiGraphExecUpdate(uint64_t exec, uint64_t graph);
/* cudaGraphDestroy or cudaGraphExecDestroy (GRAPH_DESTROY_STARTING /
 * GRAPHEXEC_DESTROY_STARTING); execs made from a graph outlive it. */
void fakeCuptiGraphDestroy(uint64_t graph_or_exec);
/* Stream capture (cudaStreamBeginCapture / cudaStreamEndCapture): launches,
 * copies and sets on the stream in between add nodes to the capture graph
 * (GRAPHNODE_CREATED inside their call) and run nothing. End returns the
 * graph's handle. */
uint32_t fakeCuptiStreamBeginCapture(uint32_t stream);
uint64_t fakeCuptiStreamEndCapture(uint32_t stream);
/* Execs' own graphs report a cuptiGetGraphId other than the exec id (off by
 * default: equal, as Proton relies on). */
void fakeCuptiSetDistinctExecGraphIds(int distinct);

/* Modules: a loaded module holds one kernel whose records point to the
 * module's copy of the name. Unloading (cuModuleUnload) completes pending
 * work, raises MODULE_UNLOAD_STARTING and frees the module; the next load
 * reuses the freed name's address. */
uint64_t fakeCuptiModuleLoad(const char* kernel);
void fakeCuptiModuleUnload(uint64_t module);
/* The address kernel records of the module carry (tests check the reuse). */
const char* fakeCuptiModuleKernelName(uint64_t module);

uint32_t fakeCuptiProfilerStart(void);
uint32_t fakeCuptiProfilerStop(void);
uint32_t fakeCuptiDeviceReset(void);
void fakeCuptiContextDestroy(void);
/* CUDA contexts per device: CONTEXT_CREATED / CONTEXT_DESTROY_STARTING with
 * a context whose cuptiGetDeviceId is `device` (< 16). */
void fakeCuptiContextCreate(uint32_t device);
void fakeCuptiContextDestroyOn(uint32_t device);

/* PM sampling, device half (fake_pm_sampling.cc). The host half
 * (cuptiProfilerHost*: chips, metrics, config images, passes) is the real
 * libcupti's, loaded from FAKE_CUPTI_REAL_LIBRARY (default: the toolkit's
 * libcupti.so.13); evaluation of the fake's own counter-data images gives the
 * scripted values. A device's chip (default GA102) and whether
 * cuptiProfilerDeviceSupported calls it supported (architecture flag). */
void fakeCuptiPmSetDevice(uint32_t device, const char* chip, int supported);
/* The GPU's clock for PM sample times (the global timer: CLOCK_REALTIME). */
uint64_t fakeCuptiPmGpuNow(void);
/* One sample into the device's hardware buffer: [start, end] on the GPU
 * clock, one value per configured metric, in the order the client passed
 * them to cuptiPmSamplingGetCounterDataSize. */
void fakeCuptiPmAddSample(uint32_t device, uint64_t start, uint64_t end, const double* values,
                          size_t count);
/* A keep-oldest overflow after the samples queued so far: the decode that
 * reaches it returns CUPTI_ERROR_OUT_OF_MEMORY with overflow = 1. */
void fakeCuptiPmOverflow(uint32_t device);
/* The device's next cuptiPmSamplingDecodeData blocks `ms` (a hung driver). */
void fakeCuptiPmStall(uint32_t device, uint32_t ms);
/* Samples decoded so far, and whether the device is enabled / started. */
uint64_t fakeCuptiPmDecodedSamples(uint32_t device);
int fakeCuptiPmState(uint32_t device); /* bit 0 enabled, bit 1 started */

/* Records CUPTI lost on its own (device buffer full). */
void fakeCuptiAddDropped(uint64_t records);

void fakeCuptiGetStats(FakeCuptiStats* out);

/* Replay of a recorded trace (tests/cupti/replay). The caller sets the
 * tracer's test clock (tracerTestSetClockNs) to the recorded time before each
 * call, so API records and callbacks carry recorded times. */
/* The name cuptiGetCallbackName gives for (domain, cbid) from now on. */
void fakeCuptiReplaySetCallbackName(int driver, uint32_t cbid, const char* name);
/* ENTER / EXIT callbacks with a recorded correlation id; EXIT also writes the
 * API activity record [start, now] on the calling thread. */
void fakeCuptiReplayApiEnter(int driver, uint32_t cbid, uint32_t correlation);
void fakeCuptiReplayApiExit(int driver, uint32_t cbid, uint32_t correlation, uint64_t start);
/* Queues a kernel (CUpti_ActivityKernel10), memcpy (Memcpy6) or memset
 * (Memset4) record with its own start/end; written, in end-time order, when
 * the pending work completes. Returns 0 when the kind is off or unknown. */
int fakeCuptiReplayGpuRecord(const void* record, size_t size);
/* Completes every queued GPU op (like a device synchronize, no API call). */
void fakeCuptiReplayCompleteAll(void);

#ifdef __cplusplus
}
#endif

#endif /* TRACER_TESTS_FAKE_CUPTI_CONTROL_H_ */
