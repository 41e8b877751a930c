"""Building the model, optimizer and batch for a scenario, and running one training step the way
HF Trainer does: forward + loss under autocast (AMP only), drop the outputs, backward, optimizer
step, zero_grad(set_to_none=True)."""

import contextlib
import warnings

import torch

import activation_offload
import generation
import lora as lora_mod
import torch_compat
from llama_model import LlamaForCausalLM
from scenario import Unsupported

PARAM_DTYPES = {"fp32": torch.float32, "amp-bf16": torch.float32, "amp-fp16": torch.float32,
                "bf16": torch.bfloat16, "fp16": torch.float16}
AMP_DTYPES = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}


class Setup:
    """Everything a step needs."""

    def __init__(self, scenario, device, seed, foreach=None, prune=None):
        """prune(model): applied once the model is built, before the optimizer takes its
        parameters (pipeline_stage.py drops the modules another stage holds)."""
        tr = scenario.training
        arch = scenario.arch
        self.scenario = scenario
        self.device = torch.device(device)
        self.param_dtype = PARAM_DTYPES[tr.precision]
        self.amp_dtype = AMP_DTYPES.get(tr.precision)
        if self.amp_dtype is None and getattr(tr, "trainer_autocast", False):
            self.amp_dtype = self.param_dtype  # accelerate's autocast around 16-bit weights
        if tr.attention != "eager" and not torch_compat.has_sdpa():
            raise Unsupported("attention %s: scaled_dot_product_attention is unavailable in torch %s "
                              "(needs torch >= 2.0); measure attention: eager, or use a newer torch"
                              % (tr.attention, torch.__version__))
        if self.amp_dtype is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # 1.13 warns, then raises, for fp16 on CPU
                    with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype):
                        pass
            except (RuntimeError, UserWarning) as err:
                raise Unsupported("precision %s: autocast to %s is unavailable on %s in torch %s (%s)"
                                  % (tr.precision, self.amp_dtype, self.device.type, torch.__version__, err))

        torch.manual_seed(seed)
        if self.device.type == "cuda":
            torch.cuda.manual_seed_all(seed)
        model = LlamaForCausalLM(arch, tr.attention, device=self.device, dtype=self.param_dtype,
                                 loss=tr.loss)
        model.init_weights()
        self.wrapped_linears = 0
        if tr.method == "lora":
            adapter_dtype = lora_mod.adapter_dtype_for(tr.lora, self.param_dtype)
            self.wrapped_linears = lora_mod.apply_lora(model, tr.lora, adapter_dtype)
        self._input_hook = None
        if tr.method == "ia3":  # the vectors follow the adapter precision, as LoRA's adapters
            dtype = lora_mod.adapter_dtype_for(tr.lora, self.param_dtype)
            self.wrapped_linears = lora_mod.apply_ia3(model, tr.ia3_targets, dtype)
        if tr.gradient_checkpointing in ("full", "op-selective"):
            model.gradient_checkpointing_enable(use_reentrant=True, every=tr.checkpoint_every,
                                                op_selective=tr.gradient_checkpointing == "op-selective")
            if tr.method in ("lora", "ia3"):
                # PEFT calls enable_input_require_grads() when the model checkpoints.
                self._input_hook = model.enable_input_require_grads()
        if tr.activation_offloading:
            model.model.offload = activation_offload.OffloadActivations()
        model.train()
        if prune is not None:
            prune(model)
        self.model = model
        trainable = [p for p in model.parameters() if p.requires_grad]
        if tr.optimizer_in_backward:
            self.optimizer = OptimizerInBackward(tr.optimizer, trainable, foreach)
        else:
            self.optimizer = make_optimizer(tr.optimizer, trainable, foreach)
        self.scaler = None
        if tr.precision == "amp-fp16":
            if self.device.type != "cuda":
                raise Unsupported("precision amp-fp16 needs a GradScaler, which this harness runs on CUDA only")
            self.scaler = torch.cuda.amp.GradScaler()

        gen = torch.Generator().manual_seed(seed + 1)
        shape = (tr.micro_batch_size, tr.sequence_length)
        self.batches = []
        for _ in range(tr.gradient_accumulation_steps):
            ids = torch.randint(0, arch.vocab_size, shape, generator=gen).to(self.device)
            # HF collators pass an all-ones attention_mask and labels = input_ids.
            self.batches.append((ids, torch.ones_like(ids), ids.clone()))

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    def trainable(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def state_tensors(self):
        out = []
        for state in self.optimizer.state.values():
            out.extend(v for v in state.values() if isinstance(v, torch.Tensor))
        return out


def make_optimizer(name, params, foreach=None):
    kwargs = {}
    if foreach is not None:
        kwargs["foreach"] = foreach
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, weight_decay=0.0, **kwargs)
    if name == "adamw-fused":
        # torch.optim.AdamW(fused=True): one kernel per parameter group, no foreach temporaries
        try:
            return torch.optim.AdamW(params, lr=1e-5, weight_decay=0.0, fused=True)
        except (TypeError, RuntimeError) as err:
            raise Unsupported("optimizer adamw-fused: torch %s cannot run fused AdamW here (%s)"
                              % (torch.__version__, str(err).splitlines()[0] if str(err) else err))
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, **kwargs)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kwargs)
    if name == "adafactor":
        if not hasattr(torch.optim, "Adafactor"):
            raise Unsupported("optimizer adafactor: torch.optim.Adafactor needs torch >= 2.5; unsupported "
                              "by the harness on torch %s" % torch.__version__)
        return torch.optim.Adafactor(params, lr=1e-2, **kwargs)
    raise Unsupported("optimizer %s is unsupported by the harness" % name)


