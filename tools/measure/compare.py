#!/usr/bin/env python3
"""Cross-checks MemBudget's estimates against PyTorch on CPU.

For every case under cases/ (or the files given), runs measure.py and `membudget estimate --json`
and compares, exactly or within a tolerance:
  - parameters, trainable parameters, weight, gradient and optimizer-state bytes: exact;
  - bytes saved for backward at the end of forward (excluding logits-sized tensors; with op-level
    selective checkpointing, plus the outputs its policy keeps): within 3%;
  - for cases that name a loss variant (a `loss` other than `hf`), the forward peak (CPU live
    storages): within 3%;
  - AdamW cases: what the optimizer step allocates beyond the states, within 3%, estimated for the
    harness's torch release (1.13: foreach off by default, one tensor at a time), and for the first
    such case again with foreach on, estimated for torch 2.0 (whose default takes that path).
The estimator models PyTorch 2.x on CUDA. Differences of torch 1.13 on CPU are named and added to
the estimate before comparing (never baked into the model):
  - mean() keeps its input in 1.13, so each RMSNorm whose input needs a gradient holds an extra fp32
    x^2 (4 bytes x hidden per token);
  - CPU dropout keeps a mask in the input dtype instead of CUDA's 1-byte bool mask;
  - the loss targets (int64, 8 bytes per token) are a loss tensor in MemBudget's breakdown.
Exit status 1 when any case misses its target.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 0.03


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout if out.stdout.strip().startswith("{") else open(cmd[cmd.index("-o") + 1]).read())


def torch_missing(python):
    """Whether `python` cannot import torch (said on stdout): the comparisons then skip (exit 77)."""
    try:
        subprocess.run([python, "-c", "import torch"], check=True, capture_output=True)
        return False
    except (subprocess.CalledProcessError, FileNotFoundError):
        print("torch is not installed for this python (Debian: apt-get install python3-torch); skipped")
        return True


def cpu_mean_extra(scenario):
    """torch 1.13's mean() keeps its input: an extra fp32 x^2 per RMSNorm whose input needs a
    gradient (4 bytes x hidden per token each), held from its forward to its backward."""
    model, training = scenario["model"], scenario.get("training", {})
    layers, h = model["layers"], model["hidden_size"]
    tokens = training.get("micro_batch_size", 1) * training.get("sequence_length", 2048)
    if training.get("gradient_checkpointing", "none") == "full":
        # the final norm and those of the layers left outside the checkpoints
        norms = 1 + 2 * (layers - layers // training.get("checkpoint_every", 1))
    elif training.get("gradient_checkpointing", "none") == "op-selective":
        norms = 1  # every layer is checkpointed
    elif training.get("method", "full") == "full":
        norms = 2 * layers + 1
    else:
        norms = 2 * layers  # the first layer's input needs no gradient with a frozen embedding
    return norms * 4 * h * tokens


def cpu_dropout_extra(scenario):
    """CPU dropout keeps its mask in the input dtype instead of CUDA's 1-byte bool mask."""
    model, training = scenario["model"], scenario.get("training", {})
    layers, h = model["layers"], model["hidden_size"]
    tokens = training.get("micro_batch_size", 1) * training.get("sequence_length", 2048)
    lora = training.get("lora", {})
    if training.get("method", "full") == "full" or lora.get("dropout", 0.0) <= 0:
        return 0
    if training.get("gradient_checkpointing", "none") in ("full", "op-selective"):
        return 0
    targets = lora.get("targets", ["q_proj", "k_proj", "v_proj", "o_proj"])
    if targets == ["all-linear"] or targets == "all-linear":
        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    inter = model["intermediate_size"]
    q_width = model["attention_heads"] * model.get("head_dim", h // model["attention_heads"])
    width = {"q_proj": h, "k_proj": h, "v_proj": h, "o_proj": q_width, "gate_proj": h, "up_proj": h,
             "down_proj": inter}
    precision = training.get("precision", "bf16")
    adapter = lora.get("adapter_precision", "fp32")
    mask_bytes = 4 if (adapter == "fp32" or precision == "fp32") else 2
    if precision.startswith("amp"):
        mask_bytes = 4
    masked = layers * sum(width[t] for t in targets)
    # The first layer's q/k/v adapters read an input without gradient: no mask is kept there.
    masked -= sum(width[t] for t in targets if t in ("q_proj", "k_proj", "v_proj"))
    return masked * tokens * (mask_bytes - 1)


def torch_113_cpu_extra(scenario, measured):
    """Bytes torch 1.13 on CPU saves beyond what PyTorch 2.x on CUDA would, for this scenario."""
    model, training = scenario["model"], scenario.get("training", {})
    h = model["hidden_size"]
    tokens = training.get("micro_batch_size", 1) * training.get("sequence_length", 2048)
    extra = 0
    if str(measured.get("torch_version", "")).startswith("1."):
        extra += cpu_mean_extra(scenario)
    extra += cpu_dropout_extra(scenario)
    ckpt = training.get("gradient_checkpointing", "none")
    every_layer = training.get("checkpoint_every", 1) == 1 or ckpt == "op-selective"
    if ckpt in ("full", "op-selective") and every_layer and model.get("positions", "rotary") == "rotary" and model.get("family", "llama") in ("llama", "gemma"):
        # Reentrant checkpointing holds rotary cos/sin in ctx.inputs, out of saved_tensors_hooks' sight
        # (a layer outside the checkpoints saves them itself).
        head_dim = model.get("head_dim", h // model["attention_heads"])
        stream = 2 if training.get("precision", "bf16") in ("bf16", "fp16", "mixed-bf16", "mixed-fp16") else 4
        extra -= 2 * head_dim * stream * training.get("sequence_length", 2048)
    return extra, tokens


def measure(case, python, foreach="default"):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "measured.json")
        subprocess.run([python, os.path.join(HERE, "measure.py"), case, "--device", "cpu", "-o", out,
                        "--foreach", foreach], check=True, capture_output=True, text=True)
        with open(out) as f:
            return json.load(f)


def on_torch(stack, torch_release):
    """The case's stack told which PyTorch release runs it: plain-torch's version, another stack's
    `torch` (its own version names its library)."""
    if stack is None:
        return {"name": "plain-torch", "version": torch_release}
    stack = dict(stack) if isinstance(stack, dict) else {"name": stack}
    stack["version" if stack["name"] == "plain-torch" else "torch"] = torch_release
    return stack


def estimate_on_torch(case, scenario, membudget, torch_release, extra=()):
    """`membudget estimate --json` (and `extra` arguments) of the case told which PyTorch release
    runs it."""
    fd, path = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(dict(scenario, stack=on_torch(scenario.get("stack"), torch_release)), f)
    try:
        return json.loads(subprocess.run([membudget, "estimate", path, "--json", *extra],
                                         check=True, capture_output=True, text=True).stdout)
    finally:
        os.unlink(path)


# torch 1.x's Optimizer.step runs inside torch.autograd.profiler.record_function, whose
# _record_function_enter returns a 288-byte CPU tensor handle (2.x returns a script object); on a
# GPU it is host memory, outside torch.cuda's counts.
RECORD_FUNCTION_HANDLE = 288


def optimizer_workspace_row(name, measured, estimate):
    """What the optimizer step allocates beyond the states (live CPU storages over the step)."""
    step = measured["memory"]["phases"]["optimizer_step"]
    got = step["peak_bytes"] - step["start_bytes"]
    if str(measured.get("torch_version", "")).startswith("1.") and got >= RECORD_FUNCTION_HANDLE:
        got -= RECORD_FUNCTION_HANDLE
    want = estimate["per_gpu"]["phases"]["optimizer_step"]["temporaries"]
    error = (want - got) / got if got else (0.0 if want == 0 else float("inf"))
    return (name, got, want, error, abs(error) <= TOLERANCE)


def compare(case, membudget, python, check_foreach=False):
    with open(case) as f:
        scenario = yaml.safe_load(f)
    measured = measure(case, python)
    release = ".".join(measured["torch_version"].split(".")[:2])
    estimate = estimate_on_torch(case, scenario, membudget, release)
    phases = estimate["per_gpu"]["phases"]
    extra, tokens = torch_113_cpu_extra(scenario, measured)
    rows = []

    def exact(name, got, want):
        rows.append((name, want, got, 0.0 if want == got else float("inf"), want == got))

    # MemBudget's `parameters` is the base model; the PEFT model also holds the adapters.
    adapters = estimate["trainable_parameters"] if scenario.get("training", {}).get("method", "full") != "full" else 0
    exact("parameters", estimate["parameters"] + adapters, measured["parameters"])
    exact("trainable parameters", estimate["trainable_parameters"], measured["trainable_parameters"])
    exact("weight bytes", phases["optimizer_step"]["weights"],
          measured["weight_bytes"])
    exact("gradient bytes", phases["optimizer_step"]["gradients"], measured["gradient_bytes"])
    states = sum(v for k, v in measured["optimizer"]["state_bytes_by_key"].items() if k != "step")
    exact("optimizer state bytes", phases["optimizer_step"]["optimizer_states"], states)
    saved = estimate["per_gpu"].get("saved_activations", phases["forward"]["activations"])
    expected = saved + 8 * tokens + extra
    # Op-level selective checkpointing: the outputs its policy keeps are held by the policy, not
    # saved by autograd, so the harness counts them apart.
    got = measured["saved_activation_bytes"] + measured.get("policy_kept_bytes", 0)
    error = (expected - got) / got
    if not scenario.get("training", {}).get("activation_offloading", False):
        # With activation offloading what autograd saves mostly lives in CPU RAM: the live device
        # bytes are compared by compare_timeline.py instead.
        rows.append(("saved activations", got, expected, error, abs(error) <= TOLERANCE))
    if scenario.get("training", {}).get("loss", "hf") != "hf":
        # Loss-variant cases: the forward peak (live CPU storages), where the logits chain peaks.
        peak = measured["memory"]["phases"]["forward"]["peak_bytes"]
        estimated_peak = phases["forward"]["allocated"]
        if peak:
            error = (estimated_peak - peak) / peak
            rows.append(("forward peak", peak, estimated_peak, error, abs(error) <= TOLERANCE))
    if scenario.get("training", {}).get("optimizer", "adamw") == "adamw":
        rows.append(optimizer_workspace_row(f"AdamW workspace, torch {release}", measured, estimate))
        if check_foreach:
            # torch 1.13's _multi_tensor_adamw builds its denominators out of place, as 2.0's does
            # (torch/optim/adamw.py): the foreach path measured here is the one 2.0 takes by default.
            rows.append(optimizer_workspace_row(
                "AdamW workspace, foreach", measure(case, python, "on"),
                estimate_on_torch(case, scenario, membudget, "2.0")))
    return scenario.get("name", os.path.basename(case)), rows, measured


def main():
    if torch_missing(sys.argv[sys.argv.index("--python") + 1] if "--python" in sys.argv else sys.executable):
        return 77
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="scenario files (default: cases/*.yaml)")
    parser.add_argument("--membudget", default=os.environ.get("MEMBUDGET", "membudget"),
                        help="path of the membudget command line")
    parser.add_argument("--python", default=sys.executable, help="python with torch for measure.py")
    parser.add_argument("--json", help="write the table as JSON here")
    args = parser.parse_args()
    cases = args.cases or sorted(os.path.join(HERE, "cases", f) for f in os.listdir(os.path.join(HERE, "cases"))
                                 if f.endswith(".yaml"))
    failures = 0
    table = []
    foreach_checked = False
    for case in cases:
        with open(case) as f:
            adamw = (yaml.safe_load(f).get("training") or {}).get("optimizer", "adamw") == "adamw"
        name, rows, measured = compare(case, args.membudget, args.python,
                                       check_foreach=adamw and not foreach_checked)
        foreach_checked = foreach_checked or adamw
        print(f"{os.path.basename(case)}: {name} (torch {measured.get('torch_version')}, {measured.get('device')})")
        for what, measured_value, estimated, error, ok in rows:
            status = "ok" if ok else "MISS"
            shown = "exact" if error == 0 else ("differs" if error == float("inf") else f"{error:+.2%}")
            print(f"  {what:24s} measured {measured_value:>14,}  estimated {estimated:>14,}  {shown:>8s}  {status}")
            failures += 0 if ok else 1
            table.append({"case": os.path.basename(case), "what": what, "measured": measured_value,
                          "estimated": estimated, "error": None if error == float("inf") else error, "ok": ok})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    passed = sum(1 for r in table if r["ok"])
    print(f"{passed} passed, {len(table) - passed} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
