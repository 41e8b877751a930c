"""Op-level selective activation checkpointing, as torchtitan applies it (selective_ac_option "op",
torchtitan/distributed/activation_checkpoint.py, _custom_policy, 2024-2025), for torch releases
without torch.utils.checkpoint's create_selective_checkpoint_contexts (added in 2.4).

Inside each checkpointed layer a TorchDispatchMode (below autograd) numbers the layer's aten.mm calls
from 1 and keeps the output of the odd ones, and of SDPA's fused kernels where this torch has them;
when the checkpoint runs the layer again in backward, those ops hand the kept tensor back instead of
running, as torch's SAC caching modes do. Everything else is recomputed. The harness wraps the layer
in reentrant checkpointing (its other cases use it), which frees the recomputed tensors as backward
consumes them, as torch 2.x's non-reentrant checkpoint does.
"""

import torch
import torch.utils.checkpoint

import torch_compat

_Mode = torch_compat.dispatch_mode_class()

_ALWAYS_SAVED = tuple(
    op for op in (getattr(torch.ops.aten, name, None) for name in (
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention"))
    if op is not None)


def _always_saved(func):
    return any(func is getattr(op, "default", None) for op in _ALWAYS_SAVED)


if _Mode is not None:
    class _PolicyMode(_Mode):
        def __init__(self, kept, recompute):
            super().__init__()
            self.kept = kept
            self.recompute = recompute
            self.matmuls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            saved = _always_saved(func)
            if func is torch.ops.aten.mm.default:
                self.matmuls += 1
                saved = self.matmuls % 2 == 1
            if not saved:
                return func(*args, **kwargs)
            if self.recompute:
                return self.kept.pop(0)
            out = func(*args, **kwargs)
            self.kept.append(out.detach() if isinstance(out, torch.Tensor)
                             else type(out)(o.detach() if isinstance(o, torch.Tensor) else o for o in out))
            return out


def supported():
    return _Mode is not None


def checkpoint(function, *args, registry=None):
    """Runs function(*args) under reentrant checkpointing with the op-level policy; the list of
    tensors it keeps is appended to `registry` when one is given."""
    kept = []
    if registry is not None:
        registry.append(kept)
    state = {"recompute": False}

    def run(*inner):
        with _PolicyMode(kept, state["recompute"]):
            out = function(*inner)
        state["recompute"] = True
        return out

    return torch.utils.checkpoint.checkpoint(run, *args, use_reentrant=True)


def kept_bytes(tensors):
    """Bytes of distinct storages among kept tensors."""
    seen = {}
    for t in tensors:
        key = torch_compat.storage_key(t)
        seen[key[0]] = key[1]
    return sum(seen.values())