class OptimizerInBackward:
    """torchtune's optimizer_in_bwd: an optimizer of its own for each parameter, stepped by a hook as
    soon as autograd has accumulated that parameter's gradient, which zero_grad(set_to_none=True)
    then frees. torch >= 2.1 has Tensor.register_post_accumulate_grad_hook; before, a post-hook on
    the parameter's AccumulateGrad node runs at the same moment (the way DeepSpeed ZeRO hooks it)."""

    def __init__(self, name, params, foreach=None):
        self.optimizers = [make_optimizer(name, [p], foreach) for p in params]
        self.param_groups = [g for o in self.optimizers for g in o.param_groups]
        self._nodes = []
        for p, opt in zip(params, self.optimizers):
            self._register(p, opt)

    def _register(self, param, opt):
        def step(_param=None, *_):
            opt.step()
            opt.zero_grad(set_to_none=True)

        if hasattr(param, "register_post_accumulate_grad_hook"):
            param.register_post_accumulate_grad_hook(step)
            return
        node = param.expand_as(param).grad_fn.next_functions[0][0]
        node.register_hook(lambda grad_inputs, grad_outputs: step())
        self._nodes.append(node)  # the node must outlive this function for its hook to stay

    @property
    def state(self):
        merged = {}
        for opt in self.optimizers:
            merged.update(opt.state)
        return merged

    def step(self):
        pass  # every parameter was stepped in backward

    def zero_grad(self, set_to_none=True):
        pass  # and its gradient freed


def optimizer_foreach(optimizer):
    """The foreach setting the optimizer will actually use, as far as torch says."""
    group = optimizer.param_groups[0]
    if group.get("fused"):
        return False
    value = group.get("foreach")
    if value is not None:
        return value
    try:  # torch >= 2.0 picks foreach for CUDA tensors when left unset
        from torch.optim.optimizer import _default_to_fused_or_foreach

        params = [p for g in optimizer.param_groups for p in g["params"]]
        _, foreach = _default_to_fused_or_foreach(params, differentiable=False, use_fused=False)
        return foreach
    except (ImportError, TypeError):
        return False  # torch 1.13: None means the single-tensor loop


class NullObserver:
    """What a step reports to; the measured step passes a real one."""

    def begin(self, phase):
        pass

    def end(self, phase):
        pass

    def forward_hooks(self, micro):
        return contextlib.nullcontext()

    def after_forward(self, loss, micro):
        pass

    def backward_hooks(self, micro):
        return contextlib.nullcontext()

    def after_backward(self, micro):
        pass

    def after_step(self):
        pass


def training_cache(tr):
    """The DynamicCache a transformers training forward builds, or None (use_cache off, or
    full checkpointing on: transformers turns the cache off under its gradient checkpointing)."""
    if not tr.use_cache or tr.gradient_checkpointing != "none":
        return None
    return generation.DynamicCache(copies=tr.cache_copies)


def train_step(setup, observer=None):
    """One optimizer step over gradient_accumulation_steps micro-batches; returns the last loss."""
    observer = observer or NullObserver()
    model, optimizer, scaler = setup.model, setup.optimizer, setup.scaler
    ga = len(setup.batches)
    last = None
    for micro, (ids, mask, labels) in enumerate(setup.batches):
        observer.begin("forward")
        with observer.forward_hooks(micro):
            # transformers' model output holds the training forward's DynamicCache (use_cache on,
            # no checkpointing) until compute_loss returns.
            cache = training_cache(setup.scenario.training)
            with setup.autocast():
                loss, logits = model(ids, attention_mask=mask, labels=labels, cache=cache)
            # HF Trainer's compute_loss returns the loss only, and torchtitan's train.py deletes
            # `pred` before backward: the outputs die here; torchtitan before its PR #391 kept
            # `pred` until the step's end (loss fp32-output-kept).
            kept = logits if setup.scenario.training.loss == "fp32-output-kept" else None
            del logits, cache
        observer.after_forward(loss, micro)
        observer.end("forward")
        last = float(loss.detach())
        if ga > 1:
            loss = loss / ga
        observer.begin("backward")
        with observer.backward_hooks(micro):
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
        del loss, kept
        observer.end("backward")
        observer.after_backward(micro)
    observer.begin("optimizer_step")
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    observer.end("optimizer_step")
    observer.after_step()
    optimizer.zero_grad(set_to_none=True)
    return last
