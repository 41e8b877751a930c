"""Reading a MemBudget scenario (format membudget/1) into what the harness can build.

The harness reads the same files as `membudget estimate`, with the same key names and defaults
(docs/scenario-format.md), but it cannot resolve presets: the architecture keys must be in the file,
or come from --arch-json. Anything the harness cannot reproduce in plain PyTorch is refused with a
message that says so, rather than measured as something else.
"""

import json
import sys
from dataclasses import dataclass, field, asdict

import yaml

FORMAT = "membudget/1"

TOP_KEYS = ("format", "name", "description", "model", "training", "parallelism", "overheads", "gpus", "stack")

MODEL_KEYS = (
    "preset", "family", "parameters", "layers", "hidden_size", "intermediate_size",
    "attention_heads", "kv_heads", "head_dim", "vocab_size", "max_position_embeddings",
    "tied_embeddings", "mlp", "norm", "positions", "qkv_bias", "o_bias", "mlp_bias", "qk_norm",
    "norms_per_layer", "parallel_attention", "experts", "experts_per_token", "attention_dropout",
    "hidden_dropout",
    # harness-only numerics; they do not change memory
    "rms_norm_eps", "rope_theta",
)
ARCH_REQUIRED = ("layers", "hidden_size", "intermediate_size", "attention_heads", "vocab_size")

TRAINING_KEYS = (
    "mode", "method", "precision", "quantization", "optimizer", "micro_batch_size",
    "sequence_length", "gradient_accumulation_steps", "gradient_checkpointing", "checkpoint_every",
    "attention", "lora", "ia3",
    "offload", "loss", "optimizer_in_backward", "activation_offloading", "inference", "use_cache",
    "trainer_mixed_precision",
)
# The keys a stack sets when a scenario leaves them out (MemBudget's applyStackDefaults and
# resolveStackChoices): the harness builds what is written, so a case naming a stack writes them.
STACK_DECIDED = ("precision", "optimizer", "loss", "gradient_checkpointing", "use_cache")
INFERENCE_KEYS = ("generated_tokens", "kv_cache", "kv_cache_dtype", "max_cache_len", "kv_bits",
                  "kv_group_size", "kv_residual_length")
# Losses the harness writes in plain PyTorch (llama_model.py); the others need another package
# (liger-fused) or an older transformers model (hf-legacy).
LOSSES = ("hf", "hf-4.46", "torchtune-chunked", "no-upcast", "fp32-output", "fp32-output-kept",
          "trl-chunked-nll")
LORA_KEYS = ("rank", "alpha", "dropout", "targets", "adapter_precision", "use_dora")
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

PRECISIONS = ("fp32", "amp-bf16", "amp-fp16", "bf16", "fp16", "mixed-bf16", "mixed-fp16")
OPTIMIZERS = ("adamw", "adamw-fused", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "sgd", "sgd-momentum",
              "adafactor", "lion")
METHODS = ("full", "lora", "qlora", "ia3")
CHECKPOINTING = ("none", "full", "selective", "op-selective")
ATTENTIONS = ("eager", "sdpa", "flash")


class ScenarioError(Exception):
    """The file cannot be read, or asks for something the harness does not build."""


class Unsupported(ScenarioError):
    """A valid scenario that the harness cannot reproduce in plain PyTorch."""


def report_scenario_error(tool, err):
    """Prints a scenario problem for `tool` and returns the harness's exit code for it: 3 for a
    scenario it cannot reproduce, 1 for a bad one."""
    print("%s: %s" % (tool, err), file=sys.stderr)
    return 3 if isinstance(err, Unsupported) else 1


@dataclass
class Architecture:
    layers: int
    hidden_size: int
    intermediate_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    attention_dropout: float = 0.0
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0


@dataclass
class LoraSettings:
    rank: int = 16
    alpha: float = 16
    dropout: float = 0.0
    targets: list = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    adapter_precision: str = "fp32"
    use_dora: bool = False


