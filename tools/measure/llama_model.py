"""A Llama decoder that keeps the same tensors for backward as Hugging Face's LlamaForCausalLM.

Written for the harness (not copied): the sequence of torch operations follows the behaviour of
transformers' modeling_llama.py (4.46 - 4.52) wherever it decides what autograd saves or what is
alive at the same time:

- LlamaRMSNorm upcasts to fp32, computes pow(2).mean(-1, keepdim=True), multiplies by rsqrt and
  casts back before the weight multiply;
- the rotary cos/sin are computed once per forward from position_ids [1, s] (HF builds them from
  cache_position.unsqueeze(0)) in fp32 with autocast off and cast to the hidden dtype;
- eager attention: repeat_kv, q @ k^T, multiply by the scaling, add the causal mask, softmax in fp32,
  cast back to q's dtype, dropout, @ v, transpose + contiguous, reshape, o_proj;
- SDPA attention: repeat_kv, contiguous q/k/v, scaled_dot_product_attention with is_causal when no
  padding mask is needed;
- the loss upcasts the logits, pads and shifts the labels (no logits slice copy) and calls
  cross_entropy(ignore_index=-100), as ForCausalLMLoss in transformers >= 4.46;
- gradient checkpointing wraps each decoder layer in torch.utils.checkpoint (reentrant by default),
  passing the same arguments HF passes.
"""

import contextlib

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

import op_selective
from torch import nn

import torch_compat

IGNORE_INDEX = -100


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class RotaryEmbedding(nn.Module):
    """Default rope: cos/sin of position * inv_freq, [batch of position_ids, s, head_dim]."""

    def __init__(self, head_dim, theta, device=None):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=device).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch_compat.no_autocast(x.device.type):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    """[b, kv, s, d] -> [b, kv * n_rep, s, d]; a copy when n_rep > 1 (expand + reshape)."""
    batch, kv_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, kv_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, kv_heads * n_rep, slen, head_dim)


def eager_attention(module, query, key, value, attention_mask, scaling, dropout):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


# How the SDPA path is written: "legacy" as transformers 4.48-4.53's sdpa_attention_forward
# (repeat_kv, then .contiguous() on q, k and v), "current" as later releases (use_gqa_in_sdpa: with
# torch >= 2.5 and no mask, SDPA gets the grouped keys and values with enable_gqa=True and no copies).
SDPA_STYLE = "legacy"


def sdpa_attention(module, query, key, value, attention_mask, scaling, dropout):
    if not torch_compat.has_sdpa():
        raise RuntimeError("scaled_dot_product_attention is unavailable in torch %s (needs >= 2.0)"
                           % torch.__version__)
    if SDPA_STYLE == "current" and attention_mask is None and torch_compat.version_tuple() >= (2, 5):
        groups = module.num_key_value_groups
        attn_output = F.scaled_dot_product_attention(query, key, value, dropout_p=dropout,
                                                     is_causal=query.shape[2] > 1, scale=scaling,
                                                     enable_gqa=groups > 1)
        return attn_output.transpose(1, 2).contiguous(), None
    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    causal_mask = attention_mask
    if attention_mask is not None:
        causal_mask = causal_mask[:, :, :, : key.shape[-2]]
    query = query.contiguous()
    key = key.contiguous()
    value = value.contiguous()
    is_causal = query.shape[2] > 1 and causal_mask is None
    kwargs = {"attn_mask": causal_mask, "dropout_p": dropout, "is_causal": is_causal}
    if torch_compat.version_tuple() >= (2, 1):
        kwargs["scale"] = scaling
    attn_output = F.scaled_dot_product_attention(query, key, value, **kwargs)
    return attn_output.transpose(1, 2).contiguous(), None


def flash_attention(module, query, key, value, attention_mask, scaling, dropout):
    """flash_attn's kernel when installed (HF flash_attention_2: [b, s, h, d], no repeat_kv);
    otherwise torch SDPA restricted to its flash kernel."""
    try:
        from flash_attn import flash_attn_func  # type: ignore
    except ImportError:
        flash_attn_func = None
    if flash_attn_func is not None:
        q = query.transpose(1, 2)
        k = key.transpose(1, 2)
        v = value.transpose(1, 2)
        if q.dtype == torch.float32:
            # HF _flash_attention_forward: fp32 inputs (rope under autocast) go to the autocast dtype
            target = torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else torch.bfloat16
            q, k, v = q.to(target), k.to(target), v.to(target)
        return flash_attn_func(q, k, v, dropout, softmax_scale=scaling, causal=True), None
    if not torch_compat.has_sdpa():
        raise RuntimeError("flash attention needs flash_attn or torch >= 2.0 SDPA")
    ctx = contextlib.nullcontext()
    if query.is_cuda and hasattr(torch.backends.cuda, "sdp_kernel"):
        ctx = torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)
    with ctx:
        return sdpa_attention(module, query, key, value, None, scaling, dropout)


