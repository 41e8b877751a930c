// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/scenario.h"

namespace membudget {

bool operator==(const LoraConfig &a, const LoraConfig &b)
{
    return a.rank == b.rank && a.alpha == b.alpha && a.dropout == b.dropout
           && a.targets == b.targets && a.adapter_precision == b.adapter_precision
           && a.use_dora == b.use_dora && a.use_rslora == b.use_rslora
           && a.loraplus_lr_ratio == b.loraplus_lr_ratio;
}
bool operator==(const OffloadConfig &a, const OffloadConfig &b)
{
    return a.optimizer == b.optimizer && a.parameters == b.parameters;
}
bool operator==(const TrainingConfig &a, const TrainingConfig &b)
{
    return a.mode == b.mode && a.method == b.method && a.precision == b.precision
           && a.quantization == b.quantization && a.optimizer == b.optimizer
           && a.micro_batch_size == b.micro_batch_size && a.sequence_length == b.sequence_length
           && a.gradient_accumulation_steps == b.gradient_accumulation_steps
           && a.checkpointing == b.checkpointing && a.checkpoint_every == b.checkpoint_every
           && a.attention == b.attention && a.batch_padding == b.batch_padding && a.loss == b.loss
           && a.lora == b.lora && a.offload == b.offload && a.stack == b.stack
           && a.kbit_fp32_upcast == b.kbit_fp32_upcast && a.use_cache == b.use_cache
           && a.trainer_mixed_precision == b.trainer_mixed_precision
           && a.optimizer_in_backward == b.optimizer_in_backward
           && a.activation_offloading == b.activation_offloading && a.float8 == b.float8
           && a.quantization_options == b.quantization_options && a.ia3.targets == b.ia3.targets
           && a.inference == b.inference;
}
bool operator==(const ParallelismConfig &a, const ParallelismConfig &b)
{
    return a.gpus == b.gpus && a.sharding == b.sharding && a.tensor_parallel == b.tensor_parallel
           && a.sequence_parallel == b.sequence_parallel && a.loss_parallel == b.loss_parallel
           && a.shard_group == b.shard_group && a.context_parallel == b.context_parallel
           && a.pipeline_parallel == b.pipeline_parallel
           && a.pipeline_schedule == b.pipeline_schedule
           && a.pipeline_virtual_stages == b.pipeline_virtual_stages
           && a.pipeline_layers == b.pipeline_layers && a.fsdp_param_dtype == b.fsdp_param_dtype
           && a.fsdp_reduce_dtype == b.fsdp_reduce_dtype && a.deepspeed == b.deepspeed
           && a.deepspeed_config == b.deepspeed_config;
}
bool operator==(const OverheadConfig &a, const OverheadConfig &b)
{
    return a.cuda_context_bytes == b.cuda_context_bytes && a.nccl_bytes == b.nccl_bytes
           && a.allocator_reserve_fraction == b.allocator_reserve_fraction
           && a.allocator_conf == b.allocator_conf
           && a.extra_resident_bytes == b.extra_resident_bytes;
}
bool operator==(const Scenario &a, const Scenario &b)
{
    return a.name == b.name && a.description == b.description && a.model == b.model
           && a.training == b.training && a.parallelism == b.parallelism
           && a.overheads == b.overheads && a.gpus == b.gpus && a.dataset == b.dataset
           && a.prices == b.prices && a.expected_fits == b.expected_fits
           && a.expected_tight == b.expected_tight && a.expected_not_fits == b.expected_not_fits;
}

double gpuHourPrice(const Scenario &scenario, const std::string &gpuId, double presetPrice)
{
    const auto it = scenario.prices.find(gpuId);
    return it != scenario.prices.end() ? it->second : presetPrice;
}

Scenario defaultScenario()
{
    Scenario s;
    s.name = "Llama-3.1-8B LoRA, bf16, flash attention";
    s.model.preset = "llama-3.1-8b";
    s.training.mode = Mode::Train;
    s.training.method = Method::Lora;
    s.training.precision = Precision::Bf16;
    s.training.optimizer = Optimizer::AdamW;
    s.training.micro_batch_size = 4;
    s.training.sequence_length = 4096;
    s.training.checkpointing = Checkpointing::Full;
    s.training.attention = Attention::Flash;
    s.training.lora.rank = 16;
    s.training.lora.alpha = 32;
    s.training.lora.dropout = 0.05;
    s.training.lora.targets = TargetAllLinear;
    s.gpus = {"rtx-4090", "a100-80gb"};
    return s;
}

} // namespace membudget
