// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace membudget {

// Which key/value cache generate() keeps (transformers cache_utils.py).
enum class KvCacheKind {
    Dynamic, // DynamicCache: each layer's keys and values re-made with torch.cat every step
    Static,  // StaticCache: max_cache_len positions allocated at the first update, written in place
    Quantized, // QuantizedCache (quanto / HQQ): quantized keys and values plus a full-precision tail
    Legacy,    // tuples of (key, value) per layer (transformers before 4.36, remote code such as
               // Qwen v1): each step cats every layer into new tensors while the tuple the step was
               // given keeps the old ones until generate() replaces it after the step
};

// The element type a dynamic or static cache stores: the model's dtype, or float8 with a per-tensor
// scale (vLLM's and TGI's kv_cache_dtype="fp8"; transformers' own caches keep the model's dtype).
enum class KvCacheDtype { Model, Fp8 };

// Inference: micro_batch_size concurrent sequences of sequence_length prompt tokens each, then
// generated_tokens decode steps of one token per sequence (docs/memory-model.md, Inference).
struct InferenceConfig
{
    std::int64_t generated_tokens = 0; // 0: the prefill alone
    KvCacheKind kv_cache = KvCacheKind::Dynamic;
    KvCacheDtype kv_cache_dtype = KvCacheDtype::Model;
    std::int64_t max_cache_len = 0; // static cache length; 0: prompt + generated tokens
    // QuantizedCache (transformers QuantizedLayer): nbits, q_group_size and residual_length.
    std::int64_t kv_bits = 4;
    std::int64_t kv_group_size = 64;
    std::int64_t kv_residual_length = 128;

    bool operator==(const InferenceConfig &) const = default;
};

const char *kvCacheKindName(KvCacheKind v);
bool parseKvCacheKind(const std::string &s, KvCacheKind &v);
const char *kvCacheDtypeName(KvCacheDtype v);
bool parseKvCacheDtype(const std::string &s, KvCacheDtype &v);
extern const char *const kKvCacheKindNames[4];
extern const char *const kKvCacheDtypeNames[2];

// Positions a static cache holds for `prompt` tokens: max_cache_len, or prompt + generated.
std::int64_t staticCacheLength(const InferenceConfig &c, std::int64_t prompt);

// Bytes per cached element of a quantized cache: `bits` per value plus a scale and a zero point of
// `scaleBytes` each per group of `group` values (quanto's and HQQ's affine quantization).
double quantizedKvBytesPerElement(const InferenceConfig &c, double scaleBytes);

} // namespace membudget
