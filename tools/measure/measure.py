#!/usr/bin/env python3
"""Measure what one training step of a MemBudget scenario really uses, in PyTorch.

    python3 tools/measure/measure.py SCENARIO.yaml [--device cpu|cuda] [--steps N] [-o out.json]

Builds a Llama decoder that mirrors Hugging Face's (random weights, random token ids, seeded; no
downloads), runs N - 1 warm-up steps and one measured step, and writes JSON: parameter, weight,
gradient and optimizer-state bytes, the bytes autograd saves for backward (by storage and by view),
and per-phase memory (CUDA allocator counters, or live tensor storages on CPU). See README.md.

Exit codes: 0 ok, 1 bad input, 2 usage, 3 a valid scenario the harness cannot reproduce, 4 torch
failed to run it on this device (e.g. fp16 matmuls on a CPU), 5 the GPU ran out of memory (with -o,
the JSON then says so: "out_of_memory": true).
"""

import argparse
import gc
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import llama_model  # noqa: E402
import op_selective  # noqa: E402
import lora as lora_mod  # noqa: E402
import scenario as scenario_mod  # noqa: E402
import torch_compat  # noqa: E402
from memory_tracker import OpTracker, PhaseMeter  # noqa: E402
from saved_tensors import SavedTensorRecorder, dtype_name  # noqa: E402
from training import Setup, optimizer_foreach, train_step  # noqa: E402

HARNESS_VERSION = "membudget-measure/1"


def unique_storage_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is None:
            continue
        ptr, nbytes = torch_compat.storage_key(t)
        seen.setdefault(ptr, nbytes)
    return sum(seen.values())


class MeasuredStep:
    """Observer for the measured step: phases, saved tensors, gradients and optimizer states."""

    def __init__(self, setup, meter, recorder, tracker):
        self.setup = setup
        self.meter = meter
        self.recorder = recorder
        self.tracker = tracker
        self.walked_nodes = 0
        self.policy_kept_bytes = 0
        self.alive_tokens_after_backward = None
        self.gradient_bytes = None
        self.optimizer_state_bytes = None
        self.state_bytes_by_key = {}
        self.times = {}
        self._t0 = None
        self.checkpointing = setup.scenario.training.gradient_checkpointing in ("full", "op-selective")

    def begin(self, phase):
        self.meter.begin(phase)
        self._t0 = time.perf_counter()

    def end(self, phase):
        self.meter.end(phase)
        self.times[phase] = self.times.get(phase, 0.0) + time.perf_counter() - self._t0

    def forward_hooks(self, micro):
        return self.recorder.hooks("forward") if micro == 0 else _null()

    def after_forward(self, loss, micro):
        # With activation offloading the walk would unpack, and so bring back, what was offloaded.
        if micro == 0:
            self.recorder.mark_forward_end()
        if micro == 0 and not self.setup.scenario.training.activation_offloading:
            self.walked_nodes = self.recorder.attribute(loss.grad_fn)
            # Op-level selective checkpointing: what the policy keeps is no saved tensor.
            kept = getattr(self.setup.model.model, "policy_kept", [])
            self.policy_kept_bytes = op_selective.kept_bytes(t for layer in kept for t in layer)

    def backward_hooks(self, micro):
        # With checkpointing the layers run again inside backward and save their tensors then.
        return self.recorder.hooks("backward") if (micro == 0 and self.checkpointing) else _null()

    def after_backward(self, micro):
        if micro == 0:
            gc.collect()
            self.alive_tokens_after_backward = self.recorder.alive_tokens()
        self.gradient_bytes = unique_storage_bytes(p.grad for p in self.setup.trainable())

    def after_step(self):
        by_key = {}
        for state in self.setup.optimizer.state.values():
            for key, value in state.items():
                if isinstance(value, torch.Tensor):
                    by_key[key] = by_key.get(key, 0) + value.numel() * value.element_size()
        self.state_bytes_by_key = by_key
        self.optimizer_state_bytes = unique_storage_bytes(self.setup.state_tensors())


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def device_description(device):
    dev = torch.device(device)
    if dev.type == "cuda":
        return "%s (%s)" % (dev, torch.cuda.get_device_name(dev))
    return "%s (%s)" % (dev, platform.processor() or platform.machine())


