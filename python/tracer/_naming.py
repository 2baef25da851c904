"""Range names for module paths, by the mLoRA profiling convention (pure, no torch).

A module path such as ``layers.3.q.lora_a.alpaca`` becomes ``lora_a_alpaca_3``:
the base name (the innermost path part that is neither a list index nor an
adapter key), then the adapter, then the layer index, each as its own
``_``-separated part. `tracer report --groups` relies on that shape: a
per-layer name ends with ``_<layer_id>`` and an adapter name never ends with
``_<digits>``, so ``f_lora_a_{adapter}_{layer_id}`` splits one way only.

Rules, in order of the path's parts:
  * the first all-digit part is the layer index (the transformer block's
    position in its ModuleList);
  * a later all-digit part (a list inside the layer, e.g. MoE experts) is glued
    to the part before it (``experts.5`` -> ``experts5``) and the base name
    runs from that part to the end (``experts5_w1``), so it stays distinct;
  * a part that is a key of an adapter dict (an ``nn.ModuleDict`` by default)
    is the adapter; the innermost such key wins;
  * the root module (empty path) has no name.

`qualify` prefixes the enclosing parts (``q_lora_a_alpaca_3``): tracer.torch
uses it only for modules that would otherwise share a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Optional

_TRAILING_INDEX = re.compile(r"_(\d+)$")


@dataclass(frozen=True)
class ModuleName:
    base: str
    adapter: Optional[str] = None
    layer: Optional[int] = None

    def range_name(self, prefix: str) -> str:
        parts = [prefix + self.base]
        if self.adapter is not None:
            parts.append(self.adapter)
        if self.layer is not None:
            parts.append(str(self.layer))
        return "_".join(parts)


def sanitize_adapter(adapter: str) -> str:
    """An adapter named like ``alpaca_2`` would read as adapter ``alpaca`` of
    layer 2; its trailing ``_<digits>`` becomes ``-<digits>``. An all-digit
    adapter gets an ``a`` in front for the same reason."""
    if adapter.isdigit():
        return "a" + adapter
    return _TRAILING_INDEX.sub(r"-\1", adapter)


def parse_module_path(
    path: str, adapter_positions: Collection[int] = (), qualify: int = 0
) -> Optional[ModuleName]:
    """Splits a dotted module path into base name, adapter and layer index.

    `adapter_positions` are the indices (in ``path.split('.')``) of the parts
    that are adapter keys. `qualify`: how many enclosing path parts (other
    than indices and adapter keys) to put in front of the base name, to tell
    apart modules whose names would otherwise be the same
    (``layers.3.q.lora_a.alpaca`` with 1: ``q_lora_a``). Returns None for the
    root module.
    """
    if not path:
        return None
    layer: Optional[int] = None
    adapter: Optional[str] = None
    tokens: list[str] = []
    indexed_from: Optional[int] = None  # first token carrying a nested index
    for i, part in enumerate(path.split(".")):
        if i in adapter_positions:
            adapter = part
        elif part.isdigit():
            if layer is None:
                layer = int(part)
            elif tokens:
                tokens[-1] += part
                if indexed_from is None:
                    indexed_from = len(tokens) - 1
            else:
                tokens.append(part)
        else:
            tokens.append(part)
    if not tokens:
        # Only indices and adapter keys, e.g. a bare ``0``: the index is the
        # name, so it still gets a range of its own.
        tokens = [adapter or str(layer)]
        if adapter is not None:
            adapter = None
        else:
            layer = None
    first = indexed_from if indexed_from is not None else len(tokens) - 1
    base = "_".join(tokens[max(0, first - qualify):])
    if adapter is not None:
        adapter = sanitize_adapter(adapter)
    return ModuleName(base=base, adapter=adapter, layer=layer)


def range_name(
    path: str, prefix: str, adapter_positions: Collection[int] = ()
) -> Optional[str]:
    """``parse_module_path(...).range_name(prefix)``; None for the root."""
    name = parse_module_path(path, adapter_positions)
    return None if name is None else name.range_name(prefix)
