// SPDX-License-Identifier: GPL-3.0-or-later
// Python snippets for the Hugging Face stack: transformers TrainingArguments + Trainer (with PEFT's
// LoraConfig and bitsandbytes' BitsAndBytesConfig), and TRL's SFTConfig + SFTTrainer. Keyword names
// are the documented ones (tests/data/export-keys/ lists them with their sources).
#include "export/export_text.h"
#include "export/training_export.h"
#include "model/stack_profile.h"

namespace membudget {

namespace {

struct Lines
{
    std::string text;
    void operator()(const std::string &line) { text += line + "\n"; }
};

bool quantized(const TrainingConfig &t)
{
    return t.quantization != Quantization::None;
}

bool usesFsdp(const Scenario &s)
{
    return s.parallelism.sharding == Sharding::FsdpFull
           || s.parallelism.sharding == Sharding::FsdpGradOp;
}

bool usesDeepSpeed(const Scenario &s)
{
    const Sharding z = s.parallelism.sharding;
    return z == Sharding::Zero1 || z == Sharding::Zero2 || z == Sharding::Zero3;
}

bool checkpointing(const TrainingConfig &t)
{
    return t.checkpointing != Checkpointing::None;
}

// The dtype the model is loaded in (from_pretrained(dtype=...)): 16-bit for pure 16-bit training,
// for a quantized base and for DeepSpeed's mixed precision (it keeps the fp32 master itself);
// fp32 for autocast. transformers v5 loads in the config's dtype when none is given, so it is
// always written.
std::string loadDtype(const ExportPlan &plan, std::vector<std::string> &notes)
{
    const TrainingConfig &t = plan.scenario.training;
    const std::string half = plan.bf16 ? "bfloat16" : "float16";
    switch (t.precision) {
    case Precision::Fp32:
    case Precision::AmpBf16:
    case Precision::AmpFp16:
        return quantized(t) && plan.halfCompute ? half : "float32";
    case Precision::Bf16:
    case Precision::Fp16:
        if (t.precision == Precision::Fp16 && t.method == Method::Full)
            notes.push_back("pure fp16 full fine-tuning fails in the Trainer (its fp16 GradScaler "
                            "cannot unscale fp16 gradients): prefer bf16, or amp-fp16 (fp32 "
                            "weights), and check the estimate again");
        return half;
    case Precision::MixedBf16:
    case Precision::MixedFp16:
        if (usesDeepSpeed(plan.scenario) || quantized(t))
            return half;
        notes.push_back(std::string(precisionName(t.precision))
                        + " (16-bit weights with an fp32 master copy) is DeepSpeed's and "
                          "Megatron's scheme; without ZeRO the Trainer keeps fp32 weights and "
                          "autocasts (MemBudget's amp-"
                        + (plan.bf16 ? "bf16" : "fp16")
                        + "), written here: check the estimate with that precision");
        return "float32";
    }
    return "float32";
}

void quantizationConfig(const ExportPlan &plan, Lines &out)
{
    const TrainingConfig &t = plan.scenario.training;
    out("quantization_config = BitsAndBytesConfig(");
    if (t.quantization == Quantization::Int8) {
        out("    load_in_8bit=True,");
    } else {
        out("    load_in_4bit=True,");
        const bool fp4 = t.quantization == Quantization::Fp4
                         || t.quantization == Quantization::Fp4Double;
        const bool nested = t.quantization == Quantization::Nf4Double
                            || t.quantization == Quantization::Fp4Double;
        out(std::string("    bnb_4bit_quant_type=\"") + (fp4 ? "fp4" : "nf4") + "\",");
        out(std::string("    bnb_4bit_use_double_quant=") + (nested ? "True" : "False") + ",");
        const QuantComputeDtype c = t.quantization_options.compute_dtype;
        const std::string dtype = c == QuantComputeDtype::Fp32   ? "float32"
                                  : c == QuantComputeDtype::Bf16 ? "bfloat16"
                                  : c == QuantComputeDtype::Fp16 ? "float16"
                                                                 : plan.computeDtype;
        out("    bnb_4bit_compute_dtype=torch." + dtype + ",");
        // FSDP shards the packed 4-bit weights only when they are stored in a float type
        // (transformers' FSDP-QLoRA guide).
        if (usesFsdp(plan.scenario))
            out("    bnb_4bit_quant_storage=torch." + plan.computeDtype + ",");
    }
    out(")");
}

void loraConfig(const ExportPlan &plan, const char *variable, Lines &out)
{
    const LoraConfig &l = plan.scenario.training.lora;
    out(std::string(variable) + " = LoraConfig(");
    out("    r=" + std::to_string(l.rank) + ",");
    out("    lora_alpha=" + pythonFloat(l.alpha) + ",");
    out("    lora_dropout=" + pythonFloat(l.dropout) + ",");
    if (l.use_dora)
        out("    use_dora=True,");
    if (l.use_rslora)
        out("    use_rslora=True,");
    if (plan.loraTargets == std::vector<std::string>{"all-linear"}) {
        out("    target_modules=\"all-linear\",");
    } else {
        std::string list;
        for (const std::string &t : plan.loraTargets)
            list += (list.empty() ? "" : ", ") + pythonString(t);
        out("    target_modules=[" + list + "],");
    }
    out("    task_type=\"CAUSAL_LM\",");
    out(")");
}

// Keyword arguments TrainingArguments and SFTConfig share: batch, precision, checkpointing,
// optimizer, loss kernel, and the distributed back end.
void trainingArguments(const ExportPlan &plan, bool sft, Lines &out, std::vector<std::string> &notes)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    out("    output_dir=\"membudget-run\",");
    if (sft)
        out("    max_length=" + std::to_string(t.sequence_length) + ",");
    out("    per_device_train_batch_size=" + std::to_string(t.micro_batch_size) + ",");
    out("    gradient_accumulation_steps=" + std::to_string(t.gradient_accumulation_steps) + ",");
    const bool flag = plan.mixedPrecisionFlag;
    out(std::string("    bf16=") + (flag && plan.bf16 ? "True" : "False") + ",");
    out(std::string("    fp16=") + (flag && !plan.bf16 ? "True" : "False") + ",");
    // With FSDP the checkpointing is FSDP's own (transformers refuses both at once).
    const bool fsdpCheckpointing = usesFsdp(s) && checkpointing(t);
    out(std::string("    gradient_checkpointing=")
        + (checkpointing(t) && !fsdpCheckpointing ? "True" : "False") + ",");
    out("    optim=" + pythonString(plan.optim) + ",");
    // transformers 5 sets config.use_cache from this argument (default False); TRL's SFTTrainer
    // passes use_cache=False to every forward from 0.22 whatever it says.
    if (trainingKvCache(t) && !sft)
        out("    use_cache=True,  # as estimated: a KV cache in every training forward");
    else if (trainingKvCache(t))
        notes.push_back("use_cache: SFTTrainer turns the model's KV cache off in training (TRL "
                        "0.22 and later), so the run keeps less than estimated until the loss");
    const bool liger = t.loss == LossImplementation::Chunked
                       || t.loss == LossImplementation::LigerFused;
    if (liger) {
        out("    use_liger_kernel=True,"); // Liger's fused linear cross-entropy: no full logits
        notes.push_back("use_liger_kernel also swaps in Liger's RMSNorm, RoPE and SwiGLU kernels, "
                        "whose memory MemBudget does not estimate (only its loss)");
    }
    // SFTConfig.loss_type: "chunked_nll" by default from TRL 1.7 (the version exported).
    if (sft && t.loss == LossImplementation::TrlChunkedNll)
        out("    loss_type=\"chunked_nll\",  # lm_head and the loss in 256-token chunks");
    else if (sft && !liger)
        out(t.loss == LossImplementation::Hf
                ? "    loss_type=\"nll\",  # as estimated: the whole logits at once"
                : "    loss_type=\"nll\",");
    if (usesDeepSpeed(s))
        out("    deepspeed=\"ds_config.json\",  # membudget export-config --format deepspeed");
    if (usesFsdp(s)) {
        // transformers FSDPOption; the hybrid strategies shard within each node.
        const bool hybrid = s.parallelism.shard_group > 0;
        std::string fsdp = s.parallelism.sharding == Sharding::FsdpFull
                               ? (hybrid ? "hybrid_shard" : "full_shard")
                               : (hybrid ? "hybrid_shard_zero2" : "shard_grad_op");
        fsdp += " auto_wrap";
        if (s.training.offload.parameters)
            fsdp += " offload";
        out("    fsdp=" + pythonString(fsdp) + ",");
        out(std::string("    fsdp_config={\"activation_checkpointing\": ")
            + (fsdpCheckpointing ? "True" : "False") + ", \"use_orig_params\": True},");
        if (s.training.offload.optimizer && !s.training.offload.parameters)
            notes.push_back("FSDP cannot offload the optimizer alone (its offload moves "
                            "parameters and gradients): use ZeRO with offload_optimizer, or "
                            "offload parameters too");
    } else if ((s.training.offload.optimizer || s.training.offload.parameters)
               && !usesDeepSpeed(s)) {
        notes.push_back("offloading to CPU RAM needs ZeRO or FSDP");
    }
}

void launchComment(const Scenario &s, Lines &out)
{
    if (s.parallelism.gpus > 1)
        out("# Launch on " + std::to_string(s.parallelism.gpus)
            + " GPUs: accelerate launch --config_file accelerate_config.yaml this_script.py");
}

std::vector<std::string> header(const ExportPlan &plan,
                                const std::string &target,
                                const std::vector<std::string> &notes,
                                Lines &out)
{
    std::vector<std::string> lines = exportHeader(plan, target, notes);
    for (const std::string &line : lines)
        out("# " + line);
    out("");
    return lines;
}

} // namespace