ATTENTION_FUNCTIONS = {"eager": eager_attention, "sdpa": sdpa_attention, "flash": flash_attention}


class Attention(nn.Module):
    def __init__(self, arch, layer_idx, attention, device=None, dtype=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = arch.head_dim
        self.num_key_value_groups = arch.attention_heads // arch.kv_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = arch.attention_dropout
        self.attention = attention
        fk = {"device": device, "dtype": dtype}
        h, a, k, d = arch.hidden_size, arch.attention_heads, arch.kv_heads, arch.head_dim
        self.q_proj = nn.Linear(h, a * d, bias=arch.qkv_bias, **fk)
        self.k_proj = nn.Linear(h, k * d, bias=arch.qkv_bias, **fk)
        self.v_proj = nn.Linear(h, k * d, bias=arch.qkv_bias, **fk)
        self.o_proj = nn.Linear(a * d, h, bias=arch.o_bias, **fk)

    def forward(self, hidden_states, position_embeddings, attention_mask, cache=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if cache is not None:  # generation: attention runs over the cached positions too
            key_states, value_states = cache.update(self.layer_idx, key_states, value_states)
        attn = ATTENTION_FUNCTIONS[self.attention]
        attn_output, attn_weights = attn(self, query_states, key_states, value_states, attention_mask, self.scaling,
                           0.0 if not self.training else self.attention_dropout)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output), attn_weights


class MLP(nn.Module):
    def __init__(self, arch, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        h, i = arch.hidden_size, arch.intermediate_size
        self.gate_proj = nn.Linear(h, i, bias=arch.mlp_bias, **fk)
        self.up_proj = nn.Linear(h, i, bias=arch.mlp_bias, **fk)
        self.down_proj = nn.Linear(i, h, bias=arch.mlp_bias, **fk)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, arch, layer_idx, attention, device=None, dtype=None):
        super().__init__()
        self.self_attn = Attention(arch, layer_idx, attention, device, dtype)
        self.mlp = MLP(arch, device, dtype)
        self.input_layernorm = RMSNorm(arch.hidden_size, arch.rms_norm_eps, device, dtype)
        self.post_attention_layernorm = RMSNorm(arch.hidden_size, arch.rms_norm_eps, device, dtype)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, cache_position=None,
                position_embeddings=None, cache=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        # transformers 4.48 and later: `hidden_states, _ =` keeps eager attention's weights (the
        # probabilities) until the layer returns.
        hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask, cache)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def causal_mask_4d(attention_mask, dtype, device, batch, seq, past=0):
    """HF _update_causal_mask for eager attention: [b, 1, s, past + s] in the hidden dtype (past:
    positions already in the cache; a decode step has s = 1).

    Without a padding mask it is an expanded view of one [s, past + s] tensor; with one (HF Trainer
    passes the collator's attention_mask, generate() its own) it is cloned to a full tensor."""
    min_dtype = torch.finfo(dtype).min
    target = past + seq
    cache_position = torch.arange(past, target, device=device)
    causal = torch.full((seq, target), fill_value=min_dtype, dtype=dtype, device=device)
    if seq != 1:
        causal = torch.triu(causal, diagonal=1)
    causal *= torch.arange(target, device=device) > cache_position.reshape(-1, 1)
    causal = causal[None, None, :, :].expand(batch, 1, -1, -1)
    if attention_mask is not None:
        causal = causal.clone()
        mask_length = attention_mask.shape[-1]
        padding_mask = causal[:, :, :, :mask_length] + attention_mask[:, None, None, :].to(causal.device)
        padding_mask = padding_mask == 0
        causal[:, :, :, :mask_length] = causal[:, :, :, :mask_length].masked_fill(padding_mask, min_dtype)
    return causal


