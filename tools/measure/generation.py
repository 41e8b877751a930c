"""Greedy generation as transformers' generate() runs it, with its dynamic KV cache.

Written for the harness (not copied); it follows what decides which tensors are alive together:

- DynamicCache (transformers cache_utils.py, DynamicLayer, 4.56 and later): a layer's first update
  concatenates the keys and values onto an empty tensor (lazy_initialization), so the cache holds
  copies of them, not the attention's own tensors; every later update makes them anew, one step
  longer, with torch.cat (keys first, then values), and the old ones die as the new ones are bound;
- generate() (generation/utils.py, _sample): an all-ones attention_mask grown by one column per
  step; the model asked for the last position's logits only (logits_to_keep=1); those logits copied
  to fp32 (`outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)`), whose name keeps them
  through the next step's forward; argmax; input_ids grown by torch.cat; the outputs dropped at the
  end of the step. A few index and position tensors of a handful of int64 elements are not made.
"""

import torch


class DynamicCache:
    """Per layer, the keys and values of every position so far: [b, kv_heads, positions, d].

    copies=False: a training forward's cache before transformers 4.56 (DynamicCache.update's first
    call appended the layer's own key and value states)."""

    def __init__(self, copies=True):
        self.keys = []
        self.values = []
        self.copies = copies

    def length(self):
        return self.keys[0].shape[-2] if self.keys else 0

    def update(self, layer, key_states, value_states):
        if layer == len(self.keys) and not self.copies:
            self.keys.append(key_states)
            self.values.append(value_states)
            return key_states, value_states
        if layer == len(self.keys):  # lazy_initialization: empty tensors of the states' dtype
            empty = torch.tensor([], dtype=key_states.dtype, device=key_states.device)
            self.keys.append(empty)
            self.values.append(empty)
        self.keys[layer] = torch.cat([self.keys[layer], key_states], dim=-2)
        self.values[layer] = torch.cat([self.values[layer], value_states], dim=-2)
        return self.keys[layer], self.values[layer]

    def tensors(self):
        return self.keys + self.values


def phase_of(step, decode_steps):
    """The name each forward is measured under: the prefill, the decode steps before the last one,
    and the last decode step (where the cache is largest, the step MemBudget models)."""
    if step == 0:
        return "prefill"
    return "decode" if step == decode_steps else "decode_earlier"


@torch.no_grad()
def generate(model, input_ids, decode_steps, mark=lambda phase: None):
    """The prefill on the prompt, then `decode_steps` forwards of one token per sequence. mark(name)
    is called as each forward begins (phase_of). Returns the ids, prompt and generated tokens."""
    batch = input_ids.shape[0]
    attention_mask = torch.ones_like(input_ids)  # _prepare_attention_mask_for_generation
    cache = DynamicCache()
    next_token_logits = None
    for step in range(decode_steps + 1):
        mark(phase_of(step, decode_steps))
        inputs = input_ids if step == 0 else input_ids[:, -1:]
        _, logits = model(inputs, attention_mask=attention_mask, cache=cache, logits_to_keep=1)
        # _update_model_kwargs_for_generation
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones((batch, 1))], dim=-1)
        next_token_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32)
        next_tokens = torch.argmax(next_token_logits, dim=-1)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        del logits, next_tokens  # del outputs
    mark("end")
    return input_ids
