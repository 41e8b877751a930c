"""What autograd keeps for backward, counted with torch.autograd.graph.saved_tensors_hooks.

Every tensor autograd saves passes through the pack hook. The hook records its metadata (shape,
strides, dtype, storage pointer and size, the module running at the time, the op that produced it)
and hands autograd a small token that holds the tensor, exactly as autograd would hold it itself, so
the hooks change nothing about memory.

Which op saved which tensor: after the forward the recorder walks the graph from the loss and reads
every node's `_saved_*` attributes (and `saved_tensors` of Python functions such as the checkpoint).
Reading one unpacks its token, and the unpack hook notes "this token belongs to node X, attribute
Y". Tokens that no walk reaches stay unattributed.

Counting: bytes of each distinct storage once (storage.nbytes(), not the view size), parameters
excluded by storage identity; as a second figure, view sizes de-duplicated by (data_ptr, shape,
stride, dtype). With reentrant checkpointing the forward hooks see only what the checkpoint saves
(its tensor inputs); the recomputation during backward is recorded separately (phase 'backward').
"""

import contextlib
import re
import weakref

from torch.autograd.graph import saved_tensors_hooks

import torch_compat

LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.|$)")

CATEGORY_ORDER = ("parameter", "weight_copy", "logits", "activation")


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


class SavedRecord:
    __slots__ = ("index", "phase", "scope", "shape", "stride", "dtype", "itemsize", "storage_ptr",
                 "storage_nbytes", "data_ptr", "view_nbytes", "producer", "saved_by", "category")

    def layer(self):
        m = LAYER_RE.search(self.scope)
        return int(m.group(1)) if m else None

    def to_json(self):
        return {
            "index": self.index, "phase": self.phase, "scope": self.scope, "layer": self.layer(),
            "saved_by": self.saved_by, "producer": self.producer, "shape": list(self.shape),
            "stride": list(self.stride), "dtype": dtype_name(self.dtype), "view_bytes": self.view_nbytes,
            "storage_bytes": self.storage_nbytes, "storage_ptr": self.storage_ptr, "category": self.category,
        }


class _Token:
    """What autograd stores instead of the tensor while the hooks are active."""
    __slots__ = ("index", "tensor", "__weakref__")

    def __init__(self, index, tensor):
        self.index = index
        self.tensor = tensor


