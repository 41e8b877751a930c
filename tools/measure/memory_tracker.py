"""Memory per phase of a training step.

CUDA: the caching allocator's own counters. Before each phase: synchronize and
reset_peak_memory_stats(); after it: max_memory_allocated / memory_allocated /
max_memory_reserved / memory_reserved, and mem_get_info() for what the whole device uses (CUDA
context and other processes included).

CPU: torch has no allocator statistics for the CPU, so an OpTracker (a TorchDispatchMode, below
autograd) sees every aten op of the step, forward, backward and optimizer alike. It adds each new
output storage to a live set and drops storages whose weak reference expired, checking before every
op. The peak is exact at op granularity for tensors created by ops; scratch buffers inside a kernel
and tensors created without the dispatcher are not seen. Without TorchDispatchMode the CPU figures
are null.

On every device the OpTracker also records dtype casts of parameters (autocast's 16-bit weight
copies) so that saved weight copies are not counted as activations.
"""

import torch
from torch.utils._pytree import tree_flatten

import torch_compat

_Mode = torch_compat.dispatch_mode_class()


def _tensors(obj):
    flat, _ = tree_flatten(obj)
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _rewrap_number(func, first, out):
    """torch 1.13: inside a dispatch mode, an op on a 0-dim wrapped number (a Python scalar that
    autograd saved, e.g. an exponent in a backward formula) can come back as a Python number, and
    autograd then fails with "detach returned invalid type int, expected Tensor". Hand back a tensor."""
    returns = func._schema.returns
    if len(returns) != 1 or str(returns[0].type) != "Tensor":
        return out
    if func is torch.ops.aten.detach.default:
        return torch.ops.aten.alias.default(first)
    return torch.scalar_tensor(out, dtype=first.dtype, device=first.device)


if _Mode is not None:
    class OpTracker(_Mode):
        def __init__(self, param_storage_ptrs, track_live, record_events=False):
            super().__init__()
            self.param_ptrs = set(param_storage_ptrs)
            self.weight_copies = {}
            self.track_live = track_live
            self.live = {}  # storage data_ptr -> (weak ref, nbytes)
            self.live_bytes = 0
            self.peak = 0
            self.ops = 0
            # With record_events: ["alloc"|"free", nbytes, op name] in order, and ["phase", name]
            # where a phase begins (the allocation sequence MemBudget's timeline is compared with).
            self.events = [] if record_events else None
            self.current_op = ""

        def mark(self, phase):
            if self.events is not None:
                self.events.append(["phase", phase])

        def register(self, tensors):
            for t in tensors:
                if isinstance(t, torch.Tensor):
                    self._add(t)
            self.peak = max(self.peak, self.live_bytes)

        def _add(self, t):
            if t.device.type == "meta":
                return
            ptr, nbytes = torch_compat.storage_key(t)
            if nbytes == 0:
                return
            entry = self.live.get(ptr)
            if entry is not None:
                if not entry[0].expired():
                    return
                self.live_bytes -= entry[1]
                if self.events is not None:
                    self.events.append(["free", entry[1], self.current_op])
            self.live[ptr] = (torch_compat.storage_weak_ref(t), nbytes)
            self.live_bytes += nbytes
            if self.events is not None:
                self.events.append(["alloc", nbytes, self.current_op])

        def poll(self):
            dead = [ptr for ptr, (ref, _) in self.live.items() if ref.expired()]
            for ptr in dead:
                nbytes = self.live.pop(ptr)[1]
                self.live_bytes -= nbytes
                if self.events is not None:
                    self.events.append(["free", nbytes, self.current_op])

        def reset_peak(self):
            self.poll()
            self.peak = self.live_bytes

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.ops += 1
            self.current_op = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
            if self.track_live:
                self.poll()
            out = func(*args, **kwargs)
            if isinstance(out, (bool, int, float)) and args and isinstance(args[0], torch.Tensor):
                out = _rewrap_number(func, args[0], out)
            outs = _tensors(out)
            if self.track_live:
                for t in outs:
                    self._add(t)
                self.peak = max(self.peak, self.live_bytes)
            if self.param_ptrs and outs:
                ins = [t for t in _tensors((args, kwargs))]
                # A fresh output storage may reuse the address of a freed weight copy: forget it.
                in_ptrs = {torch_compat.storage_key(t)[0] for t in ins}
                for t_out in outs:
                    out_ptr = torch_compat.storage_key(t_out)[0]
                    if out_ptr not in in_ptrs:
                        self.weight_copies.pop(out_ptr, None)
                for t_in in ins:
                    ptr = torch_compat.storage_key(t_in)[0]
                    if ptr not in self.param_ptrs:
                        continue
                    for t_out in outs:
                        out_ptr = torch_compat.storage_key(t_out)[0]
                        if (out_ptr != ptr and t_out.dtype != t_in.dtype and t_out.numel() == t_in.numel()
                                and t_out.dtype.is_floating_point):
                            self.weight_copies[out_ptr] = ptr
            return out
else:  # pragma: no cover - torch without TorchDispatchMode
    OpTracker = None


class PhaseMeter:
    """Start/end/peak bytes per phase; the maximum over micro-steps when a phase repeats."""

    def __init__(self, device, tracker):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.tracker = tracker
        self.phases = {}
        self._start = None

    def method(self):
        if self.cuda:
            return "cuda-caching-allocator"
        if self.tracker is not None and self.tracker.track_live:
            return "cpu-dispatch-live-storages"
        return None

    def begin(self, phase):
        if self.cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._start = torch.cuda.memory_allocated(self.device)
        elif self.tracker is not None and self.tracker.track_live:
            self.tracker.reset_peak()
            self._start = self.tracker.live_bytes
            self.tracker.mark(phase)
        else:
            self._start = None

    def end(self, phase):
        row = {"start_bytes": self._start, "end_bytes": None, "peak_bytes": None}
        if self.cuda:
            torch.cuda.synchronize(self.device)
            free, total = torch.cuda.mem_get_info(self.device)
            row.update({
                "end_bytes": torch.cuda.memory_allocated(self.device),
                "peak_bytes": torch.cuda.max_memory_allocated(self.device),
                "peak_reserved_bytes": torch.cuda.max_memory_reserved(self.device),
                "end_reserved_bytes": torch.cuda.memory_reserved(self.device),
                "device_used_bytes": total - free,
            })
        elif self.tracker is not None and self.tracker.track_live:
            self.tracker.poll()
            row.update({"end_bytes": self.tracker.live_bytes, "peak_bytes": self.tracker.peak})
        prev = self.phases.get(phase)
        if prev is None:
            self.phases[phase] = row
        else:
            for key, value in row.items():
                if key == "start_bytes" or value is None or prev.get(key) is None:
                    continue
                if key.startswith("peak") or key == "device_used_bytes":
                    prev[key] = max(prev[key], value)
                else:
                    prev[key] = value
        return row

    def summary(self):
        peak, peak_phase = None, None
        for name, row in self.phases.items():
            if row.get("peak_bytes") is not None and (peak is None or row["peak_bytes"] > peak):
                peak, peak_phase = row["peak_bytes"], name
        out = {"method": self.method(), "phases": self.phases, "peak_bytes": peak, "peak_phase": peak_phase}
        if self.cuda:
            out["peak_reserved_bytes"] = max(r["peak_reserved_bytes"] for r in self.phases.values())
            out["device_used_bytes"] = max(r["device_used_bytes"] for r in self.phases.values())
        return out
