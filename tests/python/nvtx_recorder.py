"""A recording NVTX shim for the tracer.torch tests, and the replay that
rebuilds each thread's range tree from what it recorded.

Recorder stands for an NVTX client: it logs push(name) / pop() with the
calling thread and a timestamp instead of calling NVTX, so a test sees
exactly the sequence libtracer would receive. A test may add its own
(thread, "mark", label) events; replay hangs each on the range open on that
thread at the time.
"""

import threading
import time

from tracer import _nvtx


class Recorder(_nvtx.Backend):
    name = "recorder"

    def __init__(self):
        # (thread ident, "push", name, ns) / (thread ident, "pop", None, ns)
        self.events = []
        self._lock = threading.Lock()

    def make_push(self, name):
        def push():
            with self._lock:
                self.events.append((threading.get_ident(), "push", name, time.perf_counter_ns()))

        return push

    def pop(self):
        with self._lock:
            self.events.append((threading.get_ident(), "pop", None, time.perf_counter_ns()))

    def mark(self, label):
        with self._lock:
            self.events.append((threading.get_ident(), "mark", label, time.perf_counter_ns()))

    def start_tool(self):
        self.tool_starts = getattr(self, "tool_starts", 0) + 1


class Node:
    def __init__(self, name, parent, start_ns=0):
        self.name, self.parent, self.children = name, parent, []
        self.start_ns, self.end_ns, self.marks = start_ns, start_ns, []

    @property
    def depth(self):
        return 0 if self.parent is None else self.parent.depth + 1

    def ancestors(self):
        n = self.parent
        while n is not None:
            yield n
            n = n.parent

    def descendants(self):
        for c in self.children:
            yield c
            yield from c.descendants()


def replay(events):
    """Rebuilds each thread's range tree; fails on a pop without push or a
    range left open. Returns {thread: root Node}."""
    roots, stacks = {}, {}
    for tid, op, name, *rest in events:
        ns = rest[0] if rest else 0
        stack = stacks.setdefault(tid, [roots.setdefault(tid, Node("<root>", None))])
        if op == "push":
            node = Node(name, stack[-1], ns)
            stack[-1].children.append(node)
            stack.append(node)
        elif op == "pop":
            if len(stack) == 1:
                raise AssertionError(f"pop without push on thread {tid}")
            stack.pop().end_ns = ns
        else:
            stack[-1].marks.append(name)
    for tid, stack in stacks.items():
        if len(stack) != 1:
            raise AssertionError(f"thread {tid} left open: {[n.name for n in stack[1:]]}")
    return roots
