#!/usr/bin/env python3
"""Draws MemBudget's accuracy chart (docs/images/accuracy.png) from the real sources.

Left: the published GPU measurements of tests/calibration/cases.yaml (Answer.AI's fsdp_qlora
benchmarks, fms-acceleration's A100 references) against `membudget estimate --json`
(per_gpu.peak_allocated or peak_reserved), as a parity plot. Right: the CPU cross-check of
tools/measure/compare.py (bytes PyTorch's autograd saves for backward) as one strip of dots above,
the error of every GPU case below, with the accuracy targets.
Nothing is hard-coded: every figure is computed here, and a summary is printed.

  /usr/bin/python3 tools/measure/plot_accuracy.py --membudget build/app/cli/membudget

Needs matplotlib and PyYAML; the CPU cross-check needs torch (Debian: python3-matplotlib,
python3-yaml, python3-torch). Exit status: 0 ok, 1 a case misses its target, 2 usage or a failed run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GIB = 1024 ** 3

# Targets of docs/accuracy.md (checked by tests/core/tst_calibration.cpp and compare.py).
CPU_TARGET = 0.03
ALLOCATED_MEDIAN_TARGET, ALLOCATED_EACH_TARGET = 0.05, 0.12
RESERVED_EACH_TARGET = 0.25

COLOURS = {"allocated": "#1f77b4", "reserved": "#e6862a", "cpu": "#2ca02c"}
MARKERS = {"allocated": "o", "reserved": "s"}


def gpu_cases(membudget, calibration_dir):
    """One dict per row of cases.yaml: id, metric, measured and estimated GiB, setup, capacity."""
    with open(os.path.join(calibration_dir, "cases.yaml")) as f:
        rows = yaml.safe_load(f)["cases"]
    out, estimates = [], {}
    for row in rows:
        path = os.path.join(calibration_dir, row["file"])
        if path not in estimates:
            result = subprocess.run([membudget, "estimate", path, "--json"], check=True, capture_output=True,
                                    text=True)
            estimates[path] = json.loads(result.stdout)
        estimate = estimates[path]
        with open(path) as f:
            scenario = yaml.safe_load(f)
        training, parallel = scenario.get("training", {}), scenario.get("parallelism", {})
        method = {"qlora": "QLoRA", "lora": "LoRA"}.get(training.get("method", "full"), "full")
        gpus = parallel.get("gpus", 1)
        spread = "1 GPU" if gpus == 1 else "DDP" if parallel.get("sharding", "none") == "none" else "FSDP"
        setup = "{} b{}×{} {}".format(method, training.get("micro_batch_size"), training.get("sequence_length"),
                                      spread)
        metric = row["metric"]
        estimated = estimate["per_gpu"]["peak_" + metric] / GIB
        out.append({"id": os.path.splitext(row["file"])[0], "metric": metric, "setup": setup,
                    "measured": row["measured_gib"], "estimated": estimated,
                    "error": (estimated - row["measured_gib"]) / row["measured_gib"],
                    "capacity": [(g["name"], g["capacity"] / GIB) for g in estimate.get("gpus", [])]})
    return out


def cpu_cases(membudget, python, cpu_json):
    """Saved-activation rows of compare.py's --json table (run now unless cpu_json is given)."""
    if cpu_json is None:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "compare.json")
            run = subprocess.run([python, os.path.join(HERE, "compare.py"), "--membudget", membudget,
                                  "--python", python, "--json", out], capture_output=True, text=True)
            if run.returncode not in (0, 1) or not os.path.exists(out):
                raise RuntimeError(f"compare.py failed (exit {run.returncode}):\n{run.stdout}{run.stderr}")
            with open(out) as f:
                table = json.load(f)
    else:
        with open(cpu_json) as f:
            table = json.load(f)
    rows = [r for r in table if r["what"] == "saved activations"]
    exact = [r for r in table if r["what"] != "saved activations"]
    return ([{"id": os.path.splitext(r["case"])[0], "measured": r["measured"], "estimated": r["estimated"],
              "error": r["error"]} for r in rows],
            sum(1 for r in exact if r["ok"]), len(exact))