class LlamaModel(nn.Module):
    def __init__(self, arch, attention, device=None, dtype=None):
        super().__init__()
        self.attention = attention
        self.embed_tokens = nn.Embedding(arch.vocab_size, arch.hidden_size, device=device, dtype=dtype)
        self.layers = nn.ModuleList(DecoderLayer(arch, i, attention, device, dtype) for i in range(arch.layers))
        self.norm = RMSNorm(arch.hidden_size, arch.rms_norm_eps, device, dtype)
        self.rotary_emb = RotaryEmbedding(arch.head_dim, arch.rope_theta, device)
        self.gradient_checkpointing = False
        self.checkpoint_every = 1
        self.use_reentrant = True
        self.op_selective = False  # torchtitan's op-level policy inside each checkpoint
        self.policy_kept = []  # op_selective: the lists of tensors each layer's policy keeps
        # Called as layer_scope(i) around each checkpointed layer so that what the checkpoint saves
        # is attributed to its layer; a no-op unless the harness installs a recorder.
        self.layer_scope = lambda i: contextlib.nullcontext()
        self.offload = None  # activation_offload.OffloadActivations around the forward

    def _mask(self, attention_mask, inputs_embeds, past=0):
        batch, seq = inputs_embeds.shape[:2]
        if self.attention == "eager":
            return causal_mask_4d(attention_mask, inputs_embeds.dtype, inputs_embeds.device, batch, seq,
                                  past)
        # SDPA / flash: HF drops an all-ones mask and lets the kernel apply causality.
        if attention_mask is None or bool(attention_mask.all()):
            return None
        return causal_mask_4d(attention_mask, inputs_embeds.dtype, inputs_embeds.device, batch, seq,
                              past)

    def forward(self, input_ids, attention_mask=None, cache=None):
        if cache is not None:  # generation, or a training forward with use_cache (no offloading)
            return self._forward(input_ids, attention_mask, cache)
        if self.offload is None:
            return self._forward(input_ids, attention_mask)
        self.offload.begin_forward()
        with self.offload:
            out = self._forward(input_ids, attention_mask)
        self.offload.exempt = []  # its references must not outlive the graph's
        return out

    def _forward(self, input_ids, attention_mask=None, cache=None):
        inputs_embeds = self.embed_tokens(input_ids)
        seq = inputs_embeds.shape[1]
        past = cache.length() if cache is not None else 0
        cache_position = torch.arange(past, past + seq, device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = self._mask(attention_mask, inputs_embeds, past)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        if self.offload is not None:
            # HF's LlamaModel keeps `inputs_embeds` until forward returns; torchtune's decoder
            # (the stack that offloads) keeps no second name, which would hold layer 0's input.
            del inputs_embeds
            self.offload.exempt = [t for t in (causal_mask, position_ids, cache_position,
                                               *position_embeddings) if t is not None]
        held = [hidden_states]
        del hidden_states  # no name in this frame keeps layer 0's input (see run_layers)
        return self.norm(self.run_layers(held, causal_mask, position_ids, cache_position,
                                         position_embeddings, cache=cache))

    def run_layers(self, held, causal_mask, position_ids, cache_position, position_embeddings,
                   span=None, cache=None):
        """The decoder layers (those of `span`, a (start, stop) pair, when given), each checkpointed
        as the model is set up. `held` is a one-element list the input is taken from, so that the
        caller keeps no reference to it."""
        hidden_states = held.pop()
        self.policy_kept = []
        start, stop = span if span is not None else (0, len(self.layers))
        for i in range(start, stop):
            layer = self.layers[i]
            if self.gradient_checkpointing and self.training and self.op_selective:
                with self.layer_scope(i):
                    hidden_states = op_selective.checkpoint(
                        layer.__call__, hidden_states, causal_mask, position_ids, cache_position,
                        position_embeddings, registry=self.policy_kept)
            elif self.gradient_checkpointing and self.training and (i + 1) % self.checkpoint_every == 0:
                with self.layer_scope(i):
                    hidden_states = torch.utils.checkpoint.checkpoint(
                        layer.__call__, hidden_states, causal_mask, position_ids, cache_position,
                        position_embeddings, use_reentrant=self.use_reentrant)
            else:
                hidden_states = layer(hidden_states, causal_mask, position_ids, cache_position,
                                      position_embeddings, cache)
        return hidden_states


def causal_lm_loss(logits, labels, vocab_size):
    """transformers >= 4.46 ForCausalLMLoss with num_items_in_batch=None."""
    logits = logits.float()
    labels = labels.to(logits.device)
    labels = F.pad(labels, (0, 1), value=IGNORE_INDEX)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=IGNORE_INDEX, reduction="mean")


def causal_lm_loss_446(logits, labels, vocab_size):
    """transformers 4.46-4.48 ForCausalLMLoss: the fp32 upcast stays referenced while a shifted
    contiguous fp32 copy feeds the cross-entropy."""
    logits = logits.float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous().to(shift_logits.device)
    shift_logits = shift_logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(shift_logits, shift_labels, ignore_index=IGNORE_INDEX, reduction="mean")


