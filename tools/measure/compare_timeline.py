#!/usr/bin/env python3
"""Compares MemBudget's step timeline with the allocations PyTorch really makes, on CPU.

For every case under cases/ (or the files given), runs measure.py --events (a TorchDispatchMode sees
every aten op of the measured step and records each new tensor storage and each storage that died,
in order) and `membudget estimate --json --timeline`, then compares per phase (forward, backward,
optimizer step):
  - the peak above what the step starts with (weights, states, the batch): within PEAK_TOLERANCE;
  - the order of allocations: the longest common subsequence of the two lists of allocation sizes,
    as a share of the estimated allocations (how many of MemBudget's allocations PyTorch makes, in
    the same order): at least ORDER_TOLERANCE.
The estimator models PyTorch 2.x on CUDA; torch 1.13 on CPU differs in named ways that the comparison
adds to the estimate rather than to the model (see torch_113_cpu_peak_extra): mean() keeps its input
and CPU dropout masks are in the input dtype. The measured step runs AdamW with foreach=True, as
PyTorch does on CUDA by default; 1.13's foreach AdamW builds its denominators out of place, as 2.0's
does, so the estimate is told `stack: {name: plain-torch, version: "2.0"}` (foreach_release; a case
naming another stack keeps it, with `torch: "2.0"`).
Rotary tables and HF's mask are built from a few small temporaries MemBudget does not list.
Exit status 1 when a case misses a target.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as compare_saved  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PEAK_TOLERANCE = 0.05
ORDER_TOLERANCE = 0.80
PHASES = ("forward", "backward", "optimizer_step")
# Known misses, reported and not failed: (case file, phase). None at present; the three checkpointed
# forwards listed until 2026-11-30 pass since Python names' holds apply there (docs/accuracy.md,
# section 1).
KNOWN_MISSES = set()


def run_harness(python, script, case, extra_args=()):
    """Runs a harness script of this folder on `case` on the CPU, recording every allocation and
    free (--events), and returns its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "measured.json")
        subprocess.run([python, os.path.join(HERE, script), case, "--device", "cpu", "--events",
                        *extra_args, "-o", out], check=True, capture_output=True, text=True)
        with open(out) as f:
            return json.load(f)


def comparison_parser(doc, default_cases, harness):
    """The command line the comparison scripts share: cases, the membudget and python to run,
    and where to write the table as JSON."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="scenario files (default: %s)" % default_cases)
    parser.add_argument("--membudget", default=os.environ.get("MEMBUDGET", "membudget"))
    parser.add_argument("--python", default=sys.executable, help="python with torch for " + harness)
    parser.add_argument("--json", help="write the table as JSON here")
    return parser


def comparison_row(key, name, measured_peak, estimated_peak, m_allocs, e_allocs, compare_order=True):
    """One row of a comparison: the peaks' error and, unless told not to, the share of the
    estimate's allocation sizes PyTorch makes in the same order (None where not compared)."""
    error = (estimated_peak - measured_peak) / measured_peak if measured_peak else 0.0
    order = None
    if compare_order:
        order = lcs_length(e_allocs, m_allocs) / len(e_allocs) if e_allocs else 1.0
    ok = abs(error) <= PEAK_TOLERANCE and (order is None or order >= ORDER_TOLERANCE)
    return {key: name, "measured_peak": measured_peak, "estimated_peak": estimated_peak,
            "error": error, "order": order, "measured_allocations": len(m_allocs),
            "estimated_allocations": len(e_allocs), "ok": ok}


def measured_events(measured):
    """(phase, kind, bytes) after the step's first phase marker."""
    out, phase = [], None
    for e in measured["memory"]["events"]:
        if e[0] == "phase":
            phase = e[1]
            continue
        if phase is not None:
            out.append((phase, e[0], e[1]))
    return out


def estimated_events(estimate):
    return [(e["phase"], "alloc" if e["alloc"] else "free", e["bytes"])
            for e in estimate["timeline"] if e["stage"] != "resident"]


def peaks(events):
    """Peak above the step's starting point, per phase (a phase starts where the last ended)."""
    running, best = 0, {}
    for phase, kind, size in events:
        running += size if kind == "alloc" else -size
        best[phase] = max(best.get(phase, running), running)
    return best