def place_labels(ax, points, renderer, avoid=()):
    """Greedy label placement: for each point, the nearest offset whose text box overlaps no other
    label, marker or box in avoid and stays inside the axes. Points above the diagonal prefer the
    upper left, points below it the lower right; a label set apart gets a thin leader line."""
    taken = []
    for x, y, _, _ in points:
        cx, cy = ax.transData.transform((x, y))
        taken.append((cx - 9, cy - 9, cx + 9, cy + 9))
    taken += [(b.x0, b.y0, b.x1, b.y1) for b in avoid]
    inside = ax.get_window_extent(renderer)

    def annotate(x, y, text, colour, dx, dy):
        # The leader line starts at the text's corner (or edge middle) nearest the point.
        corner = (0 if dx > 0 else (1 if dx < 0 else 0.5), 0 if dy > 0 else (1 if dy < 0 else 0.5))
        return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=6, color=colour,
                           ha="right" if dx < 0 else ("left" if dx > 0 else "center"),
                           va="bottom" if dy > 0 else ("top" if dy < 0 else "center"),
                           arrowprops=dict(arrowstyle="-", color=colour, lw=0.5, relpos=corner, shrinkA=0,
                                           shrinkB=2.5) if max(abs(dx), abs(dy)) >= 8 else None)

    ring = [(r * dx, r * dy) for r in (4, 8, 13, 19) for dx, dy in
            ((-1, 1), (1, -1), (-1, 0), (1, 0), (-1, -1), (1, 1), (0, 1), (0, -1))]
    for x, y, text, colour in sorted(points, key=lambda p: (p[0], p[1])):
        offsets = ring if y >= x else [(-dx, -dy) for dx, dy in ring]
        box = None
        for dx, dy in offsets:
            label = annotate(x, y, text, colour, dx, dy)
            box = label.get_window_extent(renderer)
            clash = any(box.x0 < b[2] and box.x1 > b[0] and box.y0 < b[3] and box.y1 > b[1] for b in taken)
            if not clash and inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 \
                    and box.y1 <= inside.y1:
                break
            label.remove()
            box = None
        if box is None:  # nowhere free: the nearest offset on the preferred side
            box = annotate(x, y, text, colour, *offsets[0]).get_window_extent(renderer)
        taken.append((box.x0 - 2, box.y0 - 1, box.x1 + 2, box.y1 + 1))


def short_name(case):
    """aai-N for Answer.AI's cases; "fms" for fms-acceleration's, whose setup says the rest."""
    return "fms" if case["id"].startswith("fms") else case["id"]


def style_error_axis(ax, title):
    """The title, grid, signed-percent ticks and bare spines both error panels share."""
    ax.set_title(title, fontsize=7, loc="left", pad=4, x=-0.4)
    ax.grid(axis="x", color="#ececec", lw=0.5, zorder=0)
    ax.tick_params(axis="x", labelsize=6, length=2, pad=2)
    ax.xaxis.set_major_formatter(lambda v, _: (f"{v:+.0f}%" if v else "0%").replace("-", "\u2212"))
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def error_strip(ax, rows, colour, limit, target, title):
    """One dot per case on an error axis (deterministic vertical spread), the ± target lines, and
    the worst case named: for many cases that all sit close to zero."""
    values = [100 * r["error"] for r in rows]
    ys = [((i * 37) % 11) / 10 for i in range(len(rows))]
    ax.scatter(values, ys, s=9, color=colour, edgecolor="white", lw=0.3, zorder=4)
    for sign in (-1, 1):
        ax.axvline(sign * target, color=colour, ls="--", lw=0.8, zorder=2,
                   label=f"±{target:.0f}% target" if sign > 0 else None)
    ax.axvline(0, color="#444444", lw=0.7, zorder=3)
    worst = max(range(len(rows)), key=lambda i: abs(values[i]))
    worst_text = f"{values[worst]:+.2f}%".replace("-", "\u2212")
    ax.annotate(f"{rows[worst]['id']} {worst_text}", (values[worst], ys[worst]),
                xytext=(-6, 0), textcoords="offset points", ha="right", va="center", fontsize=5.5, color="#222222")
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-0.35, 1.35)
    ax.set_yticks([])
    style_error_axis(ax, title)


