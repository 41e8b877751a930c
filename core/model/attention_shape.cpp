// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/attention_shape.h"

#include "model/stack_profile.h"
#include "model/torch_release.h"

namespace membudget {

AttentionShape attentionShape(const TrainingConfig &t)
{
    AttentionShape a;
    a.rows = static_cast<double>(t.micro_batch_size) * static_cast<double>(t.sequence_length);
    a.cache = SizeExpr::perToken(1);
    a.scores = SizeExpr::perTokenSeq(1);
    a.mask_bool = boolAttentionMask(t.stack);
    a.mask = t.attention == Attention::Sdpa && t.batch_padding != BatchPadding::None;
    if (t.mode != Mode::Inference || t.inference.kv_cache != KvCacheKind::Static)
        return a;
    const InferenceConfig &inf = t.inference;
    const double generated = static_cast<double>(inf.generated_tokens);
    if (inf.max_cache_len > 0) {
        const double fixed = static_cast<double>(inf.max_cache_len);
        a.cache = SizeExpr::perSequence(fixed);
        a.scores = SizeExpr::perToken(fixed);
    } else {
        a.cache = SizeExpr::perToken(1) + SizeExpr::perSequence(generated);
        a.scores = SizeExpr::perTokenSeq(1) + SizeExpr::perToken(generated);
    }
    a.mask = true;
    return a;
}

bool sdpaRepeatsKv(const TrainingConfig &t)
{
    if (t.attention != Attention::Sdpa)
        return false;
    return stackRepeatsGroupedKv(t.stack) || attentionShape(t).mask
           || torchRelease(t.stack) < LibraryVersion{2, 5, 0};
}

} // namespace membudget
