#!/usr/bin/env python3
"""Runs a batch of harness measurements on one GPU, one process each, and gathers them.

    python3 tools/measure/gpu_batch.py PLAN.json OUTDIR [--budget SECONDS] [--device cuda]

PLAN.json is a list of runs, each {"id": ..., "case": "cases/gpu/x.yaml", "set": ["KEY=VALUE", ...],
"env": {"PYTORCH_CUDA_ALLOC_CONF": ...}, "args": [more measure.py arguments], "snapshot": true,
"snapshot_warmup": false, "snapshot_from_load": false, "timeout": 150}. Every run is
`measure.py --no-dispatch` in a process of its own (one measurement per process, the GPU
otherwise idle), in the plan's order; a run that would start after --budget seconds is skipped, so a time-boxed machine returns what it managed. OUTDIR gets results.json
(rewritten after every run: the device, torch, and per run its exit code, the end of its stderr and
the harness's JSON; exit code 5 means out of memory) and <id>.pickle for runs with a snapshot.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BULKY = ("saved_tensors", "per_layer", "events")


def device_facts(python):
    code = ("import json, torch; d = torch.cuda.current_device(); f, t = torch.cuda.mem_get_info(d); "
            "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
            "'name': torch.cuda.get_device_name(d), 'capacity_bytes': t, 'used_at_init_bytes': t - f, "
            "'capability': list(torch.cuda.get_device_capability(d))}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    facts = json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr[-2000:]}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True)
    facts["nvidia_smi"] = smi.stdout.strip()
    return facts


def slim(result):
    """The harness's JSON without the per-tensor tables (kept small enough to bring back)."""
    return {k: v for k, v in result.items() if k not in BULKY}


def run_one(run, outdir, python, device):
    out_json = os.path.join(outdir, run["id"] + ".json")
    cmd = [python, os.path.join(HERE, "measure.py"), os.path.join(HERE, run["case"]),
           "--device", device, "--no-dispatch", "-o", out_json]
    for item in run.get("set", []):
        cmd += ["--set", item]
    cmd += run.get("args", [])
    if run.get("snapshot"):
        cmd += ["--snapshot", os.path.join(outdir, run["id"] + ".pickle")]
        if run.get("snapshot_warmup"):
            cmd.append("--snapshot-warmup")
        if run.get("snapshot_from_load"):
            cmd.append("--snapshot-from-load")
    env = dict(os.environ, **run.get("env", {}))
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=run.get("timeout", 150))
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, err = "timeout", (exc.stderr or b"").decode("utf-8", "replace") if isinstance(
            exc.stderr, bytes) else (exc.stderr or "")
    entry = dict(run, rc=rc, wall_s=round(time.time() - t0, 1), stderr=err[-3000:])
    if os.path.exists(out_json):
        with open(out_json, encoding="utf-8") as fh:
            entry["result"] = slim(json.load(fh))
        os.remove(out_json)  # gathered into results.json
    return entry


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan")
    parser.add_argument("outdir")
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    with open(args.plan, encoding="utf-8") as fh:
        plan = json.load(fh)
    os.makedirs(args.outdir, exist_ok=True)
    python = sys.executable
    start = time.time()
    doc = {"device": device_facts(python) if args.device.startswith("cuda") else {}, "runs": []}
    path = os.path.join(args.outdir, "results.json")
    for run in plan:
        if time.time() - start > args.budget:
            doc["runs"].append(dict(run, rc="skipped (budget)"))
            continue
        entry = run_one(run, args.outdir, python, args.device)
        doc["runs"].append(entry)
        print("%-28s rc=%-4s %6.1fs" % (run["id"], entry["rc"], entry["wall_s"]), flush=True)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