def error_bars(ax, rows, colours, limit, lines, title):
    """Horizontal bars of error % with value labels and target lines at ± each of lines."""
    ys = list(range(len(rows)))[::-1]
    values = [100 * r["error"] for r in rows]
    ax.barh(ys, values, color=colours, height=0.64, zorder=3)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["label"] for r in rows], fontsize=6)
    ax.tick_params(axis="y", length=0, pad=3)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.axvline(0, color="#444444", lw=0.7, zorder=4)
    for value, style, colour, name in lines:
        for sign in (-1, 1):
            ax.axvline(sign * value, color=colour, ls=style, lw=0.8, zorder=2, label=name if sign > 0 else None)
    pad = limit * 0.015
    for y, v in zip(ys, values):
        text = (f"{v:+.2f}%" if abs(v) < 1 else f"{v:+.1f}%").replace("-", "\u2212")
        if abs(v) > 0.7 * limit:  # a long bar carries its value inside
            ax.text(v + pad if v < 0 else v - pad, y, text, va="center", ha="left" if v < 0 else "right",
                    fontsize=5.5, color="white", fontweight="bold", zorder=5)
        else:
            ax.text(v + pad if v >= 0 else v - pad, y, text, va="center", ha="left" if v >= 0 else "right",
                    fontsize=5.5, color="#222222", zorder=5,
                    bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.85))
    style_error_axis(ax, title)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--membudget", default=os.environ.get("MEMBUDGET", "membudget"),
                        help="path of the membudget command line")
    parser.add_argument("--python", default="/usr/bin/python3", help="python with torch for compare.py")
    parser.add_argument("--cpu-json", help="reuse a table written by `compare.py --json` instead of running it")
    parser.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "images", "accuracy.png"))
    parser.add_argument("--dpi", type=int, default=200, help="200 gives 1600 x 700 px")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    try:
        gpu = gpu_cases(args.membudget, os.path.join(ROOT, "tests", "calibration"))
        cpu, exact_ok, exact_all = cpu_cases(args.membudget, args.python, args.cpu_json)
    except (subprocess.CalledProcessError, FileNotFoundError, RuntimeError) as e:
        print(f"plot_accuracy: {e}", file=sys.stderr)
        return 2

    allocated = [abs(c["error"]) for c in gpu if c["metric"] == "allocated"]
    reserved = [abs(c["error"]) for c in gpu if c["metric"] == "reserved"]
    worst = lambda rows, metric: max((c for c in rows if metric is None or c["metric"] == metric),
                                     key=lambda c: abs(c["error"]))
    summary = {
        "allocated": (statistics.median(allocated), worst(gpu, "allocated")),
        "reserved": (statistics.median(reserved), worst(gpu, "reserved")),
        "cpu": (statistics.median(abs(c["error"]) for c in cpu), worst(cpu, None)),
    }
    for name, (median, w) in summary.items():
        label = w["id"] if name == "cpu" else f"{w['id']} {w['metric']}"
        print(f"{name:9s}: median |error| {median:.2%}, worst {w['error']:+.2%} ({label}), n = "
              f"{len(cpu) if name == 'cpu' else sum(1 for c in gpu if c['metric'] == name)}")
    for c in gpu:
        print(f"  {c['id']:6s} {c['metric']:9s} measured {c['measured']:6.2f} GiB  estimated "
              f"{c['estimated']:6.2f} GiB  {c['error']:+.1%}")
    print(f"  CPU exact checks (parameters, weights, gradients, optimizer states): {exact_ok}/{exact_all}")
    misses = (max(allocated) > ALLOCATED_EACH_TARGET or statistics.median(allocated) > ALLOCATED_MEDIAN_TARGET
              or max(reserved) > RESERVED_EACH_TARGET or any(abs(c["error"]) > CPU_TARGET for c in cpu)
              or exact_ok != exact_all)

    plt.rcParams.update({"font.family": "DejaVu Sans", "axes.titleweight": "bold", "axes.linewidth": 0.6,
                         "axes.unicode_minus": True})
    fig = plt.figure(figsize=(8, 4.8), dpi=args.dpi)  # 1600 x 960 px at the default 200 dpi
    grid = fig.add_gridspec(2, 2, width_ratios=[1, 1.05], height_ratios=[3, len(gpu)],
                            left=0.06, right=0.99, top=0.9, bottom=0.15, wspace=0.42, hspace=0.28)
    parity = fig.add_subplot(grid[:, 0])
    cpu_ax, gpu_ax = fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])

    # Left: parity plot of the GPU cases.
    capacity = max((cap for c in gpu for _, cap in c["capacity"]), default=None)
    top = max(max(max(c["measured"], c["estimated"]) for c in gpu), capacity or 0) * 1.06
    line = [0, top]
    parity.fill_between(line, [v * (1 - ALLOCATED_EACH_TARGET) for v in line],
                        [v * (1 + ALLOCATED_EACH_TARGET) for v in line], color="#e3e3e3", lw=0, zorder=1)
    parity.plot(line, line, color="#555555", lw=0.8, zorder=2)
    if capacity:
        name = next(n for c in gpu for n, cap in c["capacity"] if cap == capacity)
        name = re.sub(r"\s+\d+\s*GB$", "", name.replace("NVIDIA GeForce ", ""))
        parity.axhline(capacity, color="#b22222", ls=":", lw=0.8, zorder=2)
        capacity_label = parity.text(0.4, capacity + 0.15, f"{name}: {capacity:.0f} GiB per card", fontsize=5.5,
                                     color="#b22222", va="bottom")
    points = []
    for metric in ("allocated", "reserved"):
        rows = [c for c in gpu if c["metric"] == metric]
        parity.scatter([c["measured"] for c in rows], [c["estimated"] for c in rows], s=16,
                       marker=MARKERS[metric], color=COLOURS[metric], edgecolor="white", lw=0.4, zorder=4)
        # Named where they leave the band (every case is named on the right).
        points += [(c["measured"], c["estimated"], short_name(c) if c["id"].startswith("aai") else
                    f"fms {c['setup']}", COLOURS[metric]) for c in rows
                   if abs(c["error"]) > ALLOCATED_EACH_TARGET]
    parity.set_xlim(0, top)
    parity.set_ylim(0, top)
    parity.set_aspect("equal")
    parity.set_xlabel("measured peak per GPU (GiB)", fontsize=6.5, labelpad=2)
    parity.set_ylabel("MemBudget estimate (GiB)", fontsize=6.5, labelpad=2)
    parity.tick_params(labelsize=6, length=2, pad=2)
    parity.grid(color="#f0f0f0", lw=0.5, zorder=0)
    parity.set_title("GPU: Llama-2-7B on RTX 3090s, Mistral-7B on A100s", fontsize=7, loc="left", pad=4)
    for side in ("top", "right"):
        parity.spines[side].set_visible(False)
    parity.legend(handles=[
        Line2D([], [], marker=MARKERS["allocated"], ls="", ms=4, color=COLOURS["allocated"],
               label=f"allocated peak, n = {len(allocated)}"),
        Line2D([], [], marker=MARKERS["reserved"], ls="", ms=4, color=COLOURS["reserved"],
               label=f"reserved peak, n = {len(reserved)}"),
        Line2D([], [], color="#555555", lw=0.8, label="estimate = measured"),
        Patch(color="#e3e3e3", label=f"±{ALLOCATED_EACH_TARGET:.0%} band")],
        loc="lower right", fontsize=5.5, frameon=False, handlelength=1.6, borderaxespad=0.2)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    avoid = [parity.get_legend().get_window_extent(renderer)]
    if capacity:
        y = parity.transData.transform((0, capacity))[1]
        box = capacity_label.get_window_extent(renderer)
        avoid += [box, type(box).from_extents(box.x0, y - 3, parity.bbox.x1, y + 3)]
    place_labels(parity, points, renderer, avoid)

    # Right: the CPU cases as one strip, the GPU cases one row each.
    error_strip(cpu_ax, cpu, COLOURS["cpu"], 3.6, 100 * CPU_TARGET,
                f"CPU: saved activations vs PyTorch autograd, {len(cpu)} cases, worst "
                f"{summary['cpu'][1]['error']:+.2%}".replace("-", "\u2212"))
    cpu_ax.legend(loc="lower right", fontsize=5.5, frameon=False, handlelength=1.8, borderaxespad=0.2)
    # Answer.AI's by number, then fms-acceleration's by file name.
    order = sorted(gpu, key=lambda c: (c["id"].startswith("fms"),
                                       int(c["id"].split("-")[-1]) if c["id"].startswith("aai") else 0,
                                       c["id"], c["metric"]))
    for c in order:
        c["label"] = f"{short_name(c)} {c['setup']}"
    targets = [(ALLOCATED_MEDIAN_TARGET, ":", "allocated", "median"), (ALLOCATED_EACH_TARGET, "--", "allocated", "each"),
               (RESERVED_EACH_TARGET, "--", "reserved", "each")]
    error_bars(gpu_ax, order, [COLOURS[c["metric"]] for c in order], 26,
               [(100 * t, style, COLOURS[metric], f"±{t:.0%} {metric}, {which}") for t, style, metric, which in targets],
               (f"GPU: allocated worst {summary['allocated'][1]['error']:+.1%}, reserved median |error| "
                f"{summary['reserved'][0]:.1%}").replace("-", "\u2212"))
    for tick, c in zip(gpu_ax.get_yticklabels(), order):  # the two allocated rows stand out
        tick.set_color(COLOURS[c["metric"]] if c["metric"] == "allocated" else "#222222")
    handles, labels = gpu_ax.get_legend_handles_labels()
    handles = [Patch(color=COLOURS["allocated"]), Patch(color=COLOURS["reserved"])] + handles
    labels = ["allocated", "reserved"] + labels
    gpu_ax.set_xlabel("error = (estimate − measured) / measured", fontsize=6.5, labelpad=2)
    fig.canvas.draw()
    below = gpu_ax.xaxis.label.get_window_extent(fig.canvas.get_renderer()).transformed(
        fig.transFigure.inverted())
    fig.legend(handles, labels, loc="upper right", bbox_to_anchor=(0.99, below.y0 - 0.005), ncol=len(handles),
               fontsize=5.5, frameon=False, handlelength=1.8, columnspacing=1.2, borderaxespad=0)

    fig.text(0.06, 0.958, "MemBudget: estimated vs measured memory", fontsize=10.5, fontweight="bold", va="center")
    fig.text(0.06, 0.012,
             "Sources: GPU, Answer.AI fsdp_qlora benchmarks (aai, March 2024; Llama-2-7B r64, bf16, full checkpointing, "
             "2 × RTX 3090; max_memory_allocated / max_memory_reserved) and\nfms-acceleration's A100 80GB "
             "references (fms, 2025; Mistral-7B, full fine-tuning, LoRA r16, QLoRA; max_memory_allocated); "
             "b1×512: micro-batch × sequence length.\n"
             f"CPU, PyTorch 1.13 autograd (saved_tensors_hooks; {len(cpu)} tiny Llama cases, "
             "tools/measure/compare.py); "
             f"parameter, weight, gradient and optimizer-state bytes match to the byte ({exact_ok}/{exact_all}).",
             fontsize=5, color="#555555", va="bottom", linespacing=1.4)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    fig.savefig(args.output, dpi=args.dpi, facecolor="white")
    print(f"wrote {args.output}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