@dataclass
class Training:
    mode: str = "train"  # inference: measure_generation.py runs generate() instead of a step
    generated_tokens: int = 0  # inference: decode steps after the prefill
    method: str = "full"
    precision: str = "bf16"
    optimizer: str = "adamw"
    micro_batch_size: int = 1
    sequence_length: int = 2048
    gradient_accumulation_steps: int = 1
    gradient_checkpointing: str = "none"
    checkpoint_every: int = 1  # with full: only layers N-1, 2N-1, ... are checkpointed (torchtitan)
    attention: str = "sdpa"
    loss: str = "hf"
    lora: LoraSettings = field(default_factory=LoraSettings)
    ia3_targets: list = field(default_factory=lambda: ["k_proj", "v_proj", "down_proj"])
    optimizer_in_backward: bool = False  # torchtune optimizer_in_bwd
    activation_offloading: bool = False  # torchtune enable_activation_offloading
    # transformers' use_cache in training: a DynamicCache that keeps each layer's keys and values
    # until the loss; copies of them from transformers 4.56 (cache_copies), the states before.
    use_cache: bool = False
    cache_copies: bool = True


@dataclass
class Scenario:
    name: str
    arch: Architecture
    training: Training
    source: str = ""

    def to_json(self):
        training = asdict(self.training)
        if self.training.method == "full":
            del training["lora"]
        return {"name": self.name, "source": self.source, "model": asdict(self.arch), "training": training}


def _where(path):
    return path or "scenario"


def _check_keys(mapping, allowed, what, path):
    if not isinstance(mapping, dict):
        raise ScenarioError("%s: '%s' must be a mapping" % (_where(path), what))
    for key in mapping:
        if key not in allowed:
            raise ScenarioError("%s: unknown key '%s' in %s; expected one of: %s"
                                % (_where(path), key, what, ", ".join(allowed)))


