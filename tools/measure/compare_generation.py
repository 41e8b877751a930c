#!/usr/bin/env python3
"""Compares MemBudget's inference timeline (prefill, then the last decode step) with the
allocations PyTorch really makes during greedy generation, on CPU.

For every case under cases/inference/ (or the files given), runs measure_generation.py --events
(every new tensor storage and every storage that died, in order, per forward) and `membudget
estimate --json --timeline`, then compares, per stage:
  - the peak above what generation starts with (weights and the prompt ids), counted from the
    prefill's start: within compare_timeline.PEAK_TOLERANCE. The last decode step's peak includes
    the cache the earlier steps grew, which MemBudget's timeline adds in one move before that step;
  - the order of allocations (longest common subsequence of the sizes, as a share of the estimated
    ones): at least compare_timeline.ORDER_TOLERANCE. In the decode stage MemBudget's one-move
    growth of the cache ("key cache", "value cache") stands for the earlier steps and is left out.
Exit status 1 when a case misses a target.
"""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as compare_saved  # noqa: E402
from compare_timeline import (comparison_parser, comparison_row,  # noqa: E402
                              measured_events, peaks, run_harness)

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases", "inference")
STAGES = ("prefill", "decode")
GROWTH = ("key cache", "value cache")  # the estimate's stand-in for the earlier decode steps


def estimated_events(estimate):
    return [(e["stage"], "alloc" if e["alloc"] else "free", e["bytes"], e.get("tensor", ""))
            for e in estimate["timeline"] if e["stage"] != "resident"]


def compare(case, membudget, python):
    with open(case) as f:
        scenario = yaml.safe_load(f)
    measured = run_harness(python, "measure_generation.py", case)
    estimate = compare_saved.estimate_on_torch(case, scenario, membudget, "2.5", ["--timeline"])
    m_events, e_events = measured_events(measured), estimated_events(estimate)
    # Measured phases are the stages (the earlier decode steps count in the running total only).
    m_peaks, e_peaks = peaks(m_events), peaks([e[:3] for e in e_events])
    rows = []
    decodes = (scenario.get("training", {}).get("inference") or {}).get("generated_tokens", 0) > 0
    for stage in STAGES:
        if stage not in m_peaks or stage not in e_peaks:
            if stage == "prefill" or decodes:  # a stage one side lacks is a miss, not a skip
                rows.append({"stage": stage, "measured_peak": m_peaks.get(stage, 0),
                             "estimated_peak": e_peaks.get(stage, 0), "error": 1.0, "order": 0.0,
                             "measured_allocations": 0, "estimated_allocations": 0, "ok": False})
            continue
        m_allocs = [s for p, k, s in m_events if p == stage and k == "alloc"]
        e_allocs = [s for p, k, s, name in e_events
                    if p == stage and k == "alloc" and not (stage == "decode" and name in GROWTH)]
        rows.append(comparison_row("stage", stage, m_peaks[stage], e_peaks[stage], m_allocs, e_allocs))
    return scenario.get("name", os.path.basename(case)), rows, measured


def main():
    args = comparison_parser(__doc__, "cases/inference/*.yaml", "the harness").parse_args()
    if compare_saved.torch_missing(args.python):
        return 77
    cases = args.cases or sorted(os.path.join(CASES, f) for f in os.listdir(CASES) if f.endswith(".yaml"))
    table, failures = [], 0
    for case in cases:
        name, rows, measured = compare(case, args.membudget, args.python)
        print(f"{os.path.basename(case)}: {name} (torch {measured.get('torch_version')})")
        for r in rows:
            print(f"  {r['stage']:8s} peak measured {r['measured_peak']:>10,} estimated "
                  f"{r['estimated_peak']:>10,} {r['error']:+8.2%}   order {r['order']:.0%} of "
                  f"{r['estimated_allocations']} allocations ({r['measured_allocations']} measured)"
                  f"  {'ok' if r['ok'] else 'MISS'}")
            failures += 0 if r["ok"] else 1
            table.append(dict(r, case=os.path.basename(case)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    print(f"{sum(r['ok'] for r in table)} passed, {failures} failed")
    return 1 if failures or not table else 0


if __name__ == "__main__":
    sys.exit(main())
