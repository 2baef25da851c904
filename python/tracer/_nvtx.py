"""Which NVTX client pushes the ranges, and whether a tracer is listening.

Two real clients, both of which load the tool named by NVTX_INJECTION64_PATH
(checked with torch 2.15+cu132 on a machine without a GPU or driver):

  * ``torch``: ``torch._C._nvtx`` (what ``torch.cuda.nvtx`` calls). It is
    present in CUDA builds of torch whether or not a GPU is there. Ranges land
    in NVTX's default domain, like those of ``torch.cuda.nvtx.range_push``.
  * ``nvtx``: the ``nvtx`` PyPI package, for torch builds without NVTX
    (CPU-only wheels, where ``torch.cuda.nvtx`` raises). Its default domain
    is NVTX's default domain as well, and it registers each message once as an
    NVTX registered string.

A backend hands out one push callable per range name, made once when hooks
are registered, so the hot path is a single C call with no string handling.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Callable, Optional

# The mark annotate() leaves when it starts the tool.
TOOL_START_MARK = "tracer.torch"

Push = Callable[[], object]
Pop = Callable[[], object]


class Backend:
    """An NVTX client: `make_push(name)` -> callable pushing `name`; `pop`."""

    name = "none"

    def make_push(self, name: str) -> Push:  # pragma: no cover - interface
        raise NotImplementedError

    def pop(self) -> object:  # pragma: no cover - interface
        raise NotImplementedError

    def start_tool(self) -> None:
        """Makes the NVTX client load its tool now (one mark), not at the
        first range, which may come after DataLoader workers have forked."""


class TorchBackend(Backend):
    name = "torch"

    def __init__(self, nvtx_module) -> None:
        self._push = nvtx_module.rangePushA
        self.pop = nvtx_module.rangePop
        self._mark = nvtx_module.markA

    def start_tool(self) -> None:
        self._mark(TOOL_START_MARK)

    def make_push(self, name: str) -> Push:
        return functools.partial(self._push, name)


class NvtxPackageBackend(Backend):
    name = "nvtx"

    def __init__(self, nvtx_package) -> None:
        # None = NVTX's default domain. The package returns a do-nothing
        # domain when no tool is attached; that still works, just silently.
        self._domain = nvtx_package.get_domain(None)
        self.pop = self._domain.pop_range
        self._mark = nvtx_package.mark

    def start_tool(self) -> None:
        self._mark(TOOL_START_MARK)

    def make_push(self, name: str) -> Push:
        attributes = self._domain.get_event_attributes(message=name)
        return functools.partial(self._domain.push_range, attributes)


class NullBackend(Backend):
    name = "none"

    def make_push(self, name: str) -> Push:
        return _noop

    def pop(self) -> object:
        return None


def _noop() -> None:
    return None


def _torch_nvtx_module():
    try:
        from torch._C import _nvtx  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _nvtx if hasattr(_nvtx, "rangePushA") else None


def select_backend(prefer: Optional[str] = None) -> Backend:
    """`prefer`: "torch", "nvtx" or None (torch first, then the package).
    TRACER_TORCH_NVTX=torch|nvtx sets the default preference."""
    prefer = prefer or os.environ.get("TRACER_TORCH_NVTX") or None
    order = [prefer] if prefer else ["torch", "nvtx"]
    for choice in order:
        if choice == "torch":
            module = _torch_nvtx_module()
            if module is not None:
                return TorchBackend(module)
        elif choice == "nvtx":
            try:
                import nvtx  # type: ignore[import-not-found]
            except ImportError:
                continue
            return NvtxPackageBackend(nvtx)
        else:
            warnings.warn(
                f"tracer.torch: unknown NVTX client {choice!r} (expected torch or nvtx); "
                "no ranges will be pushed",
                stacklevel=3,
            )
            return NullBackend()
    warnings.warn(
        "tracer.torch: neither torch._C._nvtx (a CUDA build of torch) nor the `nvtx` "
        f"package is available{' as asked' if prefer else ''}; no ranges will be pushed "
        "(pip install nvtx)",
        stacklevel=3,
    )
    return NullBackend()


def tracer_attached(environ=os.environ) -> bool:
    """True when an NVTX tool is configured for this process: the variable
    `tracer run` sets (NVTX_INJECTION64_PATH, any tool honours it), or
    libtracer preloaded (its constructor sets that variable itself, but only
    once it runs, which may be after this check in an embedded interpreter)."""
    if environ.get("NVTX_INJECTION64_PATH"):
        return True
    return "libtracer" in environ.get("LD_PRELOAD", "")
