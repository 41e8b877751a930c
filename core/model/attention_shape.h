// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/size_expr.h"
#include "model/training_options.h"

namespace membudget {

// The shape a training step or an inference prefill works on, as element counts per unit of width:
// b x s tokens, attending to the keys their cache holds.
struct AttentionShape
{
    SizeExpr cache;    // positions x sequences of the keys attention reads
    SizeExpr scores;   // query tokens x key positions (eager scores, masks)
    double rows = 0;   // tokens at the scenario's own shape (decides quantized kernels)
    bool mask = false; // SDPA gets an explicit mask (static cache prefill: keys != queries)
};

// transformers generate(): the prefill writes the prompt into the cache. A dynamic or quantized
// cache then holds the b x s prompt positions; a static one max_cache_len per sequence from its
// first update (cache_utils.py StaticLayer.lazy_initialization), which the prompt attends over
// with an explicit mask (masking_utils: SDPA skips the mask only when keys = queries).
AttentionShape attentionShape(const TrainingConfig &training);

} // namespace membudget
