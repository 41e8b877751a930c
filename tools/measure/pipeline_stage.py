#!/usr/bin/env python3
"""One stage of a pipeline-parallel training step, measured on one process.

The scenario's `parallelism.pipeline_parallel` splits the decoder layers into stages as MemBudget
does (an even split, the first stages taking the remainder); `--stage N` builds stage N alone: the
first with the embedding, the last with the final norm, lm_head and the loss. Its micro-batches
(gradient_accumulation_steps) run in the order the schedule gives that stage: GPipe every forward
then every backward; 1F1B min(p - N - 1, m) forwards, then one forward and one backward (the oldest)
in turn, then the remaining backwards (torch.distributed.pipelining's Schedule1F1B, Megatron-LM's
forward_backward_pipelining_without_interleaving). Interleaved 1F1B splits the stage's layers into
`pipeline_virtual_stages` chunks (v) and runs m v chunk passes in Megatron-LM's order
(forward_backward_pipelining_with_interleaving): 2 (p - N - 1) + (v - 1) p warm-up forwards, then
one forward and one backward in turn; forward pass k is micro-batch (k // pv) p + k % p through
chunk (k % pv) // p, backward pass k the same micro-batch through chunk v - 1 - (k % pv) // p. Only
the first chunk of the first stage embeds and only the last chunk of the last stage computes the
loss; every other chunk receives its input. What the neighbouring stages send is stood in for
by tensors of the same shape: the hidden states received in forward (a leaf that requires a
gradient) and the output's gradient received in backward. Two steps run; the second is measured on
the CPU with the harness's op tracker (memory_tracker.py): live storages per phase, the model's
parameters, gradients and optimizer states included, as `measure.py` reports them.

Usage: pipeline_stage.py SCENARIO.yaml --stage N [-o OUT.json]
"""
import argparse
import dataclasses
import gc
import json
import sys

import torch
import yaml

import llama_model
import scenario as scenario_mod
import torch_compat
from memory_tracker import OpTracker, PhaseMeter
from training import Setup

SCHEDULES = ("1f1b", "gpipe", "interleaved-1f1b")


def stage_layers(layers, stages, index):
    return layers // stages + (1 if index < layers % stages else 0)


def load(path):
    """The scenario without its parallelism (which the harness refuses), and the pipeline's."""
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    par = dict(doc.pop("parallelism", None) or {})
    stages = int(par.get("pipeline_parallel", 1))
    schedule = par.get("pipeline_schedule", "1f1b")
    chunks = int(par.get("pipeline_virtual_stages", 2)) if schedule == "interleaved-1f1b" else 1
    if schedule not in SCHEDULES:
        raise scenario_mod.Unsupported("%s: pipeline_schedule %s is not measured here (%s)"
                                       % (path, schedule, ", ".join(SCHEDULES)))
    if (par.get("gpus", stages) != stages or par.get("sharding", "none") != "none"
            or par.get("tensor_parallel", 1) != 1 or par.get("context_parallel", 1) != 1):
        raise scenario_mod.Unsupported("%s: one GPU per stage, without sharding, tensor or context "
                                       "parallelism" % path)
    return scenario_mod.parse(doc, path), stages, schedule, chunks


def stage_scenario(sc, stages, index):
    """The stage's own architecture: its layers, and no tie between ends it does not both hold."""
    first, last = index == 0, index == stages - 1
    arch = dataclasses.replace(sc.arch, layers=stage_layers(sc.arch.layers, stages, index))
    if not (first and last):
        arch = dataclasses.replace(arch, tied_embeddings=False)
    return dataclasses.replace(sc, arch=arch)


def pruner(first, last):
    def prune(model):
        if not first:
            model.model.embed_tokens = None
        if not last:
            model.model.norm = None
            model.lm_head = None
    return prune


