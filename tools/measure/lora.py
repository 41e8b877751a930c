"""LoRA adapters that run the same operations as PEFT's lora.Linear (written for the harness).

Per targeted nn.Linear: the base layer stays frozen; lora_A (in -> r, Kaiming-uniform) and lora_B
(r -> out, zeros) are trainable; the dropout module is nn.Dropout(p) or nn.Identity when p == 0.
Forward, as PEFT does it:

    result = base_layer(x)
    x = x.to(lora_A.weight.dtype)          # a copy when the adapter dtype differs (fp32 adapters on bf16)
    result = result + lora_B(lora_A(dropout(x))) * scaling
    result = result.to(original result dtype)

Adapters are fp32 by default (PEFT's autocast_adapter_dtype=True upcasts bf16/fp16 adapters) or the
base dtype. Everything that is not an adapter is frozen: embeddings, norms, lm_head and base weights.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoraLinear(nn.Module):
    def __init__(self, base_layer, rank, alpha, dropout, adapter_dtype):
        super().__init__()
        self.base_layer = base_layer
        device = base_layer.weight.device
        self.lora_A = nn.Linear(base_layer.in_features, rank, bias=False, device=device, dtype=adapter_dtype)
        self.lora_B = nn.Linear(rank, base_layer.out_features, bias=False, device=device, dtype=adapter_dtype)
        self.lora_dropout = nn.Dropout(p=dropout) if dropout > 0.0 else nn.Identity()
        self.scaling = alpha / rank
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    @property
    def weight(self):
        return self.base_layer.weight

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        x = x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result.to(torch_result_dtype)


class DoraLinear(LoraLinear):
    """DoRA (Liu et al. 2024, section 4.3) as PEFT's use_dora=True runs it (lora/layer.py
    Linear.forward and lora/dora.py DoraLinearLayer.forward): a trainable magnitude per output row,
    initialised to the row norms of W + scaling * B A, and in every forward

        lora_weight = lora_B(lora_A(eye(in))).T
        norm = ||W.to(x.dtype) + scaling * lora_weight.detach()|| per row, detached
        delta = (m / norm - 1) * base(x) + (m / norm) * lora_B(lora_A(x)) * scaling

    where base(x) is the base layer's output, or, with dropout, F.linear(dropped x, W)."""

    def __init__(self, base_layer, rank, alpha, dropout, adapter_dtype):
        super().__init__(base_layer, rank, alpha, dropout, adapter_dtype)
        with torch.no_grad():
            weight = base_layer.weight.to(adapter_dtype)
            lora_weight = self.lora_B.weight @ self.lora_A.weight
            norm = torch.linalg.norm(weight + self.scaling * lora_weight, dim=1)
        self.lora_magnitude_vector = nn.Parameter(norm.to(adapter_dtype))

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        x = x.to(self.lora_A.weight.dtype)
        if isinstance(self.lora_dropout, nn.Identity):
            base_result = result
        else:
            x = self.lora_dropout(x)
            base_result = None
        result = result + self._dora(x, base_result)
        return result.to(torch_result_dtype)

    def _dora(self, x, base_result):
        x_eye = torch.eye(self.lora_A.weight.shape[1], device=self.lora_A.weight.device, dtype=x.dtype)
        lora_weight = self.lora_B(self.lora_A(x_eye)).T
        weight = self.base_layer.weight.to(x.dtype)
        weight_norm = torch.linalg.norm(weight + self.scaling * lora_weight.detach(), dim=1)
        weight_norm = weight_norm.to(weight.dtype).detach()
        mag_norm_scale = (self.lora_magnitude_vector / weight_norm).view(1, -1)
        lora_result = self.lora_B(self.lora_A(x))
        if base_result is None:
            base_result = F.linear(x, weight)
        return (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * self.scaling


class Ia3Linear(nn.Module):
    """PEFT's IA3 Linear (ia3/layer.py) as it runs in training: a vector ia3_l, initialised to ones,
    scales the base layer's output, or for a feed-forward module (down_proj) its input:

        scaling = 1 * ia3_l.flatten()
        feed-forward: base((x.to(ia3 dtype) * scaling).to(x.dtype))
        otherwise:    (base(x) * scaling).to(base(x).dtype)"""

    def __init__(self, base_layer, feedforward, dtype):
        super().__init__()
        self.base_layer = base_layer
        self.feedforward = feedforward
        width = base_layer.in_features if feedforward else base_layer.out_features
        self.ia3_l = nn.Parameter(torch.ones(1, width, device=base_layer.weight.device, dtype=dtype))

    @property
    def weight(self):
        return self.base_layer.weight

    def forward(self, x):
        previous_dtype = x.dtype
        scaling = 1
        scaling *= self.ia3_l.flatten()
        if self.feedforward:
            interm = (x.to(self.ia3_l.dtype) * scaling).to(previous_dtype)
            return self.base_layer(interm)
        result = self.base_layer(x)
        return (result * scaling).to(result.dtype)


def _wrap_targets(model, targets, wrap):
    """Freeze the model and replace each targeted projection of every decoder layer with
    wrap(name, base); returns the number of wrapped linears."""
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = 0
    for layer in model.model.layers:
        for parent, names in ((layer.self_attn, ("q_proj", "k_proj", "v_proj", "o_proj")),
                              (layer.mlp, ("gate_proj", "up_proj", "down_proj"))):
            for name in names:
                if name in targets:
                    setattr(parent, name, wrap(name, getattr(parent, name)))
                    wrapped += 1
    return wrapped


def apply_ia3(model, targets, dtype):
    """IA3 on the targets (down_proj is PEFT's feed-forward module for Llama)."""
    return _wrap_targets(model, targets, lambda name, base: Ia3Linear(base, name == "down_proj", dtype))


def apply_lora(model, settings, adapter_dtype):
    """LoRA (or DoRA) on every targeted projection; returns the number of wrapped linears."""
    kind = DoraLinear if settings.use_dora else LoraLinear
    return _wrap_targets(model, settings.targets,
                         lambda name, base: kind(base, settings.rank, settings.alpha,
                                                 settings.dropout, adapter_dtype))


def expected_trainable(arch, settings):
    """r * sum(d_in + d_out) over the targets (REFERENCES.md)."""
    h, a, k, d, i = arch.hidden_size, arch.attention_heads, arch.kv_heads, arch.head_dim, arch.intermediate_size
    dims = {"q_proj": (h, a * d), "k_proj": (h, k * d), "v_proj": (h, k * d), "o_proj": (a * d, h),
            "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}
    per_layer = sum(settings.rank * (dims[t][0] + dims[t][1]) for t in settings.targets)
    return arch.layers * per_layer


def expected_ia3(arch, targets):
    """One value per output feature of each target, per input feature of down_proj."""
    h, a, k, d, i = arch.hidden_size, arch.attention_heads, arch.kv_heads, arch.head_dim, arch.intermediate_size
    width = {"q_proj": a * d, "k_proj": k * d, "v_proj": k * d, "o_proj": h, "gate_proj": i, "up_proj": i,
             "down_proj": i}
    return arch.layers * sum(width[t] for t in targets)


def adapter_dtype_for(settings, base_dtype):
    return torch.float32 if settings.adapter_precision == "fp32" else base_dtype
