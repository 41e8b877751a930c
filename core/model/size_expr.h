// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace membudget {

// The size of a tensor of one training (or prefill) step as a linear function of the micro-batch
// shape: T = b x s tokens, s positions, b sequences. Everything MemBudget allocates per step has this form, so a
// timeline built once serves every micro-batch and sequence length (the solvers' bisections).
struct SizeExpr
{
    double per_token = 0;     // x T
    double per_token_seq = 0; // x T x s (attention scores and masks)
    double per_position = 0;  // x s, shared by the batch (rotary tables)
    double per_sequence = 0;  // x b (the last position's logits in generation)
    double fixed = 0;         // independent of the batch (weight copies, buckets)

    double at(double tokens, double seq) const
    {
        const double sequences = seq > 0 ? tokens / seq : 0;
        return per_token * tokens + per_token_seq * tokens * seq + per_position * seq
               + per_sequence * sequences + fixed;
    }
    bool isZero() const
    {
        return per_token == 0 && per_token_seq == 0 && per_position == 0 && per_sequence == 0
               && fixed == 0;
    }

    static SizeExpr perToken(double bytes) { return {bytes, 0, 0, 0, 0}; }
    static SizeExpr perTokenSeq(double bytes) { return {0, bytes, 0, 0, 0}; }
    static SizeExpr perPosition(double bytes) { return {0, 0, bytes, 0, 0}; }
    static SizeExpr perSequence(double bytes) { return {0, 0, 0, bytes, 0}; }
    static SizeExpr constant(double bytes) { return {0, 0, 0, 0, bytes}; }

    SizeExpr &operator+=(const SizeExpr &o)
    {
        per_token += o.per_token;
        per_token_seq += o.per_token_seq;
        per_position += o.per_position;
        per_sequence += o.per_sequence;
        fixed += o.fixed;
        return *this;
    }
    SizeExpr &operator-=(const SizeExpr &o)
    {
        per_token -= o.per_token;
        per_token_seq -= o.per_token_seq;
        per_position -= o.per_position;
        per_sequence -= o.per_sequence;
        fixed -= o.fixed;
        return *this;
    }
    friend SizeExpr operator+(SizeExpr a, const SizeExpr &b) { return a += b; }
    friend SizeExpr operator-(SizeExpr a, const SizeExpr &b) { return a -= b; }
    friend SizeExpr operator*(SizeExpr a, double k)
    {
        a.per_token *= k;
        a.per_token_seq *= k;
        a.per_position *= k;
        a.per_sequence *= k;
        a.fixed *= k;
        return a;
    }
    bool operator==(const SizeExpr &) const = default;
};

} // namespace membudget
