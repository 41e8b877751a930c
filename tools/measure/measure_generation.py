#!/usr/bin/env python3
"""Measure what generation with a MemBudget inference scenario really holds, in PyTorch.

    python3 tools/measure/measure_generation.py SCENARIO.yaml [--device cpu|cuda] [--events] [-o out.json]

The scenario has `mode: inference`: micro_batch_size sequences of sequence_length prompt tokens,
then inference.generated_tokens decode steps. Builds the harness's Llama decoder (random weights in
the scenario's precision, random prompt ids, seeded; no downloads) and runs greedy generation as
transformers' generate() does (generation.py), measuring each forward: the prefill, the decode steps
before the last (decode_earlier) and the last one (decode), where the cache is largest. Writes JSON
with per-phase memory as measure.py does (CUDA allocator counters, or live tensor storages on CPU)
and, with --events, every allocation and free in order, to compare with MemBudget's timeline
(compare_generation.py).

Exit codes: 0 ok, 1 bad input, 2 usage, 3 a valid scenario the harness cannot reproduce, 4 torch
failed to run it on this device.
"""

import argparse
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import generation  # noqa: E402
import llama_model  # noqa: E402
import scenario as scenario_mod  # noqa: E402
from measure import (device_description, emit, report_torch_failure,  # noqa: E402
                     unique_storage_bytes)
from memory_tracker import OpTracker, PhaseMeter  # noqa: E402

HARNESS_VERSION = "membudget-measure/1"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def build(sc, device, seed):
    """The model in eval mode in the scenario's precision, and the prompt ids."""
    tr = sc.training
    if tr.mode != "inference":
        raise scenario_mod.Unsupported("mode %s: measure_generation.py measures inference "
                                       "(measure.py measures training steps)" % tr.mode)
    if tr.precision not in DTYPES:
        raise scenario_mod.Unsupported("precision %s: generation is measured with the weights in "
                                       "one dtype (fp32, bf16 or fp16)" % tr.precision)
    if tr.attention != "eager" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        raise scenario_mod.Unsupported("attention %s: scaled_dot_product_attention is unavailable in "
                                       "torch %s; measure attention: eager" % (tr.attention, torch.__version__))
    torch.manual_seed(seed)
    model = llama_model.LlamaForCausalLM(sc.arch, tr.attention, device=device, dtype=DTYPES[tr.precision])
    model.init_weights()
    model.eval()
    gen = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(0, sc.arch.vocab_size, (tr.micro_batch_size, tr.sequence_length), generator=gen)
    return model, ids.to(device)


def run(args):
    sc = scenario_mod.load(args.scenario)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise scenario_mod.Unsupported("--device %s: CUDA is not available in this torch" % args.device)
    model, ids = build(sc, device, args.seed)
    baseline_tensors = list(model.parameters()) + list(model.buffers()) + [ids]
    tracker = None
    if OpTracker is not None:
        tracker = OpTracker(set(), track_live=device.type == "cpu", record_events=args.events)
    meter = PhaseMeter(device, tracker)
    current = []

    def mark(phase):
        if current:
            meter.end(current.pop())
        if phase != "end":
            meter.begin(phase)
            current.append(phase)

    if tracker is not None:
        with tracker:
            tracker.register(baseline_tensors)
            baseline = tracker.live_bytes if tracker.track_live else None
            out = generation.generate(model, ids, sc.training.generated_tokens, mark)
    else:
        baseline = None
        out = generation.generate(model, ids, sc.training.generated_tokens, mark)
    mem = meter.summary()
    mem["baseline_bytes"] = baseline if device.type == "cpu" else None
    mem["dispatch_ops"] = tracker.ops if tracker is not None else None
    if tracker is not None and tracker.events is not None:
        tracker.poll()
        mem["events"] = tracker.events
    return {
        "harness": HARNESS_VERSION,
        "scenario": dict(sc.to_json(), generated_tokens=sc.training.generated_tokens),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device_description(device),
        "seed": args.seed,
        "weight_bytes": unique_storage_bytes(model.parameters()),
        "generated_ids_shape": list(out.shape),
        "memory": mem,
        "torch_notes": [
            "greedy generation as transformers' generate() runs it with a DynamicCache (4.56 and "
            "later: the prefill's keys and values are copied into the cache)",
            "the eager mask is HF's 4.46-4.52 _update_causal_mask, [b, 1, q, past + q], cloned "
            "because generate() passes an all-ones attention_mask",
        ],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description="Measure greedy generation of a MemBudget "
                                                 "inference scenario in PyTorch (see README.md).")
    parser.add_argument("scenario", help="scenario YAML (mode: inference) with explicit architecture keys")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--events", action="store_true",
                        help="CPU: record every allocation and free in order (memory.events)")
    parser.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    try:
        result = run(args)
    except scenario_mod.ScenarioError as err:  # Unsupported included
        return scenario_mod.report_scenario_error("measure_generation", err)
    except (RuntimeError, NotImplementedError) as err:
        return report_torch_failure("measure_generation", args.device, err)
    return emit(result, args.output)


if __name__ == "__main__":
    sys.exit(main())