def causal_lm_loss_no_upcast(logits, labels, vocab_size):
    """A model's own loss on its logits as they are (Qwen (v1) modeling_qwen.py): the shifted
    contiguous copy and CrossEntropyLoss in the logits' dtype, no .float()."""
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous().to(shift_logits.device)
    return F.cross_entropy(shift_logits.view(-1, vocab_size), shift_labels.view(-1),
                           ignore_index=IGNORE_INDEX, reduction="mean")


def cross_entropy_on_output(output, labels):
    """torchtitan's loss: F.cross_entropy on the model's output as it is (the labels arrive
    shifted from its data loader; here they are padded and shifted as transformers does)."""
    labels = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
    return F.cross_entropy(output.flatten(0, 1), labels.flatten(0, 1), ignore_index=IGNORE_INDEX,
                           reduction="mean")


TORCHTUNE_CHUNKS = 8


def torchtune_chunked_loss(logit_chunks, labels):
    """torchtune CEWithChunkedOutputLoss(num_output_chunks=8): the model returns its logits in chunks
    along the sequence; each chunk is upcast with .float() and summed through F.cross_entropy. The
    labels are shifted by the recipe beforehand (here: padded and shifted as transformers does)."""
    labels = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
    total = (labels != IGNORE_INDEX).sum()
    label_chunks = [c.reshape(-1) for c in labels.chunk(TORCHTUNE_CHUNKS, dim=1)]
    loss = 0.0
    for logit_chunk, label_chunk in zip(logit_chunks, label_chunks):
        logit_chunk = logit_chunk.reshape(-1, logit_chunk.size(-1))
        loss = loss + F.cross_entropy(logit_chunk.float(), label_chunk, ignore_index=IGNORE_INDEX,
                                      reduction="sum")
    return loss / total


TRL_CHUNK_TOKENS = 256  # trl/trainer/sft_trainer.py, _CHUNKED_LM_HEAD_CHUNK_SIZE


def _as_cuda_autocast_fp32(x):
    """CUDA's autocast runs log_softmax in fp32 (aten/src/ATen/autocast_mode.cpp, its fp32 list),
    casting a 16-bit input first; CPU autocast (torch 1.13) leaves it in 16-bit and casts later,
    for nll_loss. The harness makes the cast CUDA's autocast makes."""
    if x.dtype != torch.float32 and x.device.type == "cpu" and torch.is_autocast_cpu_enabled():
        return x.float()
    return x


def _trl_chunk(h, w, lbl):
    """One chunk of TRL's chunked_nll loss: fp32 logits of `h` against the whole vocabulary, the
    summed nll, and the accuracy and entropy the SFTTrainer logs (which add no gradient)."""
    logits = h.float() @ w.float().t()
    log_p = F.log_softmax(_as_cuda_autocast_fp32(logits), dim=-1)
    loss = F.nll_loss(log_p, lbl, ignore_index=IGNORE_INDEX, reduction="sum")
    valid = lbl != IGNORE_INDEX
    correct = ((logits.argmax(dim=-1) == lbl) & valid).sum().float()
    entropy = (-(log_p.exp() * log_p).sum(dim=-1) * valid).sum()
    return loss, correct, entropy


def trl_chunked_nll_loss(hidden_states, weight, labels):
    """TRL's SFTTrainer loss_type "chunked_nll" (PR #5575; the default from TRL 1.7): the shifted
    hidden states are reordered so labelled tokens come first, and each chunk of 256 goes through
    lm_head and the loss inside a non-reentrant torch.utils.checkpoint, so that only one chunk's
    fp32 logits (and an fp32 copy of a 16-bit lm_head weight) exist at a time, in forward and
    again in backward. The logged entropy and accuracy are computed but never backpropagated."""
    hidden = hidden_states[..., :-1, :].reshape(-1, hidden_states.size(-1))
    labels = labels[..., 1:].reshape(-1)
    valid = labels != IGNORE_INDEX
    n_valid = valid.sum()
    order = valid.to(torch.int8).argsort(descending=True)
    hidden = hidden[order]
    labels = labels[order]
    n_padded = int(torch.ceil(n_valid / TRL_CHUNK_TOKENS).item()) * TRL_CHUNK_TOKENS
    loss = hidden.new_zeros((), dtype=torch.float32)
    entropy = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, n_padded, TRL_CHUNK_TOKENS):
        chunk_loss, _, chunk_entropy = torch_compat.checkpoint_non_reentrant(
            _trl_chunk, hidden[start:start + TRL_CHUNK_TOKENS], weight,
            labels[start:start + TRL_CHUNK_TOKENS])
        loss = loss + chunk_loss
        entropy = entropy + chunk_entropy.detach()  # logged with .item(): its graph dies here
    return loss / n_valid