def _int(value, key, path, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError("%s: '%s' must be a whole number, not %r" % (_where(path), key, value))
    if value < minimum:
        raise ScenarioError("%s: '%s' must be at least %d, not %d" % (_where(path), key, minimum, value))
    return value


def _bool(value, key, path):
    if not isinstance(value, bool):
        raise ScenarioError("%s: '%s' must be true or false, not %r" % (_where(path), key, value))
    return value


def _num(value, key, path):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError("%s: '%s' must be a number, not %r" % (_where(path), key, value))
    return float(value)


def _choice(value, key, choices, path):
    if value not in choices:
        raise ScenarioError("%s: unknown %s %r; expected %s" % (_where(path), key, value, ", ".join(choices)))
    return value


def load_arch_json(path):
    """Architecture keys from a JSON file: a flat object, or one under 'model' / 'architecture'."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    for nested in ("model", "architecture"):
        if isinstance(data, dict) and isinstance(data.get(nested), dict):
            data = data[nested]
    if not isinstance(data, dict):
        raise ScenarioError("%s: expected a JSON object of architecture keys" % path)
    return data


def _set_dotted(doc, dotted, value):
    node = doc
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ScenarioError("--set %s: '%s' is not a mapping" % (dotted, part))
    node[parts[-1]] = value


def load(path, arch_override=None, overrides=()):
    """Read and check a scenario file. `overrides` are (dotted.key, yaml value string) pairs."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as err:
        raise ScenarioError("%s: cannot read: %s" % (path, err.strerror))
    except yaml.YAMLError as err:
        raise ScenarioError("%s: not valid YAML: %s" % (path, err))
    if not isinstance(doc, dict):
        raise ScenarioError("%s: a scenario is one YAML mapping" % path)
    for dotted, text in overrides:
        _set_dotted(doc, dotted, yaml.safe_load(text))
    return parse(doc, path, arch_override)


def parse(doc, path="", arch_override=None):
    _check_keys(doc, TOP_KEYS, "the scenario", path)
    if doc.get("format") != FORMAT:
        raise ScenarioError("%s: format must be '%s', not %r" % (_where(path), FORMAT, doc.get("format")))

    model = dict(doc.get("model") or {})
    _check_keys(model, MODEL_KEYS, "model", path)
    if arch_override:
        merged = {k: v for k, v in arch_override.items() if k in MODEL_KEYS and k != "preset"}
        merged.update({k: v for k, v in model.items() if k != "preset"})
        model = merged
    missing = [k for k in ARCH_REQUIRED if k not in model]
    if missing:
        if "preset" in model:
            raise ScenarioError(
                "%s: model preset %r cannot be resolved by the harness; put the architecture keys "
                "(%s) in the file or pass --arch-json FILE" % (_where(path), model["preset"], ", ".join(missing)))
        if "parameters" in model:
            raise Unsupported("%s: quick mode ('parameters' alone) is not measurable; give the "
                              "architecture keys (%s)" % (_where(path), ", ".join(missing)))
        raise ScenarioError("%s: model is missing %s" % (_where(path), ", ".join(missing)))

    arch = _parse_arch(model, path)
    training = _parse_training(doc.get("training") or {}, path)
    training.cache_copies = _cache_copies(doc.get("stack"), doc.get("training") or {}, path)
    training.trainer_autocast = _trainer_autocast(doc.get("stack"), training.precision,
                                                  (doc.get("training") or {}).get("trainer_mixed_precision"), path)
    _refuse_parallelism(doc.get("parallelism") or {}, path)
    return Scenario(name=str(doc.get("name") or ""), arch=arch, training=training, source=path)


TRAINER_STACKS = ("hf-trainer", "trl-sft", "accelerate-fsdp")


def _trainer_autocast(stack, precision, flag, path):
    """A Trainer's bf16/fp16 flag makes accelerate run the forward under autocast whatever the
    weights' dtype (MemBudget's trainerAutocast; the harness runs no DeepSpeed). The flag is on
    unless the scenario's trainer_mixed_precision says false."""
    name = stack.get("name") if isinstance(stack, dict) else stack
    if flag is not None and (not isinstance(flag, bool) or name not in TRAINER_STACKS):
        raise ScenarioError("%s: trainer_mixed_precision is true or false, under stack hf-trainer, "
                            "trl-sft or accelerate-fsdp" % _where(path))
    return name in TRAINER_STACKS and precision in ("bf16", "fp16") and flag is not False


def _cache_copies(stack, tr, path):
    """Whether a training DynamicCache holds copies of the keys and values (transformers 4.56 and
    later; every stack MemBudget knows but an older hf-trainer) or the states themselves."""
    if stack is None:
        return True
    if isinstance(stack, str):
        stack = {"name": stack}
    if not isinstance(stack, dict) or set(stack) - {"name", "version", "torch"}:
        raise ScenarioError("%s: stack is a name or a mapping of name, version and torch" % _where(path))
    missing = [k for k in STACK_DECIDED if k not in tr]
    if missing:
        raise Unsupported("%s: the harness does not apply a stack's defaults; write %s out"
                          % (_where(path), ", ".join("training." + k for k in missing)))
    if stack.get("name") != "hf-trainer" or "version" not in stack:
        return True
    try:
        version = tuple(int(x) for x in str(stack["version"]).split(".")[:2])
    except ValueError:
        raise ScenarioError("%s: stack.version %r is not major.minor" % (_where(path), stack["version"]))
    return version >= (4, 56)


def _parse_arch(model, path):
    family = model.get("family", "llama")
    if family != "llama":
        raise Unsupported("%s: family %r: the harness builds Llama-style decoders only" % (_where(path), family))
    for key, ok in (("mlp", "gated-silu"), ("norm", "rmsnorm"), ("positions", "rotary")):
        if model.get(key, ok) != ok:
            raise Unsupported("%s: %s %r: the harness builds %s only" % (_where(path), key, model[key], ok))
    for key in ("qk_norm", "parallel_attention"):
        if model.get(key, False):
            raise Unsupported("%s: %s is not built by the harness" % (_where(path), key))
    if model.get("norms_per_layer", 2) != 2:
        raise Unsupported("%s: norms_per_layer must be 2 for a Llama decoder" % _where(path))
    if model.get("experts", 1) != 1:
        raise Unsupported("%s: mixture of experts is not built by the harness" % _where(path))
    if _num(model.get("hidden_dropout", 0.0), "hidden_dropout", path) != 0.0:
        raise Unsupported("%s: hidden_dropout: Llama has no hidden dropout" % _where(path))

    layers = _int(model["layers"], "layers", path)
    hidden = _int(model["hidden_size"], "hidden_size", path)
    heads = _int(model["attention_heads"], "attention_heads", path)
    kv = _int(model.get("kv_heads", heads), "kv_heads", path)
    if heads % kv:
        raise ScenarioError("%s: attention_heads (%d) must be a multiple of kv_heads (%d)" % (_where(path), heads, kv))
    if "head_dim" in model:
        head_dim = _int(model["head_dim"], "head_dim", path)
    else:
        if hidden % heads:
            raise ScenarioError("%s: hidden_size is not a multiple of attention_heads; give head_dim" % _where(path))
        head_dim = hidden // heads
    if head_dim % 2:
        raise ScenarioError("%s: head_dim must be even for rotary embeddings" % _where(path))
    return Architecture(
        layers=layers, hidden_size=hidden,
        intermediate_size=_int(model["intermediate_size"], "intermediate_size", path),
        attention_heads=heads, kv_heads=kv, head_dim=head_dim,
        vocab_size=_int(model["vocab_size"], "vocab_size", path, minimum=2),
        tied_embeddings=_bool(model.get("tied_embeddings", False), "tied_embeddings", path),
        qkv_bias=_bool(model.get("qkv_bias", False), "qkv_bias", path),
        o_bias=_bool(model.get("o_bias", False), "o_bias", path),
        mlp_bias=_bool(model.get("mlp_bias", False), "mlp_bias", path),
        attention_dropout=_num(model.get("attention_dropout", 0.0), "attention_dropout", path),
        rms_norm_eps=_num(model.get("rms_norm_eps", 1e-5), "rms_norm_eps", path),
        rope_theta=_num(model.get("rope_theta", 10000.0), "rope_theta", path),
    )


def _parse_training(tr, path):
    _check_keys(tr, TRAINING_KEYS, "training", path)
    mode = _choice(tr.get("mode", "train"), "mode", ("train", "inference"), path)
    generated = _parse_inference(tr, mode, path)
    method = _choice(tr.get("method", "full"), "method", METHODS, path)
    if method == "qlora":
        raise Unsupported("%s: method qlora needs bitsandbytes 4-bit layers: unsupported by the harness" % _where(path))
    if tr.get("quantization", "none") != "none":
        raise Unsupported("%s: quantization %r is unsupported by the harness" % (_where(path), tr["quantization"]))
    offload = tr.get("offload") or {}
    if isinstance(offload, dict) and any(offload.values()):
        raise Unsupported("%s: offload is unsupported by the harness" % _where(path))

    precision = _choice(tr.get("precision", "bf16"), "precision", PRECISIONS, path)
    if precision.startswith("mixed-"):
        raise Unsupported("%s: precision %s (16-bit weights with an fp32 master copy, DeepSpeed/Megatron "
                          "style) is unsupported by the harness" % (_where(path), precision))
    optimizer = _choice(tr.get("optimizer", "adamw"), "optimizer", OPTIMIZERS, path)
    if optimizer not in ("adamw", "adamw-fused", "sgd", "sgd-momentum", "adafactor"):
        raise Unsupported("%s: optimizer %s is unsupported by the harness (needs bitsandbytes or "
                          "another package)" % (_where(path), optimizer))
    ckpt = _choice(tr.get("gradient_checkpointing", "none"), "gradient_checkpointing", CHECKPOINTING, path)
    if ckpt == "selective":
        raise Unsupported("%s: selective checkpointing (Megatron) is unsupported by the harness; HF "
                          "checkpoints whole decoder layers" % _where(path))

    loss = tr.get("loss", "hf")
    if loss in ("hf-legacy", "chunked", "liger-fused"):
        raise Unsupported("%s: loss %s is unsupported by the harness (it writes %s)"
                          % (_where(path), loss, ", ".join(LOSSES)))
    loss = _choice(loss, "loss", LOSSES, path)

    lora_doc = tr.get("lora") or {}
    _check_keys(lora_doc, LORA_KEYS, "training.lora", path)
    targets = lora_doc.get("targets", ["q_proj", "k_proj", "v_proj", "o_proj"])
    if not isinstance(targets, list) or not targets:
        raise ScenarioError("%s: lora.targets must be a non-empty list" % _where(path))
    if "all-linear" in targets:
        targets = list(LORA_TARGETS)
    for t in targets:
        _choice(t, "LoRA target", LORA_TARGETS + ("all-linear",), path)
    lora = LoraSettings(
        rank=_int(lora_doc.get("rank", 16), "lora.rank", path),
        alpha=_num(lora_doc.get("alpha", 16), "lora.alpha", path),
        dropout=_num(lora_doc.get("dropout", 0.0), "lora.dropout", path),
        targets=[t for t in LORA_TARGETS if t in targets],
        adapter_precision=_choice(lora_doc.get("adapter_precision", "fp32"), "lora.adapter_precision",
                                  ("fp32", "base"), path),
        use_dora=_bool(lora_doc.get("use_dora", False), "lora.use_dora", path),
    )
    if not 0.0 <= lora.dropout < 1.0:
        raise ScenarioError("%s: lora.dropout must be in [0, 1)" % _where(path))

    ia3_doc = tr.get("ia3") or {}
    if not isinstance(ia3_doc, dict) or set(ia3_doc) - {"targets"}:
        raise ScenarioError("%s: 'ia3' takes 'targets' only" % _where(path))
    ia3_targets = ia3_doc.get("targets", ["k_proj", "v_proj", "down_proj"])
    if "all-linear" in ia3_targets:
        ia3_targets = list(LORA_TARGETS)
    for t in ia3_targets:
        _choice(t, "IA3 target", LORA_TARGETS, path)
    in_backward = tr.get("optimizer_in_backward", False)
    if not isinstance(in_backward, bool):
        raise ScenarioError("%s: optimizer_in_backward must be true or false" % _where(path))
    if in_backward and tr.get("gradient_accumulation_steps", 1) != 1:
        raise ScenarioError("%s: optimizer_in_backward frees each gradient at once: no gradient "
                            "accumulation" % _where(path))
    offloading = tr.get("activation_offloading", False)
    if not isinstance(offloading, bool):
        raise ScenarioError("%s: activation_offloading must be true or false" % _where(path))
    if offloading and (ckpt != "full" or tr.get("checkpoint_every", 1) != 1):
        raise ScenarioError("%s: activation_offloading needs gradient_checkpointing full on every "
                            "layer" % _where(path))
    use_cache = tr.get("use_cache", False)
    if not isinstance(use_cache, bool):
        raise ScenarioError("%s: use_cache must be true or false" % _where(path))
    if use_cache and ckpt in ("selective", "op-selective"):
        raise Unsupported("%s: use_cache with %s checkpointing: the harness passes no cache into "
                          "checkpointed layers" % (_where(path), ckpt))
    return Training(
        mode=mode, generated_tokens=generated, use_cache=use_cache,
        method=method, precision=precision, optimizer=optimizer,
        optimizer_in_backward=in_backward, activation_offloading=offloading,
        ia3_targets=[t for t in LORA_TARGETS if t in ia3_targets],
        micro_batch_size=_int(tr.get("micro_batch_size", 1), "micro_batch_size", path),
        sequence_length=_int(tr.get("sequence_length", 2048), "sequence_length", path, minimum=2),
        gradient_accumulation_steps=_int(tr.get("gradient_accumulation_steps", 1),
                                         "gradient_accumulation_steps", path),
        gradient_checkpointing=ckpt,
        checkpoint_every=_int(tr.get("checkpoint_every", 1), "checkpoint_every", path),
        attention=_choice(tr.get("attention", "sdpa"), "attention", ATTENTIONS, path),
        loss=loss,
        lora=lora,
    )


def _parse_inference(tr, mode, path):
    """The decode steps of an inference scenario (0 for training). The harness builds transformers'
    DynamicCache only, in the model's dtype, and full-precision weights."""
    doc = tr.get("inference") or {}
    _check_keys(doc, INFERENCE_KEYS, "training.inference", path)
    if mode != "inference":
        if doc:
            raise ScenarioError("%s: training.inference needs mode: inference" % _where(path))
        return 0
    if doc.get("kv_cache", "dynamic") != "dynamic":
        raise Unsupported("%s: kv_cache %r: the harness builds the dynamic cache only"
                          % (_where(path), doc["kv_cache"]))
    if doc.get("kv_cache_dtype", "model") != "model":
        raise Unsupported("%s: kv_cache_dtype %r: the harness keeps the cache in the model's dtype"
                          % (_where(path), doc["kv_cache_dtype"]))
    if tr.get("method", "full") != "full":
        raise Unsupported("%s: inference with adapters is not built by the harness" % _where(path))
    return _int(doc.get("generated_tokens", 0), "inference.generated_tokens", path, minimum=0)


def _refuse_parallelism(par, path):
    if not isinstance(par, dict):
        raise ScenarioError("%s: 'parallelism' must be a mapping" % _where(path))
    if par.get("gpus", 1) != 1 or par.get("sharding", "none") != "none" or par.get("tensor_parallel", 1) != 1:
        raise Unsupported("%s: the harness measures one GPU without sharding or tensor parallelism"
                          % _where(path))
