// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/inference_options.h"

#include "base/enum_names.h"

namespace membudget {

const char *const kKvCacheKindNames[4] = {"dynamic", "static", "quantized", "legacy"};
const char *const kKvCacheDtypeNames[2] = {"model", "fp8"};

const char *kvCacheKindName(KvCacheKind v)
{
    return kKvCacheKindNames[static_cast<int>(v)];
}
bool parseKvCacheKind(const std::string &s, KvCacheKind &v)
{
    return parseEnumName(kKvCacheKindNames, s, v);
}
const char *kvCacheDtypeName(KvCacheDtype v)
{
    return kKvCacheDtypeNames[static_cast<int>(v)];
}
bool parseKvCacheDtype(const std::string &s, KvCacheDtype &v)
{
    return parseEnumName(kKvCacheDtypeNames, s, v);
}

std::int64_t staticCacheLength(const InferenceConfig &c, std::int64_t prompt)
{
    return c.max_cache_len > 0 ? c.max_cache_len : prompt + c.generated_tokens;
}

// transformers QuantizedLayer._quantize: optimum-quanto's quantize_weight with a MaxOptimizer scale
// and zero point per q_group_size values, or HQQ's Quantizer.quantize with meta scale and zero per
// group in the cache's dtype.
double quantizedKvBytesPerElement(const InferenceConfig &c, double scaleBytes)
{
    const double group = static_cast<double>(c.kv_group_size > 0 ? c.kv_group_size : 64);
    return static_cast<double>(c.kv_bits) / 8.0 + 2.0 * scaleBytes / group;
}

} // namespace membudget