TrainingExport exportTrainerPython(const ExportPlan &plan)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    std::vector<std::string> notes = plan.notes;
    const bool lora = t.method != Method::Full;
    const std::string dtype = loadDtype(plan, notes);

    Lines body;
    body("import torch");
    if (lora)
        body(std::string("from peft import LoraConfig, get_peft_model")
             + (quantized(t) && !usesFsdp(s) ? ", prepare_model_for_kbit_training" : ""));
    body(std::string("from transformers import AutoModelForCausalLM, ")
         + (quantized(t) ? "BitsAndBytesConfig, " : "") + "Trainer, TrainingArguments");
    body("");
    if (quantized(t)) {
        quantizationConfig(plan, body);
        body("");
    }
    body("model = AutoModelForCausalLM.from_pretrained(");
    body("    " + pythonString(plan.modelIdOrPlaceholder()) + ",");
    if (!plan.revision.empty())
        body("    revision=" + pythonString(plan.revision) + ",");
    body("    dtype=torch." + dtype + ",");
    body("    attn_implementation=" + pythonString(plan.attnImplementation) + ",");
    if (quantized(t))
        body("    quantization_config=quantization_config,");
    body(")");
    if (lora) {
        if (quantized(t))
            body(std::string(
                     "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=")
                 + (checkpointing(t) ? "True" : "False") + ")");
        loraConfig(plan, "lora_config", body);
        // PEFT keeps adapters in fp32 on a 16-bit base unless told otherwise (autocast_adapter_dtype).
        if (t.lora.adapter_precision == AdapterPrecision::Base && !quantized(t))
            body("model = get_peft_model(model, lora_config, autocast_adapter_dtype=False)");
        else
            body("model = get_peft_model(model, lora_config)");
        if (t.lora.adapter_precision == AdapterPrecision::Base && quantized(t))
            notes.push_back("adapter_precision base on a quantized model: PEFT keeps the adapters "
                            "in fp32; cast the trainable parameters to the compute dtype after "
                            "get_peft_model");
    }
    body("");
    body("training_args = TrainingArguments(");
    trainingArguments(plan, false, body, notes);
    body(")");
    body("");
    body("# TrainingArguments has no sequence length: tokenize or pack the data to "
         + thousands(t.sequence_length) + "-token sequences, as estimated.");
    launchComment(s, body);
    body("train_dataset = ...  # your tokenized dataset");
    body("trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset)");
    body("trainer.train()");

    Lines out;
    TrainingExport e;
    e.header = header(plan,
                      "transformers v5 (TrainingArguments, from_pretrained, BitsAndBytesConfig) "
                      "and PEFT v0.20 (LoraConfig, get_peft_model)",
                      notes,
                      out);
    e.text = out.text + body.text;
    e.notes = notes;
    e.fileName = "train_membudget.py";
    return e;
}