class Stage:
    def __init__(self, setup, stages, index, schedule, chunks):
        self.setup = setup
        self.stages, self.index, self.schedule, self.chunks = stages, index, schedule, chunks
        self.first, self.last = index == 0, index == stages - 1
        layers = setup.scenario.arch.layers
        bounds = [0]
        for c in range(chunks):
            bounds.append(bounds[-1] + stage_layers(layers, chunks, c))
        self.spans = list(zip(bounds, bounds[1:]))
        self.pending = [[] for _ in range(chunks)]

    def forward(self, batch, chunk, meter):
        setup, m = self.setup, self.setup.model.model
        ids, mask, labels = batch
        tr = setup.scenario.training
        embeds = self.first and chunk == 0
        head = self.last and chunk == self.chunks - 1
        meter.begin("forward")
        received = None
        if not embeds:  # the previous stage's output arrives in a buffer of its own
            shape = (tr.micro_batch_size, tr.sequence_length, setup.scenario.arch.hidden_size)
            received = torch.randn(shape, dtype=setup.param_dtype, device=setup.device,
                                   requires_grad=True)
        with setup.autocast():
            x = m.embed_tokens(ids) if embeds else received
            cache_position = torch.arange(0, x.shape[1], device=x.device)
            position_ids = cache_position.unsqueeze(0)
            causal_mask = m._mask(mask, x)
            position_embeddings = m.rotary_emb(x, position_ids)
            out = m.run_layers([x], causal_mask, position_ids, cache_position, position_embeddings,
                               span=self.spans[chunk])
            del x
            if head:
                logits = setup.model.lm_head(m.norm(out))
                out = llama_model.causal_lm_loss(logits, labels, setup.scenario.arch.vocab_size)
                del logits
        del causal_mask, position_embeddings, position_ids, cache_position
        meter.end("forward")
        self.pending[chunk].append((out, received))

    def backward(self, chunk, meter):
        out, received = self.pending[chunk].pop(0)
        meter.begin("backward")
        if self.last and chunk == self.chunks - 1:
            (out / len(self.setup.batches)).backward()
        else:  # the next stage's gradient of this output arrives
            grad = torch.randn_like(out)
            torch.autograd.backward(out, grad)
            del grad
        del out, received  # the input's gradient is sent back and dropped
        meter.end("backward")

    def order(self, m):
        """The stage's passes: (forward?, micro-batch, chunk), in the schedule's order."""
        p, v = self.stages, self.chunks
        if self.schedule == "interleaved-1f1b":
            total = m * v
            warm = min(2 * (p - self.index - 1) + (v - 1) * p, total)
            fwd = [(True, (k // (p * v)) * p + k % p, (k % (p * v)) // p) for k in range(total)]
            bwd = [(False, (k // (p * v)) * p + k % p, v - 1 - (k % (p * v)) // p) for k in range(total)]
        else:
            warm = m if self.schedule == "gpipe" else min(p - self.index - 1, m)
            fwd = [(True, k, 0) for k in range(m)]
            bwd = [(False, k, 0) for k in range(m)]
        passes = fwd[:warm]
        for k in range(warm, len(fwd)):
            passes += [fwd[k], bwd[k - warm]]
        return passes + bwd[len(fwd) - warm:]

    def step(self, meter):
        batches = self.setup.batches
        for is_forward, micro_batch, chunk in self.order(len(batches)):
            if is_forward:
                self.forward(batches[micro_batch], chunk, meter)
            else:
                self.backward(chunk, meter)
        meter.begin("optimizer_step")
        self.setup.optimizer.step()
        meter.end("optimizer_step")
        self.setup.optimizer.zero_grad(set_to_none=True)


class NullMeter:
    def begin(self, phase):
        pass

    def end(self, phase):
        pass


def run(path, index, seed=1234):
    sc, stages, schedule, chunks = load(path)
    if not 0 <= index < stages:
        raise scenario_mod.ScenarioError("--stage %d: the pipeline has stages 0 to %d" % (index, stages - 1))
    if OpTracker is None:
        raise scenario_mod.Unsupported("torch %s has no TorchDispatchMode" % torch.__version__)
    own = stage_scenario(sc, stages, index)
    setup = Setup(own, "cpu", seed, prune=pruner(index == 0, index == stages - 1))
    stage = Stage(setup, stages, index, schedule, chunks)
    stage.step(NullMeter())  # the optimizer makes its states
    gc.collect()
    model = setup.model
    params = list(model.parameters())
    tracker = OpTracker([torch_compat.storage_key(p)[0] for p in params], track_live=True)
    meter = PhaseMeter("cpu", tracker)
    baseline = params + list(model.buffers()) + setup.state_tensors()
    for batch in setup.batches:
        baseline += list(batch)
    with tracker:
        tracker.register(baseline)
        start = tracker.live_bytes
        stage.step(meter)
    mem = meter.summary()
    mem["baseline_bytes"] = start
    return {"torch_version": torch.__version__, "stage": index, "stages": stages,
            "schedule": schedule, "layers": own.arch.layers,
            "micro_batches": len(setup.batches), "memory": mem}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario")
    parser.add_argument("--stage", type=int, required=True)
    parser.add_argument("-o", "--output")
    args = parser.parse_args(argv)
    try:
        result = run(args.scenario, args.stage)
    except scenario_mod.ScenarioError as err:  # Unsupported included
        return scenario_mod.report_scenario_error("pipeline_stage", err)
    text = json.dumps(result, indent=2) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