def lcs_length(a, b):
    """Longest common subsequence of two sequences (sizes), O(len(a) * len(b)) with two rows."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1]


def torch_113_cpu_peak_extra(scenario, phase, measured, in_layer=False):
    """Bytes torch 1.13 on CPU holds at a phase's peak beyond PyTorch 2.x on CUDA: in forward and
    backward, mean() keeps its input and CPU dropout masks are not 1-byte (compare.py names both).
    The optimizer step needs none: the estimate is told the release whose AdamW the step ran.
    in_layer: the forward peaks inside a decoder layer, before the final norm has kept its x^2
    (under full checkpointing the layers' own norms keep nothing in forward)."""
    if phase == "optimizer_step":
        return 0
    old = str(measured.get("torch_version", "")).startswith("1.")
    mean = compare_saved.cpu_mean_extra(scenario) if old else 0
    training = scenario.get("training", {})
    if old and phase == "forward" and in_layer and training.get("gradient_checkpointing") == "full":
        tokens = training.get("micro_batch_size", 1) * training.get("sequence_length", 2048)
        mean -= 4 * scenario["model"]["hidden_size"] * tokens  # the final norm's, not yet made
    return mean + compare_saved.cpu_dropout_extra(scenario)


def peak_layers(estimate):
    """Per phase, the layer of the estimated event at which the running total peaks (-1: outside
    the decoder layers)."""
    running, best, layer = 0, {}, {}
    for e in estimate["timeline"]:
        if e["stage"] == "resident":
            continue
        running += e["bytes"] if e["alloc"] else -e["bytes"]
        if running > best.get(e["phase"], -1):
            best[e["phase"]], layer[e["phase"]] = running, e["layer"]
    return layer


def foreach_release(measured):
    """The PyTorch release whose default AdamW is the foreach path measured here: 1.13's
    _multi_tensor_adamw builds its denominators out of place as 2.0's does (two lists); later
    releases add eps in place (one list, model/torch_release.h)."""
    version = str(measured.get("torch_version", ""))
    return "2.0" if version.startswith("1.") else ".".join(version.split(".")[:2])


def compare(case, membudget, python):
    with open(case) as f:
        scenario = yaml.safe_load(f)
    # foreach=True: the optimizer step PyTorch takes on CUDA by default (CPU defaults to a loop).
    measured = run_harness(python, "measure.py", case, ["--foreach", "on"])
    estimate = compare_saved.estimate_on_torch(case, scenario, membudget,
                                               foreach_release(measured), ["--timeline"])
    m_events, e_events = measured_events(measured), estimated_events(estimate)
    m_peaks, e_peaks = peaks(m_events), peaks(e_events)
    rows = []
    for phase in PHASES:
        if phase not in m_peaks or phase not in e_peaks:
            continue
        in_layer = peak_layers(estimate).get(phase, -1) >= 0
        expected = e_peaks[phase] + torch_113_cpu_peak_extra(scenario, phase, measured, in_layer)
        m_allocs = [s for p, k, s in m_events if p == phase and k == "alloc"]
        e_allocs = [s for p, k, s in e_events if p == phase and k == "alloc"]
        # The optimizer step allocates its working list at once (MemBudget lists it as equal
        # parts): its peak is compared, not the order of sizes.
        rows.append(comparison_row("phase", phase, m_peaks[phase], expected, m_allocs, e_allocs,
                                   compare_order=phase != "optimizer_step"))
    return scenario.get("name", os.path.basename(case)), rows, measured


def main():
    python = sys.argv[sys.argv.index("--python") + 1] if "--python" in sys.argv else sys.executable
    if compare_saved.torch_missing(python):
        return 77
    args = comparison_parser(__doc__, "cases/*.yaml", "measure.py").parse_args()
    cases = args.cases or sorted(os.path.join(HERE, "cases", f)
                                 for f in os.listdir(os.path.join(HERE, "cases")) if f.endswith(".yaml"))
    table, failures = [], 0
    for case in cases:
        name, rows, measured = compare(case, args.membudget, args.python)
        print(f"{os.path.basename(case)}: {name} (torch {measured.get('torch_version')})")
        for r in rows:
            order = "-" if r["order"] is None else f"{r['order']:.0%}"
            known = (os.path.basename(case), r["phase"]) in KNOWN_MISSES
            verdict = "ok" if r["ok"] else ("known miss" if known else "MISS")
            print(f"  {r['phase']:15s} peak measured {r['measured_peak']:>12,} estimated "
                  f"{r['estimated_peak']:>12,} {r['error']:+8.2%}   order {order:>4s} of "
                  f"{r['estimated_allocations']} allocations ({r['measured_allocations']} measured)"
                  f"  {verdict}")
            failures += 0 if r["ok"] or known else 1
            table.append(dict(r, case=os.path.basename(case)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    print(f"{sum(r['ok'] for r in table)} passed, {failures} failed, "
          f"{len(table) - failures - sum(r['ok'] for r in table)} known misses")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