def start_snapshot(path, device):
    """Records the allocator's history (torch.cuda.memory._record_memory_history, Python frames
    only: C++ frames take minutes to symbolize) from here on, for _dump_snapshot."""
    if not path:
        return False
    if device.type != "cuda":
        raise scenario_mod.Unsupported("--snapshot needs a CUDA device (the caching allocator's trace)")
    torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
    _RECORDING.append(path)
    return True


def dump_snapshot(path):
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    _RECORDING.clear()


_RECORDING = []  # the snapshot path while the allocator's history is being recorded


def allocator_counters(device):
    """The caching allocator's own counters over the whole run: how often it had to free its cache
    and retry a cudaMalloc (a run close to the capacity), and its settings."""
    stats = torch.cuda.memory_stats(device)
    free, total = torch.cuda.mem_get_info(device)
    return {
        "alloc_retries": stats.get("num_alloc_retries", 0),
        "ooms": stats.get("num_ooms", 0),
        "device_capacity_bytes": total,
        "allocator_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }


def oom_report(args, err):
    """What is known when the GPU ran out of memory: the allocator's peaks so far."""
    device = torch.device(args.device)
    out = {"harness": HARNESS_VERSION, "torch_version": torch.__version__,
           "device": device_description(device), "out_of_memory": True,
           "message": str(err).strip().splitlines()[0] if str(err).strip() else "out of memory"}
    try:
        out["memory"] = dict(allocator_counters(device),
                             peak_bytes=torch.cuda.max_memory_allocated(device),
                             peak_reserved_bytes=torch.cuda.max_memory_reserved(device))
    except RuntimeError:
        pass
    return out


def scenario_notes(sc, setup):
    tr = sc.training
    notes = []
    notes.append("position_ids are [1, s] as HF builds them from cache_position, so cos/sin are "
                 "[1, s, head_dim] in the hidden dtype, computed once and shared by all layers")
    if tr.attention == "eager":
        notes.append("eager attention gets a [b, 1, s, s] causal mask in the hidden dtype, cloned "
                     "because the batch carries an all-ones attention_mask (HF Trainer collators)")
    if tr.gradient_checkpointing == "full":
        notes.append("reentrant checkpointing: the forward hooks see only what each checkpoint saves "
                     "(its tensor inputs: hidden states, causal mask, position_ids, cache_position; "
                     "the cos/sin tuple is held by ctx.inputs, not saved); the recomputation inside "
                     "backward is counted separately as saved_recompute_bytes_per_layer")
    if tr.method == "lora" and tr.gradient_checkpointing == "none":
        notes.append("LoRA without checkpointing: the embedding output does not require grad, so "
                     "layer 0's input norm and frozen projections save less than later layers; "
                     "read the per-layer figures from layer 1 on")
    if tr.method == "lora" and tr.gradient_checkpointing == "full":
        notes.append("LoRA with checkpointing: enable_input_require_grads() makes the embedding "
                     "output require grad, as PEFT does")
    notes.append("optimizer %s: %s, foreach=%s" % (tr.optimizer, type(setup.optimizer).__name__,
                                                 optimizer_foreach(setup.optimizer)))
    return notes


def run(args):
    arch_override = scenario_mod.load_arch_json(args.arch_json) if args.arch_json else None
    overrides = []
    for item in args.set or []:
        if "=" not in item:
            raise scenario_mod.ScenarioError("--set %s: expected KEY=VALUE" % item)
        key, value = item.split("=", 1)
        overrides.append((key.strip(), value))
    sc = scenario_mod.load(args.scenario, arch_override, overrides)
    if sc.training.mode != "train":
        raise scenario_mod.Unsupported("mode %s: measure.py measures training steps; "
                                       "measure_generation.py measures generation" % sc.training.mode)
    llama_model.SDPA_STYLE = args.hf_sdpa
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise scenario_mod.Unsupported("--device %s: CUDA is not available in this torch" % args.device)
    foreach = {"default": None, "on": True, "off": False}[args.foreach]
    # --snapshot-from-load: the trace starts with an empty allocator, before the weights exist.
    loading = args.snapshot_from_load and start_snapshot(args.snapshot, torch.device(args.device))
    setup = Setup(sc, args.device, args.seed, foreach)
    device = setup.device

    recording = loading or (args.snapshot_warmup and start_snapshot(args.snapshot, device))
    t_start = time.perf_counter()
    warmup_peak = None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(args.steps - 1):
        train_step(setup)
    if device.type == "cuda" and args.steps > 1:
        torch.cuda.synchronize(device)
        warmup_peak = torch.cuda.max_memory_allocated(device)
    t_warm = time.perf_counter() - t_start
    gc.collect()

    model = setup.model
    recorder = SavedTensorRecorder(model, sc.arch.vocab_size)
    tracker = None
    if OpTracker is not None and not args.no_dispatch:
        tracker = OpTracker(recorder.param_storages.keys(), track_live=device.type == "cpu",
                            record_events=args.events)
        recorder.weight_copy_storages = tracker.weight_copies
    meter = PhaseMeter(device, tracker)
    obs = MeasuredStep(setup, meter, recorder, tracker)
    baseline_tensors = list(model.parameters()) + list(model.buffers()) + setup.state_tensors()
    baseline_tensors += [p.grad for p in model.parameters() if p.grad is not None]
    for batch in setup.batches:
        baseline_tensors += list(batch)
    recording = recording or start_snapshot(args.snapshot, device)
    if tracker is not None:
        with tracker:
            tracker.register(baseline_tensors)
            baseline = tracker.live_bytes if tracker.track_live else None
            loss = train_step(setup, obs)
    else:
        baseline = None
        loss = train_step(setup, obs)
    if recording:
        dump_snapshot(args.snapshot)
    if device.type == "cuda":
        baseline = None  # phases carry their own start_bytes
    recorder.detach(model)
    saved = recorder.summary(sc.arch.layers)

    total, trainable = llama_model.count_parameters(model)
    arch = sc.arch
    tr = sc.training
    adapters = (lora_mod.expected_trainable(arch, tr.lora) if tr.method == "lora"
                else lora_mod.expected_ia3(arch, tr.ia3_targets) if tr.method == "ia3" else 0)
    expected_trainable = adapters if tr.method != "full" else llama_model.expected_parameters(arch)
    expected_total = llama_model.expected_parameters(arch) + adapters
    params = list({id(p): p for p in model.parameters()}.values())
    weight_bytes = unique_storage_bytes(params)
    adapter_bytes = unique_storage_bytes(p for n, p in model.named_parameters() if ".lora_" in n)

    notes = torch_compat.probe_notes(device, setup.param_dtype, setup.amp_dtype)
    notes += scenario_notes(sc, setup)
    if tracker is None and device.type == "cpu":
        notes.append("no TorchDispatchMode: CPU memory per phase is not measured (null)")
    if tracker is None and setup.amp_dtype is not None:
        notes.append("without the op tracker autocast's weight copies cannot be told apart: they are "
                     "counted as activations (lm_head's as logits)")
    if tracker is not None and tracker.weight_copies:
        notes.append("%d dtype casts of parameters seen (autocast's 16-bit weight copies); those "
                     "autograd saves are reported as saved_weight_copy_bytes, not as activations"
                     % len(tracker.weight_copies))

    result = {
        "harness": HARNESS_VERSION,
        "scenario": sc.to_json(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device_description(device),
        "seed": args.seed,
        "steps": args.steps,
        "hf_sdpa": args.hf_sdpa,
        "torch_notes": notes,
        "parameters": total,
        "trainable_parameters": trainable,
        "expected_parameters": expected_total,
        "expected_trainable_parameters": expected_trainable,
        "lora_wrapped_linears": setup.wrapped_linears,
        "param_dtype": dtype_name(setup.param_dtype),
        "autocast_dtype": dtype_name(setup.amp_dtype) if setup.amp_dtype is not None else None,
        "weight_bytes": weight_bytes,
        "adapter_weight_bytes": adapter_bytes,
        "buffer_bytes": unique_storage_bytes(model.buffers()),
        "gradient_bytes": obs.gradient_bytes,
        "optimizer": {
            "name": tr.optimizer,
            "class": type(setup.optimizer).__name__,
            "foreach": optimizer_foreach(setup.optimizer),
            "state_bytes_by_key": obs.state_bytes_by_key,
        },
        "optimizer_state_bytes": obs.optimizer_state_bytes,
    }
    result.update(saved)
    result["saved_tokens_alive_after_backward"] = obs.alive_tokens_after_backward
    result["graph_nodes_walked"] = obs.walked_nodes
    result["policy_kept_bytes"] = obs.policy_kept_bytes
    mem = meter.summary()
    mem["baseline_bytes"] = baseline
    mem["warmup_peak_bytes"] = warmup_peak
    mem["micro_steps"] = tr.gradient_accumulation_steps
    if device.type == "cuda":
        mem.update(allocator_counters(device))
    mem["dispatch_ops"] = tracker.ops if tracker is not None else None
    if tracker is not None and tracker.events is not None:
        tracker.poll()
        mem["events"] = tracker.events
    result["memory"] = mem
    result["tokens_per_micro_batch"] = tr.micro_batch_size * tr.sequence_length
    result["loss"] = loss
    result["wall_time_s"] = dict({k: round(v, 4) for k, v in obs.times.items()}, warmup=round(t_warm, 4))
    if args.verbose:
        result["saved_tensors"] = [r.to_json() for r in recorder.records]
        print(recorder.table("forward"), file=sys.stderr)
        if any(r.phase == "backward" for r in recorder.records):
            print("\n---- saved during backward (checkpoint recomputation) ----", file=sys.stderr)
            print(recorder.table("backward"), file=sys.stderr)
        print("", file=sys.stderr)
    return result


def build_parser():
    parser = argparse.ArgumentParser(
        description="Measure one training step of a MemBudget scenario in PyTorch (see README.md).")
    parser.add_argument("scenario", help="scenario YAML (format membudget/1) with explicit architecture keys")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    parser.add_argument("--steps", type=int, default=2,
                        help="training steps to run; the last one is measured (default 2: one warm-up)")
    parser.add_argument("-o", "--output", help="write the JSON here instead of stdout")
    parser.add_argument("--arch-json", help="JSON object of architecture keys (a resolved preset); keys "
                                            "in the scenario file override it")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a scenario key, e.g. --set training.precision=bf16 (repeatable)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--foreach", choices=("default", "on", "off"), default="default",
                        help="optimizer foreach implementation (default: torch's choice)")
    parser.add_argument("--no-dispatch", action="store_true",
                        help="do not run the TorchDispatchMode op tracker (no CPU memory, no weight-copy "
                             "detection)")
    parser.add_argument("--events", action="store_true",
                        help="CPU: record the measured step's allocations and frees in order "
                             "(memory.events), to compare with MemBudget's step timeline")
    parser.add_argument("--hf-sdpa", choices=("legacy", "current"), default="legacy",
                        help="attention: sdpa as transformers 4.48-4.53 wrote it (legacy: repeat_kv and "
                             "contiguous copies) or as later releases do (current: enable_gqa with torch "
                             ">= 2.5, no copies)")
    parser.add_argument("--snapshot", metavar="FILE",
                        help="CUDA: record the measured step's allocator trace and write it to FILE "
                             "(torch.cuda.memory._dump_snapshot; read it with membudget snapshot)")
    parser.add_argument("--snapshot-warmup", action="store_true",
                        help="with --snapshot: record from the first warm-up step on (an out-of-"
                             "memory failure in warm-up is then in the trace too)")
    parser.add_argument("--snapshot-from-load", action="store_true",
                        help="with --snapshot: record from before the model is built, so that the "
                             "trace starts with an empty allocator (expandable segments included)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the saved-tensor table to stderr and add it to the JSON")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    try:
        result = run(args)
    except scenario_mod.ScenarioError as err:  # Unsupported included
        return scenario_mod.report_scenario_error("measure", err)
    except (RuntimeError, NotImplementedError) as err:
        if is_out_of_memory(err):
            print("measure: out of memory on %s: %s" % (args.device, str(err).strip().splitlines()[0]),
                  file=sys.stderr)
            if args.output:
                write_json(args.output, oom_report(args, err))
            if _RECORDING:  # the trace up to the failed request, its "oom" event included
                dump_snapshot(_RECORDING[0])
            return 5
        # e.g. "addmm_impl_cpu_" not implemented for 'Half': fp16 matmuls on the CPU of torch 1.13
        return report_torch_failure("measure", args.device, err)
    return emit(result, args.output)


def report_torch_failure(tool, device, err):
    """Prints the first line of why torch could not run the scenario; returns exit code 4."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    print("%s: torch %s could not run this scenario on %s: %s"
          % (tool, torch.__version__, device, first), file=sys.stderr)
    return 4


def emit(result, output):
    """Writes the result's JSON to `output`, or to stdout without one; returns exit code 0."""
    if output:
        write_json(output, result)
    else:
        print(json.dumps(result, indent=2, sort_keys=False))
    return 0


def is_out_of_memory(err):
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or "CUDA out of memory" in str(err)


def write_json(path, result):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(result, indent=2, sort_keys=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
