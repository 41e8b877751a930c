// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Architectures from published config.json files, written out so the core tests do not depend on
// the preset data.

#include "model/model_architecture.h"

namespace membudget::testing {

inline ModelArchitecture llama(std::int64_t layers,
                               std::int64_t hidden,
                               std::int64_t inter,
                               std::int64_t heads,
                               std::int64_t kv,
                               std::int64_t vocab,
                               bool tied = false)
{
    ModelArchitecture a;
    applyFamilyDefaults(a, ModelFamily::Llama);
    a.layers = layers;
    a.hidden_size = hidden;
    a.intermediate_size = inter;
    a.attention_heads = heads;
    a.kv_heads = kv;
    a.head_dim = hidden / heads;
    a.vocab_size = vocab;
    a.tied_embeddings = tied;
    return a;
}

inline ModelArchitecture llama2_7b()
{
    return llama(32, 4096, 11008, 32, 32, 32000);
}
inline ModelArchitecture llama3_8b()
{
    return llama(32, 4096, 14336, 32, 8, 128256);
}
inline ModelArchitecture mistral_7b()
{
    return llama(32, 4096, 14336, 32, 8, 32000);
}
inline ModelArchitecture llama32_1b()
{
    return llama(16, 2048, 8192, 32, 8, 128256, true);
}

inline ModelArchitecture mixtral_8x7b()
{
    ModelArchitecture a = llama(32, 4096, 14336, 32, 8, 32000);
    a.experts = 8;
    a.experts_per_token = 2;
    return a;
}

inline ModelArchitecture gpt2_small()
{
    ModelArchitecture a;
    applyFamilyDefaults(a, ModelFamily::Gpt2);
    a.layers = 12;
    a.hidden_size = 768;
    a.intermediate_size = 3072;
    a.attention_heads = 12;
    a.kv_heads = 12;
    a.head_dim = 64;
    a.vocab_size = 50257;
    a.max_position_embeddings = 1024;
    return a;
}

inline ModelArchitecture falcon_7b()
{
    ModelArchitecture a;
    applyFamilyDefaults(a, ModelFamily::Falcon);
    a.layers = 32;
    a.hidden_size = 4544;
    a.intermediate_size = 4 * 4544;
    a.attention_heads = 71;
    a.kv_heads = 1;
    a.head_dim = 64;
    a.vocab_size = 65024;
    return a;
}

// A small Llama for exact hand-derived activation checks.
inline ModelArchitecture tinyLlama()
{
    return llama(2, 256, 688, 4, 2, 1000);
}

} // namespace membudget::testing
