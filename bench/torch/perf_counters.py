"""Hardware counters of the whole calling process, for bench_step.py.

perf_event_open(2) through ctypes: each counter is opened on the calling
thread with `inherit`, so it also counts every thread the process starts
afterwards (torch's intra-op pool, the tracer's writer); reading it sums
them, live and exited. Open the counters before the process starts any
thread: threads that already run are not counted.

Instructions retired are close to deterministic (work done, not time), so a
few paired blocks resolve a fraction of a percent on a loaded machine where
CPU time cannot; cycles are time again, with the frequency taken out.

Counters(...).read() gives {name: count} scaled for multiplexing. Where
perf_event_open refuses (no PMU, as in most VMs; perf_event_paranoid; a
seccomp filter), Counters.open() returns None and a one-line reason.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import struct

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_SW_TASK_CLOCK = 1

_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
_FLAG_INHERIT = 1 << 1
_FLAG_EXCLUDE_KERNEL = 1 << 5
_FLAG_EXCLUDE_HV = 1 << 6
_PERF_FLAG_FD_CLOEXEC = 1 << 3
_ATTR_SIZE_VER0 = 64  # every kernel with perf events takes this layout
_SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}

# name -> (type, config, user only); the bench's default set.
HARDWARE = {
    "instructions": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, False),
    "instructions:u": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, True),
    "cycles": (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, False),
}


class _Attr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


assert ctypes.sizeof(_Attr) == _ATTR_SIZE_VER0


def _open_one(kind, config, user_only):
    """An fd counting (kind, config) on this thread and the threads it
    starts, or raises OSError."""
    nr = _SYSCALL.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, f"perf_event_open: no syscall number for {platform.machine()}")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = _Attr(type=kind, size=_ATTR_SIZE_VER0, config=config,
                 read_format=_FORMAT_TOTAL_TIME_ENABLED | _FORMAT_TOTAL_TIME_RUNNING,
                 flags=_FLAG_INHERIT | _FLAG_EXCLUDE_HV
                 | (_FLAG_EXCLUDE_KERNEL if user_only else 0))
    fd = libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_int(0),
                      ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(_PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def _paranoid() -> str:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return f.read().strip()
    except OSError:
        return "?"


class Counters:
    """Counters of this process and the threads it starts from now on."""

    def __init__(self, fds):
        self._fds = fds  # name -> fd
        self.multiplexed = False  # set by read() once a counter was not always on

    @classmethod
    def open(cls, events=None):
        """(Counters, None), or (None, one-line reason) when no counter of
        `events` (default HARDWARE) can be opened. Counters the kernel
        refuses while others open are left out; the reason says which."""
        events = HARDWARE if events is None else events
        fds, refused = {}, []
        for name, (kind, config, user_only) in events.items():
            try:
                fds[name] = _open_one(kind, config, user_only)
            except OSError as e:
                refused.append((name, e))
        by_reason = {}
        for name, e in refused:
            by_reason.setdefault(_explain(e), []).append(name)
        why = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
        if not fds:
            return None, f"hardware counters unavailable: perf_event_open refused {why}"
        return cls(fds), (f"counters left out: {why}" if why else None)

    @property
    def names(self):
        return list(self._fds)

    def read(self):
        """{name: count so far}, summed over the threads, scaled by
        enabled/running time when the kernel multiplexed a counter."""
        out = {}
        for name, fd in self._fds.items():
            value, enabled, running = struct.unpack("=QQQ", os.read(fd, 24))
            if running and running < enabled:
                self.multiplexed = True
                value = int(value * enabled / running)
            out[name] = value
        return out

    def close(self):
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


def _explain(e: OSError) -> str:
    name = errno.errorcode.get(e.errno, str(e.errno))
    if e.errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        return f"{name}, no PMU for it (a VM that exposes none?)"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"{name}, not permitted (kernel.perf_event_paranoid={_paranoid()})"
    if e.errno == errno.ENOSYS:
        return f"{name}, perf_event_open is not available"
    return f"{name} ({e.strerror})"


class Callgrind:
    """Instructions counted by valgrind's callgrind, for machines whose
    kernel gives no hardware counter: the process runs under

        valgrind --tool=callgrind --dump-before=getloadavg \\
                 --callgrind-out-file=PREFIX ...

    and read() calls getloadavg(3) (which nothing else in the process
    calls), so callgrind writes the instructions of all threads since its
    last dump to PREFIX.N and starts again from zero; read() sums the
    dumps' totals (whoever made them) and removes them. User space only,
    on valgrind's synthetic CPU (no AVX-512), about 50-100x slower: the
    counts are the program's, its times are not."""

    MARKER = "getloadavg"
    NAME = "callgrind:Ir"

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.total = 0
        self.multiplexed = False
        self.names = [self.NAME]

    @staticmethod
    def valgrind_args(prefix: str):
        return ["valgrind", "--tool=callgrind", f"--dump-before={Callgrind.MARKER}",
                "--dump-line=no", f"--callgrind-out-file={prefix}"]

    def read(self):
        os.getloadavg()
        directory, base = os.path.split(self.prefix)
        for name in os.listdir(directory or "."):
            if not (name.startswith(base + ".") and name[len(base) + 1:].isdigit()):
                continue
            path = os.path.join(directory, name)
            with open(path) as f:
                for line in f:
                    if line.startswith(("summary:", "totals:")):
                        self.total += int(line.split()[1])
                        break
            os.remove(path)
        return {self.NAME: self.total}

    def close(self):
        pass
