// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/size_expr.h"
#include "model/training_options.h"

namespace membudget {

// The shape a training step or an inference prefill works on, as element counts per unit of width:
// b x s tokens, attending to the keys their cache holds.
struct AttentionShape
{
    SizeExpr cache;        // positions x sequences of the keys attention reads
    SizeExpr scores;       // query tokens x key positions (eager scores, masks)
    double rows = 0;       // tokens at the scenario's own shape (decides quantized kernels)
    bool mask = false;     // SDPA gets an explicit mask (static cache prefill: keys != queries;
                           // padded or packed batches)
    bool mask_bool = true; // ... as a bool mask (transformers >= 4.53 masking_utils), which SDPA
                           // turns into an additive one in the query dtype at every call; before,
                           // an additive mask in the hidden states' dtype
};

// transformers generate(): the prefill writes the prompt into the cache. A dynamic or quantized
// cache then holds the b x s prompt positions; a static one max_cache_len per sequence from its
// first update (cache_utils.py StaticLayer.lazy_initialization), which the prompt attends over
// with an explicit mask (masking_utils: SDPA skips the mask only when keys = queries).
// Padded or packed batches under SDPA need a mask too: masking_utils skips it (is_causal) only when
// no position is padded and the sequences are not packed (_ignore_causal_mask_sdpa).
AttentionShape attentionShape(const TrainingConfig &training);

// Whether SDPA gets grouped keys and values copied to every query head (repeat_kv) rather than the
// groups themselves: transformers' sdpa_attention_forward hands SDPA the groups (enable_gqa) only
// with torch >= 2.5 and no mask (integrations/sdpa_attention.py, use_gqa_in_sdpa, from 4.54);
// transformers before 4.54 and torchtitan's Llama before 0.2.2 repeat them (stackRepeatsGroupedKv).
bool sdpaRepeatsKv(const TrainingConfig &training);

} // namespace membudget