class LlamaForCausalLM(nn.Module):
    def __init__(self, arch, attention="eager", device=None, dtype=None, loss="hf"):
        super().__init__()
        self.arch = arch
        self.loss_kind = loss
        self.model = LlamaModel(arch, attention, device, dtype)
        self.lm_head = nn.Linear(arch.hidden_size, arch.vocab_size, bias=False, device=device, dtype=dtype)
        if arch.tied_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def init_weights(self, std=0.02):
        """HF _init_weights: normal(0, std) for linear and embedding weights, zero biases; norms 1."""
        with torch.no_grad():
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    module.weight.normal_(0.0, std)
                    if module.bias is not None:
                        module.bias.zero_()
                elif isinstance(module, nn.Embedding):
                    module.weight.normal_(0.0, std)

    def gradient_checkpointing_enable(self, use_reentrant=True, every=1, op_selective=False):
        """every > 1: wrap only layers every-1, 2*every-1, ... as torchtitan's _apply_layer_sac does
        (it counts layers from 1 and wraps those whose count `every` divides). op_selective: every
        layer, with torchtitan's op-level policy (op_selective.py)."""
        self.model.gradient_checkpointing = True
        self.model.use_reentrant = use_reentrant
        self.model.checkpoint_every = every
        self.model.op_selective = op_selective

    def enable_input_require_grads(self):
        """HF PreTrainedModel.enable_input_require_grads: with reentrant checkpointing and a frozen
        embedding, the first checkpoint input must require grad or no gradient reaches the adapters."""
        def make_inputs_require_grads(module, inputs, output):
            output.requires_grad_(True)
        return self.model.embed_tokens.register_forward_hook(make_inputs_require_grads)

    def forward(self, input_ids, attention_mask=None, labels=None, cache=None, logits_to_keep=0):
        """logits_to_keep: as HF's, the logits of the last N positions only (0: all of them);
        generate() asks for 1."""
        hidden_states = self.model(input_ids, attention_mask, cache)
        if self.loss_kind == "torchtune-chunked":
            # torchtune's TransformerDecoder with num_output_chunks: the output projection per chunk
            logits = [self.lm_head(c) for c in hidden_states.chunk(TORCHTUNE_CHUNKS, dim=1)]
            loss = torchtune_chunked_loss(logits, labels) if labels is not None else None
            return loss, logits
        if self.loss_kind == "trl-chunked-nll" and labels is not None:
            # TRL's patched forward: the base model, then the chunked loss; no logits returned.
            # Its `hidden_states` name keeps the final norm's output until the loss returns.
            loss = trl_chunked_nll_loss(hidden_states, self.lm_head.weight, labels)
            return loss, None
        if self.loss_kind in ("fp32-output", "fp32-output-kept"):
            # torchtitan's Transformer.forward returns self.output(h).float()
            output = self.lm_head(hidden_states).float()
            loss = cross_entropy_on_output(output, labels) if labels is not None else None
            return loss, output
        logits = self.lm_head(hidden_states[:, slice(-logits_to_keep, None), :])
        loss = None
        if labels is not None:
            if self.loss_kind == "hf-4.46":
                loss = causal_lm_loss_446(logits, labels, self.arch.vocab_size)
            elif self.loss_kind == "no-upcast":
                loss = causal_lm_loss_no_upcast(logits, labels, self.arch.vocab_size)
            else:
                loss = causal_lm_loss(logits, labels, self.arch.vocab_size)
        return loss, logits


def count_parameters(model):
    """Total numel with tied weights once, and the trainable part."""
    seen = set()
    total = trainable = 0
    for p in model.parameters():  # parameters() already yields a shared tensor once
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
    return total, trainable


def expected_parameters(arch):
    """Closed form (REFERENCES.md) to cross-check the built model."""
    h, a, k, d, i, v = (arch.hidden_size, arch.attention_heads, arch.kv_heads, arch.head_dim,
                        arch.intermediate_size, arch.vocab_size)
    layer = h * a * d + 2 * h * k * d + a * d * h + 3 * h * i + 2 * h
    if arch.qkv_bias:
        layer += a * d + 2 * k * d
    if arch.o_bias:
        layer += h
    if arch.mlp_bias:
        layer += 2 * i + h
    return arch.layers * layer + v * h * (1 if arch.tied_embeddings else 2) + h