class SavedTensorRecorder:
    def __init__(self, model, vocab_size):
        self.vocab_size = vocab_size
        self.param_storages = {}
        for name, p in model.named_parameters():
            self.param_storages[torch_compat.storage_key(p)[0]] = name
        self.weight_copy_storages = {}  # filled by the op tracker (autocast casts of parameters)
        self.records = []
        self.phase = "forward"
        self._scope = []
        self._walk_attr = None
        self._tokens = []
        self._checkpoint_inputs = []
        self._handles = []
        self._attach_scope_hooks(model)

    # --- module scope -------------------------------------------------------------------------
    def _attach_scope_hooks(self, model):
        for name, module in model.named_modules():
            label = name or "(model)"

            def pre(mod, inputs, label=label):
                self._scope.append(label)

            def post(mod, inputs, output, label=label):
                if self._scope and self._scope[-1] == label:
                    self._scope.pop()

            self._handles.append(module.register_forward_pre_hook(pre))
            self._handles.append(module.register_forward_hook(post))
        model.model.layer_scope = self.layer_scope

    @contextlib.contextmanager
    def layer_scope(self, index):
        label = "model.layers.%d.(checkpoint)" % index
        self._scope.append(label)
        try:
            yield
        finally:
            if self._scope and self._scope[-1] == label:
                self._scope.pop()

    def detach(self, model):
        for h in self._handles:
            h.remove()
        self._handles = []
        model.model.layer_scope = lambda i: contextlib.nullcontext()

    # --- hooks --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self, phase):
        self.phase = phase
        observer = self._note_checkpoint_inputs if phase == "forward" else None
        with saved_tensors_hooks(self._pack, self._unpack), \
                torch_compat.checkpoint_inputs_observed(observer):
            yield

    def _note_checkpoint_inputs(self, tensors):
        """What a non-reentrant checkpoint keeps to run again counts as saved, as a reentrant
        one's save_for_backward does; the tokens are held only until the forward ends."""
        for t in tensors:
            token = self._pack(t)
            self.records[token.index].saved_by.append("checkpoint(use_reentrant=False).inputs")
            self._checkpoint_inputs.append(token)

    def _pack(self, t):
        r = SavedRecord()
        r.index = len(self.records)
        r.phase = self.phase
        r.scope = self._scope[-1] if self._scope else "(outside modules)"
        r.shape = tuple(t.shape)
        r.stride = tuple(t.stride())
        r.dtype = t.dtype
        r.itemsize = t.element_size()
        r.storage_ptr, r.storage_nbytes = torch_compat.storage_key(t)
        r.data_ptr = t.data_ptr()
        r.view_nbytes = t.numel() * t.element_size()
        r.producer = type(t.grad_fn).__name__ if t.grad_fn is not None else (
            "(leaf)" if t.requires_grad else "(no grad)")
        r.saved_by = []
        # Classified now: a weight copy's address can be reused by another tensor later.
        r.category = "weight_copy" if r.storage_ptr in self.weight_copy_storages else None
        self.records.append(r)
        token = _Token(r.index, t)
        self._tokens.append(weakref.ref(token))
        return token

    def _unpack(self, token):
        if self._walk_attr is not None:
            self.records[token.index].saved_by.append(self._walk_attr)
        return token.tensor

    def mark_forward_end(self):
        """Notes which saved tensors are still held when the forward ends: a graph that dies within
        the forward (DoRA's lora_weight, built from an identity and used only detached) saved
        tensors that are gone by then, and their addresses may be reused."""
        self._alive_at_forward_end = {i for i, ref in enumerate(self._tokens) if ref() is not None}
        self._checkpoint_inputs = []

    def alive_tokens(self):
        """Tokens still held by autograd (should be 0 once backward has freed the graph)."""
        return sum(1 for ref in self._tokens if ref() is not None)

    # --- attribution --------------------------------------------------------------------------
    def attribute(self, root):
        """Walk the graph from `root` (a grad_fn) and attribute each saved tensor to its node."""
        seen = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            name = type(node).__name__
            checkpointed = torch_compat.CHECKPOINTED_NODE in getattr(node, "metadata", {})
            for attr in ([] if checkpointed else dir(node)):
                if not attr.startswith("_saved_"):
                    continue
                self._walk_attr = "%s.%s" % (name, attr[len("_saved_"):])
                try:
                    getattr(node, attr)  # unpacks: the unpack hook notes the attribution
                except Exception:  # noqa: BLE001 - e.g. already freed; nothing to attribute
                    pass
            if not checkpointed and hasattr(node, "saved_tensors"):  # Python autograd.Function
                self._walk_attr = "%s.saved_tensors" % name
                try:
                    node.saved_tensors
                except Exception:  # noqa: BLE001
                    pass
            self._walk_attr = None
            for next_fn, _ in node.next_functions:
                stack.append(next_fn)
        self._walk_attr = None
        return len(seen)

    # --- counting -----------------------------------------------------------------------------
    def _classify(self, r):
        if r.storage_ptr in self.param_storages:
            return "parameter"
        if r.category == "weight_copy":
            return "weight_copy"
        if len(r.shape) >= 2 and r.shape[-1] == self.vocab_size and r.dtype.is_floating_point:
            return "logits"
        return "activation"

    def summary(self, layers):
        """Totals for the forward (what is held at the end of the forward) and the recomputation."""
        for r in self.records:
            r.category = self._classify(r)
        out = {}
        alive = getattr(self, "_alive_at_forward_end", None)
        fwd = [r for r in self.records if r.phase == "forward" and (alive is None or r.index in alive)]
        storage_cat = {}
        for r in fwd:  # a storage belongs to the strongest category any of its views has
            prev = storage_cat.get(r.storage_ptr)
            if prev is None or CATEGORY_ORDER.index(r.category) < CATEGORY_ORDER.index(prev):
                storage_cat[r.storage_ptr] = r.category

        def totals(records, category):
            storages = {}
            views = {}
            layer_of = {}  # storage -> its layer, None outside the layers, "shared" if in several
            for r in records:
                if storage_cat.get(r.storage_ptr, r.category) != category or r.storage_nbytes == 0:
                    continue
                storages.setdefault(r.storage_ptr, r.storage_nbytes)
                layer = r.layer()
                if r.storage_ptr not in layer_of:
                    layer_of[r.storage_ptr] = layer
                elif layer_of[r.storage_ptr] != layer:
                    layer_of[r.storage_ptr] = "shared"
                views.setdefault((r.data_ptr, r.shape, r.stride, r.dtype), r.view_nbytes)
            return storages, views, layer_of

        act_s, act_v, act_layer = totals(fwd, "activation")
        log_s, log_v, _ = totals(fwd, "logits")
        wc_s, wc_v, _ = totals(fwd, "weight_copy")
        out["saved_activation_bytes"] = sum(act_s.values())
        out["saved_activation_view_bytes"] = sum(act_v.values())
        out["saved_logits_bytes"] = sum(log_s.values())
        out["saved_logits_view_bytes"] = sum(log_v.values())
        out["saved_weight_copy_bytes"] = sum(wc_s.values())
        out["saved_total_bytes"] = out["saved_activation_bytes"] + out["saved_logits_bytes"] + out["saved_weight_copy_bytes"]
        out["saved_tensor_count"] = len(fwd)
        out["saved_parameter_views"] = sum(1 for r in fwd if storage_cat.get(r.storage_ptr) == "parameter")
        per_layer = [0] * layers
        outside = shared = 0
        for ptr, nbytes in act_s.items():
            layer = act_layer[ptr]
            if layer == "shared":
                shared += nbytes
            elif layer is None or layer >= layers:
                outside += nbytes
            else:
                per_layer[layer] += nbytes
        out["saved_activation_bytes_per_layer"] = per_layer
        out["saved_activation_shared_by_layers_bytes"] = shared
        out["saved_activation_outside_layers_bytes"] = outside
        out["saved_unattributed_count"] = sum(1 for r in fwd if not r.saved_by)

        bwd = [r for r in self.records if r.phase == "backward" and r.category != "parameter"]
        # Each layer's recomputed graph is freed before the next layer recomputes, so the allocator
        # reuses addresses between layers: de-duplicate storages within a layer only.
        rec_layer = [0] * layers
        rec_storages = set()
        for r in bwd:
            layer = r.layer()
            if r.storage_nbytes == 0 or layer is None or layer >= layers or (layer, r.storage_ptr) in rec_storages:
                continue
            rec_storages.add((layer, r.storage_ptr))
            rec_layer[layer] += r.storage_nbytes
        out["saved_recompute_bytes_per_layer"] = rec_layer if bwd else None
        return out

    # --- report -------------------------------------------------------------------------------
    def table(self, phase="forward"):
        """Rows per saved tensor, grouped by layer, storage bytes shown once per storage."""
        lines = []
        seen_storage = {}
        header = "%4s  %-30s %-42s %-26s %-18s %-9s %10s %10s  %s" % (
            "#", "module", "saved by (node.attribute)", "produced by", "shape", "dtype", "view B",
            "storage B", "category")
        current_layer = object()
        for r in self.records:
            if r.phase != phase:
                continue
            layer = r.layer()
            if layer != current_layer:
                current_layer = layer
                lines.append("")
                lines.append("== %s ==" % ("layer %d" % layer if layer is not None else "outside the layers"))
                lines.append(header)
            scope = r.scope
            if layer is not None:
                m = LAYER_RE.search(scope)
                scope = scope[m.end():] or "(layer)"
            if r.category == "parameter":
                storage = "(param)"
            elif r.storage_ptr in seen_storage:
                storage = "=#%d" % seen_storage[r.storage_ptr]
            else:
                seen_storage[r.storage_ptr] = r.index
                storage = str(r.storage_nbytes)
            lines.append("%4d  %-30s %-42s %-26s %-18s %-9s %10d %10s  %s" % (
                r.index, scope[-30:], ",".join(r.saved_by)[:42] or "?", r.producer[:26],
                "x".join(str(s) for s in r.shape) or "scalar", dtype_name(r.dtype), r.view_nbytes, storage,
                r.category))
        return "\n".join(lines)
