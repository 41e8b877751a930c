"""What differs between torch versions, in one place.

Everything here is probed at run time on the device being measured, so the notes written into the
JSON describe the torch that produced the numbers, not the torch this file was written against.
"""

import contextlib

import torch
import torch.utils.checkpoint
from torch.autograd.graph import saved_tensors_hooks


def version_tuple():
    parts = []
    for piece in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def has_sdpa():
    return hasattr(torch.nn.functional, "scaled_dot_product_attention")


def storage_of(t):
    """The untyped storage behind a tensor (torch >= 2.0) or its typed storage (1.13)."""
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()
    return t.storage()


def storage_key(t):
    """(data pointer, bytes) of the storage behind `t`; the pointer identifies the allocation."""
    s = storage_of(t)
    return s.data_ptr(), s.nbytes()


def storage_weak_ref(t):
    """A weak reference to the storage behind `t` with an `expired()` method."""
    from torch.multiprocessing.reductions import StorageWeakRef

    return StorageWeakRef(storage_of(t))


# Set in the metadata of the autograd nodes recorded inside a non-reentrant checkpoint: reading
# their saved tensors would run the recomputation (saved_tensors.Recorder.attribute skips them).
CHECKPOINTED_NODE = "membudget_checkpointed"


_checkpoint_input_observer = None


@contextlib.contextmanager
def checkpoint_inputs_observed(observer):
    """While active, checkpoint_non_reentrant hands `observer` the tensors it keeps to run the
    function again: a non-reentrant checkpoint holds them in a closure, where no saved-tensor hook
    sees them (a reentrant one saves them with save_for_backward)."""
    global _checkpoint_input_observer
    previous = _checkpoint_input_observer
    _checkpoint_input_observer = observer
    try:
        yield
    finally:
        _checkpoint_input_observer = previous


