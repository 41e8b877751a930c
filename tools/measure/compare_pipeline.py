#!/usr/bin/env python3
"""A pipeline stage's memory against PyTorch on CPU.

For every case under cases/pipeline/ (or the files given): `membudget estimate --json` names the
stage it models (the one that allocates the most) and the micro-batches that stage holds at once;
with 1F1B and interleaved 1F1B, whose stages hold different numbers of micro-batches, every stage is
checked through
`estimate --stage N` (with GPipe each holds all of them: the stage the estimate picks). For each,
pipeline_stage.py builds that stage and runs its schedule over two steps; the second step's forward
and backward peaks (live CPU storages, parameters, gradients and optimizer states included) must
agree within 1% with the estimate's allocated bytes of those phases, once torch 1.13's mean()
copies are added to the estimate: an fp32 x^2 of 4 x hidden bytes per token for each RMSNorm whose
input needs a gradient and whose pass is held (mean_extra; compare.py's cpu_mean_extra; the cases
are full fine-tuning without checkpointing or dropout, where that count holds).
Exit status 1 when a case misses, 77 when torch is missing.
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
TOLERANCE = 0.01


def mean_extra(scenario, pipeline, torch_version):
    """torch 1.x's mean() copies the stage holds at once: two per layer for every micro-batch in
    flight, and the final norm's on the last stage for each micro-batch holding the loss (all of
    them with GPipe; one with 1F1B, and with interleaving, where only the last chunk's passes hold
    the loss and the stage's peak holds one such pass)."""
    if not torch_version.startswith("1."):
        return 0
    tr = scenario["training"]
    tokens = tr["micro_batch_size"] * tr["sequence_length"]
    in_flight = pipeline["in_flight_micro_batches"]
    norms = 2 * pipeline["layers"] * in_flight
    if pipeline["stage"] == pipeline["stages"] - 1:
        norms += 1 if pipeline["schedule"] == "interleaved-1f1b" else in_flight
    return norms * 4 * scenario["model"]["hidden_size"] * tokens


def estimate(membudget, case, stage=None):
    command = [membudget, "estimate", case, "--json"]
    if stage is not None:
        command += ["--stage", str(stage + 1)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def measure(python, case, stage):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stage.json")
        subprocess.run([python, os.path.join(HERE, "pipeline_stage.py"), case, "--stage", str(stage),
                        "-o", out], check=True, capture_output=True, text=True)
        with open(out, encoding="utf-8") as fh:
            return json.load(fh)


def compare_stage(case, scenario, est, python):
    pipeline = est["per_gpu"]["pipeline"]
    measured = measure(python, case, pipeline["stage"])
    extra = mean_extra(scenario, pipeline, measured["torch_version"])
    rows = []
    for phase in ("forward", "backward"):
        got = measured["memory"]["phases"][phase]["peak_bytes"]
        want = est["per_gpu"]["phases"][phase]["allocated"] + extra
        error = (want - got) / got
        rows.append((phase + " peak", got, want, error, abs(error) <= TOLERANCE))
    return pipeline, measured, rows


def compare(case, membudget, python):
    """[(pipeline, measured, rows)] for the stages the case checks."""
    with open(case, encoding="utf-8") as fh:
        scenario = yaml.safe_load(fh)
    tr = scenario.get("training", {})
    if (tr.get("method", "full") != "full" or tr.get("gradient_checkpointing", "none") != "none"
            or scenario["model"].get("hidden_dropout", 0) or scenario["model"].get("attention_dropout", 0)):
        raise SystemExit("%s: the cases are full fine-tuning without checkpointing or dropout" % case)
    worst = estimate(membudget, case)
    pipeline = worst["per_gpu"]["pipeline"]
    if pipeline["schedule"] == "gpipe":
        return [compare_stage(case, scenario, worst, python)]
    return [compare_stage(case, scenario, estimate(membudget, case, stage), python)
            for stage in range(pipeline["stages"])]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="scenario files (default: cases/pipeline/*.yaml)")
    parser.add_argument("--membudget", default=os.environ.get("MEMBUDGET", "membudget"))
    parser.add_argument("--python", default=sys.executable, help="python with torch")
    args = parser.parse_args()
    if compare_saved.torch_missing(args.python):
        return 77
    folder = os.path.join(HERE, "cases", "pipeline")
    cases = args.cases or sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".yaml"))
    failures = 0
    for case in cases:
        for pipeline, measured, rows in compare(case, args.membudget, args.python):
            print("%s: stage %d of %d (%s, %g micro-batches in flight; torch %s)"
                  % (os.path.basename(case), pipeline["stage"] + 1, pipeline["stages"],
                     pipeline["schedule"], pipeline["in_flight_micro_batches"], measured["torch_version"]))
            for what, got, want, error, ok in rows:
                print("  %-16s measured %12s  estimated %12s  %+7.2f%%  %s"
                      % (what, format(got, ","), format(int(want), ","), 100 * error, "ok" if ok else "MISS"))
                failures += 0 if ok else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
