#!/usr/bin/env python3
"""Writes an Nsight Systems-like SQLite export with PyTorch emit_nvtx range
names: every op range is named after its call ("aten::mm, seq = 812,
op_id = 40213", some with ", sizes = [[8, 512], [512]]"), so nearly every
range instance has a distinct raw name, as in a real emit_nvtx capture (18,494
distinct texts among 19,118 ranges in h100_2gpu_mfu.sqlite). The tables and
columns are those of an nsys 2024+ export (schema 3.x) that the reporter's nsys
importer reads: StringIds, NVTX_EVENTS (inline text),
CUPTI_ACTIVITY_KIND_RUNTIME and CUPTI_ACTIVITY_KIND_KERNEL.

  synthetic_nsys_export.py OUT.sqlite [--ops N] [--seed S]
"""
import argparse
import os
import random
import sqlite3

OPS = ["aten::mm", "aten::addmm", "aten::add", "aten::mul", "aten::to", "aten::copy_",
       "aten::empty", "aten::empty_strided", "aten::view", "aten::_unsafe_view", "aten::neg",
       "aten::cat", "aten::stack", "aten::softmax", "aten::_softmax", "aten::layer_norm",
       "aten::native_layer_norm", "aten::linear", "aten::matmul", "aten::bmm", "aten::silu",
       "aten::embedding", "aten::transpose", "aten::reshape", "aten::sum", "aten::div"]
KERNELS = ["ampere_sgemm_128x64_tn", "void at::native::elementwise_kernel<128, 2>(int)",
           "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>()",
           "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>()",
           "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
           "void at::native::reduce_kernel<512, 1>()", "void cutlass::Kernel2<gemm>()"]
PUSH_POP = 59
GLOBAL_PID = 144 << 24
MAIN_TID = GLOBAL_PID | 144
AUTOGRAD_TID = GLOBAL_PID | 145


def op_name(rng, op, seq, op_id):
    name = "%s, seq = %d, op_id = %d" % (op, seq, op_id) if rng.random() < 0.6 else \
        "%s, op_id = %d" % (op, op_id)
    if rng.random() < 0.3:
        name += ", sizes = [[%d, %d], [%d]]" % (rng.choice([8, 16, 32]), rng.choice([512, 4096]),
                                               rng.choice([512, 4096]))
    return name


def generate(path, ops=40000, seed=1):
    rng = random.Random(seed)
    if os.path.exists(path):
        os.remove(path)
    con = sqlite3.connect(path)
    con.executescript("""
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
        rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
        endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
        int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
        floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
        eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
        nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
        shortName INTEGER NOT NULL, registersPerThread INTEGER NOT NULL,
        gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
        blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
        staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
        graphNodeId INTEGER, graphId INTEGER);
    """)
    strings = {"cudaLaunchKernel": 1}
    for i, k in enumerate(KERNELS):
        strings[k] = 10 + i
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(v, k) for k, v in strings.items()])
    nvtx, runtime, kernels = [], [], []
    t = 1_000_000
    gpu_t = t
    correlation = 0
    seq = 0
    op_id = 990000
    step = 0
    done = 0
    while done < ops:
        # One training step: a top-level range, the forward ops on the main
        # thread, then the backward ops on the autograd thread.
        step_start = t
        step_ops = min(rng.randint(300, 500), ops - done)
        for i in range(step_ops):
            backward = i >= step_ops * 2 // 3
            tid = AUTOGRAD_TID if backward else MAIN_TID
            op = rng.choice(OPS)
            if backward:
                op = op.replace("aten::", "").capitalize() + "Backward0"
            op_id += 1
            seq += 0 if backward else 1
            name = op_name(rng, op, seq, op_id)
            start = t
            # A child op (aten::empty under aten::linear, ...) now and then.
            children = []
            if rng.random() < 0.25:
                op_id += 1
                cs = start + 300
                children.append((cs, cs + rng.randint(500, 2000),
                                 op_name(rng, rng.choice(OPS), seq, op_id)))
            t = (children[-1][1] if children else start) + rng.randint(500, 3000)
            if rng.random() < 0.5:
                correlation += 1
                api_start = t - 400
                runtime.append((api_start, api_start + 300, 0, tid, correlation, 1, 0))
                gpu_t = max(gpu_t, api_start + 2000)
                dur = rng.randint(2000, 40000)
                kernels.append((gpu_t, gpu_t + dur, 0, 1, 7, correlation, GLOBAL_PID,
                                10 + rng.randrange(len(KERNELS)), 10, 32, 128, 1, 1, 256, 1, 1,
                                0, 0, None, None))
                gpu_t += dur + 500
            end = t
            nvtx.append((start, end, PUSH_POP, name, tid))
            for cs, ce, name in children:
                nvtx.append((cs, ce, PUSH_POP, name, tid))
            t += rng.randint(200, 800)
            done += 1
        nvtx.append((step_start - 100, t, PUSH_POP, "step %d" % step, MAIN_TID))
        step += 1
        t += 5000
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
        "VALUES (?, ?, ?, ?, ?, 0)", sorted(nvtx))
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                    runtime)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + ", ".join("?" * 20) + ")",
                    kernels)
    con.commit()
    con.close()
    return len(nvtx), len(runtime), len(kernels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ops", type=int, default=40000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ranges, calls, kernels = generate(args.out, args.ops, args.seed)
    print("%s: %d ranges, %d runtime calls, %d kernels" % (args.out, ranges, calls, kernels))


if __name__ == "__main__":
    main()
