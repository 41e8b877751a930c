"""torchtune's activation offloading, for the CPU harness.

torchtune (training/_activation_offloading.py, OffloadActivations with use_streams) registers
saved-tensor hooks around the model's forward: every saved tensor of at least 1024 bytes that is not
a parameter or buffer is copied to pinned CPU memory on a side stream, and the device tensor is kept
in a "forward stash" until five more tensors have been packed; in backward each is copied back when
autograd unpacks it, except that the first unpacking node takes the stash's tensors as they are and
then empties the stash. On a CPU there is no device to leave, so here the copy is made where the
memory tracker does not see it (outside the TorchDispatchMode), which is what leaving the device
looks like to torch.cuda.memory_allocated; the copy back is an ordinary, tracked clone.

torchtune's decoder layers take only the hidden states (RoPE tables are buffers, the causal mask is
None without packing); the harness's HF-style layers also receive the mask, the positions and the
rotary tables, which `exempt` names so that they are neither offloaded nor counted as packs."""

import torch

try:  # torch >= 1.13
    from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily
except ImportError:  # pragma: no cover
    _get_current_dispatch_mode = None
    _pop_mode_temporarily = None

STASH = 5         # OffloadActivations(max_fwd_stash_size=5)
MIN_BYTES = 1024  # OffloadActivations(min_offload_size=1024)


def _untracked_copy(t):
    """A copy the memory tracker does not see: the offloaded tensor's CPU side."""
    if _get_current_dispatch_mode is not None and _get_current_dispatch_mode() is not None:
        with _pop_mode_temporarily():
            return t.detach().clone()
    return t.detach().clone()


class OffloadActivations(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self):
        self.exempt = []     # tensors the layers get that torchtune's layers do not
        self.offloaded = {}  # id -> ("cpu", copy) or ("kept", tensor)
        self.stash = {}      # id -> device tensor still alive until STASH more are packed
        self.next_id = 0
        self.unpacked = False
        self.offloaded_bytes = 0  # packed to CPU this forward

        def pack(t):
            if any(t is e for e in self.exempt):
                return ("exempt", t)
            self.next_id += 1
            tid = self.next_id
            if t.numel() * t.element_size() >= MIN_BYTES and not isinstance(t, torch.nn.Parameter):
                for old in [k for k in self.stash if k <= tid - STASH]:
                    del self.stash[old]
                self.offloaded[tid] = ("cpu", _untracked_copy(t))
                self.stash[tid] = t
                self.offloaded_bytes += t.numel() * t.element_size()
            else:
                self.offloaded[tid] = ("kept", t)
            return ("id", tid)

        def unpack(packed):
            kind, value = packed
            if kind == "exempt":
                return value
            where, t = self.offloaded.pop(value)
            if where == "kept":
                return t
            if value in self.stash:
                t = self.stash[value]
            else:
                t = t.clone()  # the copy back to the device: a tracked allocation
            if not self.unpacked:  # the first unpacking node empties the stash
                self.unpacked = True
                self.stash.clear()
            return t

        super().__init__(pack, unpack)

    def begin_forward(self):
        self.exempt = []
        self.stash.clear()
        self.offloaded.clear()
        self.next_id = 0
        self.unpacked = False
        self.offloaded_bytes = 0