TrainingExport exportSftPython(const ExportPlan &plan)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    std::vector<std::string> notes = plan.notes;
    const bool lora = t.method != Method::Full;
    const std::string dtype = loadDtype(plan, notes);
    if (lora && quantized(t) && t.lora.adapter_precision == AdapterPrecision::Fp32)
        notes.push_back("SFTTrainer casts the adapters of a quantized model to bf16 (QLoRA "
                        "paper); MemBudget estimated fp32 adapters (adapter_precision base "
                        "matches)");
    if (lora && !quantized(t) && t.lora.adapter_precision == AdapterPrecision::Base
        && s.parallelism.sharding != Sharding::Zero3)
        notes.push_back("SFTTrainer keeps LoRA adapters in fp32 (PEFT's default) except under "
                        "ZeRO-3; for adapters in the training precision build the model as in "
                        "--format trainer and pass it to SFTTrainer");
    if (t.micro_batch_size > 1)
        notes.push_back("MemBudget assumed every sequence is " + thousands(t.sequence_length)
                        + " tokens; SFTConfig(packing=True) makes them so, otherwise batches are "
                          "shorter and need less");

    Lines body;
    if (quantized(t))
        body("import torch");
    if (lora)
        body("from peft import LoraConfig");
    if (quantized(t))
        body("from transformers import BitsAndBytesConfig");
    body("from trl import SFTConfig, SFTTrainer");
    body("");
    if (quantized(t)) {
        quantizationConfig(plan, body);
        body("");
    }
    if (lora) {
        loraConfig(plan, "peft_config", body);
        body("");
    }
    body("training_args = SFTConfig(");
    trainingArguments(plan, true, body, notes);
    std::string init = "{\"dtype\": " + pythonString(dtype)
                       + ", \"attn_implementation\": " + pythonString(plan.attnImplementation);
    if (!plan.revision.empty())
        init += ", \"revision\": " + pythonString(plan.revision);
    body("    model_init_kwargs=" + init + "},");
    body(")");
    body("");
    launchComment(s, body);
    body("train_dataset = ...  # your dataset");
    body("trainer = SFTTrainer(");
    body("    model=" + pythonString(plan.modelIdOrPlaceholder()) + ",");
    body("    args=training_args,");
    body("    train_dataset=train_dataset,");
    if (lora)
        body("    peft_config=peft_config,");
    if (quantized(t))
        body("    quantization_config=quantization_config,");
    body(")");
    body("trainer.train()");

    Lines out;
    TrainingExport e;
    e.header = header(plan,
                      "TRL v1.9 (SFTConfig, SFTTrainer), transformers v5 and PEFT v0.20",
                      notes,
                      out);
    e.text = out.text + body.text;
    e.notes = notes;
    e.fileName = "sft_membudget.py";
    return e;
}

} // namespace membudget