def checkpoint_non_reentrant(function, *args):
    """torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False), with the nodes it
    recorded marked (CHECKPOINTED_NODE): the nodes reachable from the outputs that the inputs'
    own graphs do not already hold. A tensor that needs a gradient must be passed, not captured
    by `function`, or the marking would run on into the graph that made it."""
    if _checkpoint_input_observer is not None:
        _checkpoint_input_observer([a for a in args if isinstance(a, torch.Tensor)])
    outer = set()
    for a in args:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            outer.add(a.grad_fn if a.grad_fn is not None else None)
    out = torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=False)
    stack = [t.grad_fn for t in (out if isinstance(out, tuple) else (out,))
             if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or node in seen or node in outer or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(node)
        node.metadata[CHECKPOINTED_NODE] = True
        stack.extend(n for n, _ in node.next_functions)
    return out


def dispatch_mode_class():
    """TorchDispatchMode when this torch has a usable one, else None."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None
    return TorchDispatchMode


def autocast(device_type, dtype, enabled=True):
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, dtype=dtype)


def no_autocast(device_type):
    """Autocast switched off, as HF does around the rotary frequencies."""
    try:
        return torch.autocast(device_type=device_type, enabled=False)
    except RuntimeError:
        return contextlib.nullcontext()


def _saved_by(fn):
    """Shapes and dtypes of what autograd saves while `fn()` runs."""
    saved = []

    def pack(t):
        saved.append((tuple(t.shape), t.dtype))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return saved


def _fmt(saved):
    return ", ".join("%s %s" % (list(shape), str(dtype).replace("torch.", "")) for shape, dtype in saved)


def _autocast_weight_note(dev, amp_dtype):
    """Does autocast cache the 16-bit copy of a weight across calls, and for which weights?"""
    result = {}
    for label, trainable in (("trainable", True), ("frozen", False)):
        lin = torch.nn.Linear(8, 8, bias=False, device=dev).requires_grad_(trainable)
        x = torch.randn(2, 8, device=dev, requires_grad=True) * 1.0  # a non-leaf, like hidden states
        ptrs = set()

        def pack(t):
            if t.dtype == amp_dtype and tuple(t.shape) == (8, 8):
                ptrs.add(storage_key(t)[0])
            return t

        with saved_tensors_hooks(pack, lambda t: t), torch.autocast(device_type=dev.type, dtype=amp_dtype):
            y = lin(x) + lin(x)
        del y
        result[label] = len(ptrs)
    return ("autocast to %s: two calls of a linear save %d distinct 16-bit copies of a trainable weight "
            "and %d of a frozen one (autocast caches casts of leaf tensors that require grad only, "
            "until the autocast region exits)" % (str(amp_dtype).replace("torch.", ""),
                                                   result["trainable"], result["frozen"]))


def probe_notes(device, train_dtype, amp_dtype=None):
    """Short sentences on version-dependent behaviour that changes what autograd keeps."""
    notes = []
    dev = torch.device(device)
    notes.append("torch %s on %s" % (torch.__version__, dev.type))

    # RMSNorm's variance: does mean() keep its input for backward?
    x = torch.randn(4, 8, device=dev, requires_grad=True)
    saved = _saved_by(lambda: x.pow(2).mean(-1, keepdim=True))
    mean_keeps = len(saved) >= 2
    notes.append(
        "x.pow(2).mean(-1, keepdim=True) saves [%s]: %s" % (
            _fmt(saved),
            "mean() keeps its input (an extra fp32 x^2 per RMSNorm)" if mean_keeps
            else "mean() keeps only sizes",
        ))

    # Dropout: bool mask, or a float mask in the input dtype?
    for dt in sorted({torch.float32, train_dtype}, key=str):
        try:
            xd = torch.randn(4, 8, device=dev, dtype=dt, requires_grad=True)
            saved = _saved_by(lambda: torch.nn.functional.dropout(xd, 0.1, True))
            notes.append("dropout(p=0.1) on %s %s saves [%s]" % (
                dev.type, str(dt).replace("torch.", ""), _fmt(saved)))
        except RuntimeError as err:  # pragma: no cover - depends on the build
            notes.append("dropout probe on %s failed: %s" % (dt, err))
    xd = torch.randn(4, 8, device=dev, requires_grad=True)
    saved = _saved_by(lambda: torch.nn.functional.dropout(xd, 0.0, True))
    notes.append("dropout(p=0.0) saves [%s] (p == 0 returns the input)" % _fmt(saved))

    # A linear layer whose weight is frozen: does it keep its input?
    lin = torch.nn.Linear(8, 4, bias=False, device=dev).requires_grad_(False)
    xi = torch.randn(2, 3, 8, device=dev, requires_grad=True)
    saved = _saved_by(lambda: lin(xi))
    notes.append("F.linear with a frozen weight on a 3-D input saves [%s] (weight views are "
                 "parameters, not activations)" % _fmt(saved))

    if amp_dtype is not None:
        try:
            notes.append(_autocast_weight_note(dev, amp_dtype))
        except RuntimeError as err:  # pragma: no cover
            notes.append("autocast probe failed: %s" % err)

    # Scaled dot-product attention.
    if has_sdpa():
        notes.append("torch.nn.functional.scaled_dot_product_attention is available")
    else:
        notes.append("torch.nn.functional.scaled_dot_product_attention is unavailable (needs torch "
                     ">= 2.0): only eager attention can be measured")

    # Defaults that change what is alive during a step.
    import inspect

    zg = inspect.signature(torch.nn.Module.zero_grad).parameters.get("set_to_none")
    notes.append("Module.zero_grad(set_to_none) defaults to %s; the harness always passes "
                 "set_to_none=True (torch >= 2.0 behaviour, HF Trainer)" % (
                     zg.default if zg is not None else "n/a"))
    notes.append("storage identity via %s" % (
        "untyped_storage()" if hasattr(torch.Tensor, "untyped_storage") else "storage() (typed, 1.13)"))
    return notes
