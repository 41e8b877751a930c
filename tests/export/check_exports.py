#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks `membudget export-config` the way its users' tools read the files.

For the bundled training scenarios and a grid of settings (method x precision x sharding x
optimizer x offload x checkpointing x loss), every format must parse as what it claims to be
(Python with ast.parse, YAML with yaml.safe_load, JSON with json.loads), use only keys listed in
tests/data/export-keys/<format>.keys (the libraries' documented names), and carry the scenario's
settings (micro-batch, accumulation, sequence length, LoRA rank/alpha/dropout, precision flags,
ZeRO stage, offload, GPU count) unchanged. Exit 77 (skipped) without PyYAML.
"""
import argparse
import ast
import itertools
import json
import pathlib
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # python3-yaml is in the test set-up (packaging/setup.sh test)
    print("PyYAML missing: skipped")
    sys.exit(77)

FORMATS = ["trainer", "sft", "accelerate", "deepspeed"]
DEFAULTS = {"method": "full", "precision": "bf16", "optimizer": "adamw", "micro_batch_size": 1,
            "sequence_length": 2048, "gradient_accumulation_steps": 1,
            "gradient_checkpointing": "none", "loss": "hf", "mode": "train"}
LORA_DEFAULTS = {"rank": 16, "alpha": 16.0, "dropout": 0.0}


def load_keys(folder, fmt):
    keys = set()
    for line in (folder / f"{fmt}.keys").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line)
    return keys


def call_name(node):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def python_calls(tree):
    """{callable: {keyword: value node}} and the dotted keyword paths used."""
    calls, paths = {}, []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node)
        # Only the library calls carry documented keywords (not print, ...).
        if name is None or not node.keywords:
            continue
        calls.setdefault(name, {})
        for kw in node.keywords:
            calls[name][kw.arg] = kw.value
            paths.append(f"{name}.{kw.arg}")
            if isinstance(kw.value, ast.Dict):
                for k in kw.value.keys:
                    paths.append(f"{name}.{kw.arg}.{ast.literal_eval(k)}")
    return calls, paths


def mapping_paths(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}{k}"
            yield path
            yield from mapping_paths(v, path + ".")


def lit(calls, fn, kw):
    node = calls.get(fn, {}).get(kw)
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def expected(scenario):
    t = dict(DEFAULTS)
    t.update(scenario.get("training") or {})
    lora = dict(LORA_DEFAULTS)
    lora.update(t.get("lora") or {})
    par = {"gpus": 1, "sharding": "none", "tensor_parallel": 1}
    par.update(scenario.get("parallelism") or {})
    off = {"optimizer": False, "parameters": False}
    off.update(t.get("offload") or {})
    return t, lora, par, off


def check_python(text, fmt, scenario, keys, fail):
    tree = ast.parse(text)
    calls, paths = python_calls(tree)
    for p in paths:
        if p not in keys:
            fail(f"key {p} is not in {fmt}.keys")
    t, lora, par, off = expected(scenario)
    args = "SFTConfig" if fmt == "sft" else "TrainingArguments"
    want = {"per_device_train_batch_size": t["micro_batch_size"],
            "gradient_accumulation_steps": t["gradient_accumulation_steps"]}
    if fmt == "sft":
        want["max_length"] = t["sequence_length"]
    for k, v in want.items():
        if lit(calls, args, k) != v:
            fail(f"{args}.{k} = {lit(calls, args, k)!r}, scenario says {v!r}")
    bf16 = t["precision"] in ("bf16", "amp-bf16", "mixed-bf16")
    fp16 = t["precision"] in ("fp16", "amp-fp16", "mixed-fp16")
    if lit(calls, args, "bf16") != bf16 or lit(calls, args, "fp16") != fp16:
        fail(f"precision {t['precision']}: bf16={lit(calls, args, 'bf16')} fp16={lit(calls, args, 'fp16')}")
    if t["method"] != "full":
        if lit(calls, "LoraConfig", "r") != lora["rank"]:
            fail(f"LoraConfig.r = {lit(calls, 'LoraConfig', 'r')}, scenario rank {lora['rank']}")
        if float(lit(calls, "LoraConfig", "lora_alpha")) != float(lora["alpha"]):
            fail("lora_alpha differs")
        if float(lit(calls, "LoraConfig", "lora_dropout")) != float(lora["dropout"]):
            fail("lora_dropout differs")
    elif "LoraConfig" in calls:
        fail("a full fine-tune got a LoraConfig")
    if t["method"] == "qlora" and "BitsAndBytesConfig" not in calls:
        fail("QLoRA without a BitsAndBytesConfig")
    fsdp = par["sharding"].startswith("fsdp")
    ckpt = t["gradient_checkpointing"] != "none"
    gc = lit(calls, args, "gradient_checkpointing")
    fsdp_ckpt = (lit(calls, args, "fsdp_config") or {}).get("activation_checkpointing", False)
    if (gc or fsdp_ckpt) != ckpt or (gc and fsdp_ckpt):
        fail(f"checkpointing {t['gradient_checkpointing']}: gradient_checkpointing={gc}, fsdp={fsdp_ckpt}")
    if par["sharding"].startswith("zero") != (lit(calls, args, "deepspeed") is not None):
        fail("deepspeed= does not follow the sharding")
    if fsdp != (lit(calls, args, "fsdp") is not None):
        fail("fsdp= does not follow the sharding")
    if fsdp and ("hybrid_shard" in lit(calls, args, "fsdp")) != (par.get("shard_group", 0) > 0):
        fail("fsdp= does not follow shard_group")
    if (t["loss"] == "chunked") != bool(lit(calls, args, "use_liger_kernel")):
        fail("use_liger_kernel does not follow the loss")


def check_yaml(text, scenario, keys, fail):
    doc = yaml.safe_load(text)
    for p in mapping_paths(doc):
        if p not in keys:
            fail(f"key {p} is not in accelerate.keys")
    t, lora, par, off = expected(scenario)
    if doc["num_processes"] != par["gpus"]:
        fail(f"num_processes {doc['num_processes']} for {par['gpus']} GPUs")
    mp = {"fp32": "no"}.get(t["precision"], "bf16" if "bf16" in t["precision"] else "fp16")
    if doc["mixed_precision"] != mp:
        fail(f"mixed_precision {doc['mixed_precision']!r} for {t['precision']}")
    s = par["sharding"]
    if s.startswith("fsdp"):
        fc = doc["fsdp_config"]
        hybrid = par.get("shard_group", 0) > 0
        want = {(True, False): "FULL_SHARD", (False, False): "SHARD_GRAD_OP",
                (True, True): "HYBRID_SHARD", (False, True): "HYBRID_SHARD_ZERO2"}[(s == "fsdp-full", hybrid)]
        if doc["distributed_type"] != "FSDP" or fc["fsdp_reshard_after_forward"] != want:
            fail("FSDP sharding not written")
        if fc["fsdp_offload_params"] != off["parameters"]:
            fail("fsdp_offload_params differs")
        if fc["fsdp_activation_checkpointing"] != (t["gradient_checkpointing"] != "none"):
            fail("fsdp_activation_checkpointing differs")
    elif s.startswith("zero"):
        dc = doc["deepspeed_config"]
        if doc["distributed_type"] != "DEEPSPEED" or dc["zero_stage"] != int(s[-1]):
            fail("ZeRO stage not written")
        if dc["gradient_accumulation_steps"] != t["gradient_accumulation_steps"]:
            fail("gradient_accumulation_steps differs")
        if (dc["offload_optimizer_device"] == "cpu") != off["optimizer"]:
            fail("offload_optimizer_device differs")
        if (dc["offload_param_device"] == "cpu") != off["parameters"]:
            fail("offload_param_device differs")
    elif doc["distributed_type"] != ("MULTI_GPU" if par["gpus"] > 1 else "NO"):
        fail(f"distributed_type {doc['distributed_type']}")


def check_json(text, scenario, keys, fail):
    doc = json.loads(text)
    for p in mapping_paths(doc):
        if p not in keys:
            fail(f"key {p} is not in deepspeed.keys")
    t, lora, par, off = expected(scenario)
    dp = par["gpus"] // par["tensor_parallel"]
    if doc["train_micro_batch_size_per_gpu"] != t["micro_batch_size"]:
        fail("train_micro_batch_size_per_gpu differs")
    if doc["gradient_accumulation_steps"] != t["gradient_accumulation_steps"]:
        fail("gradient_accumulation_steps differs")
    if doc["train_batch_size"] != t["micro_batch_size"] * t["gradient_accumulation_steps"] * dp:
        fail("train_batch_size is not micro-batch x accumulation x data-parallel GPUs")
    s = par["sharding"]
    stage = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp-full": 3, "fsdp-grad-op": 2}[s]
    z = doc["zero_optimization"]
    if z["stage"] != stage:
        fail(f"stage {z['stage']} for {s}")
    if ("offload_optimizer" in z) != off["optimizer"] or ("offload_param" in z) != off["parameters"]:
        fail("offload differs")
    mics = par.get("shard_group", 0) if stage == 3 else 0
    if z.get("mics_shard_size", 0) != mics:
        fail(f"mics_shard_size {z.get('mics_shard_size')} for shard_group {par.get('shard_group', 0)}")
    p = t["precision"]
    if p in ("bf16", "mixed-bf16") and not doc.get("bf16", {}).get("enabled"):
        fail("bf16 not enabled")
    if p in ("fp16", "mixed-fp16") and not doc.get("fp16", {}).get("enabled"):
        fail("fp16 not enabled")
    if p.startswith("amp-") and not doc.get("torch_autocast", {}).get("enabled"):
        fail("torch_autocast not enabled")
    if p == "fp32" and any(k in doc for k in ("bf16", "fp16", "torch_autocast")):
        fail("fp32 with a 16-bit section")


def grid():
    """Scenarios over the settings the exports translate: every method x precision x sharding, with
    the optimizer, offload, checkpointing and loss cycling through their values so that each
    appears with each sharding. Invalid combinations are skipped (the command line refuses them
    with exit 1 before exporting)."""
    optimizers = ["adamw", "adamw-8bit", "sgd-momentum", "adamw-fused", "paged-adamw-8bit"]
    offloads = ["none", "optimizer", "both"]
    for i, (method, precision, sharding) in enumerate(itertools.product(
            ["full", "lora", "qlora"],
            ["fp32", "amp-bf16", "amp-fp16", "bf16", "fp16", "mixed-bf16", "mixed-fp16"],
            ["none", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"])):
        offload = offloads[i % 3]
        if offload == "both" and sharding not in ("zero3", "fsdp-full"):
            offload = "optimizer"
        if sharding == "none":
            offload = "none"
        training = {"method": method, "precision": precision, "optimizer": optimizers[i % 5],
                    "micro_batch_size": 2, "sequence_length": 1024,
                    "gradient_accumulation_steps": 8,
                    "gradient_checkpointing": ["none", "full", "selective"][i % 3],
                    "loss": ["hf", "chunked"][i % 2],
                    "offload": {"optimizer": offload != "none", "parameters": offload == "both"}}
        if method != "full":
            training["lora"] = {"rank": 32, "alpha": 64, "dropout": 0.05,
                                "targets": ["q_proj", "v_proj"] if method == "lora" else ["all-linear"]}
        yield {"format": "membudget/1", "name": f"grid {method} {precision} {sharding}",
               "model": {"preset": "llama-3.1-8b"}, "training": training,
               "parallelism": {"gpus": 4, "sharding": sharding,
                               **({"shard_group": 2} if sharding != "none" and i % 4 == 3 else {})}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--membudget", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    root = pathlib.Path(args.source)
    keys = {f: load_keys(root / "tests/data/export-keys", f) for f in FORMATS}
    failures, checked = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = []
        for path in sorted((root / "presets/scenarios").glob("*.yaml")):
            doc = yaml.safe_load(path.read_text())
            if (doc.get("training") or {}).get("mode", "train") == "train":
                scenarios.append((path, doc))
        for i, doc in enumerate(grid()):
            path = pathlib.Path(tmp) / f"grid-{i}.yaml"
            path.write_text(yaml.safe_dump(doc))
            scenarios.append((path, doc))
        for path, doc in scenarios:
            for fmt in FORMATS:
                r = subprocess.run([args.membudget, "export-config", str(path), "--format", fmt],
                                   capture_output=True, text=True)
                if r.returncode == 1 and path.name.startswith("grid-"):
                    break  # a combination MemBudget refuses (e.g. QLoRA with DeepSpeed offload)
                where = f"{path.name} [{doc.get('name')}] --format {fmt}"
                if r.returncode != 0:
                    failures.append(f"{where}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                fail = lambda msg: failures.append(f"{where}: {msg}")
                try:
                    if fmt in ("trainer", "sft"):
                        check_python(r.stdout, fmt, doc, keys[fmt], fail)
                    elif fmt == "accelerate":
                        check_yaml(r.stdout, doc, keys[fmt], fail)
                    else:
                        check_json(r.stdout, doc, keys[fmt], fail)
                except Exception as e:  # a file that does not parse
                    fail(f"{type(e).__name__}: {e}")
                checked += 1
    for f in failures[:40]:
        print("FAIL", f)
    print(f"{checked} exports checked, {len(failures)} problems")
    return 1 if failures or checked < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
