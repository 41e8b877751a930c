"""Checks of the measurement harness on the tiny CPU cases (a few seconds each).

    cd tools/measure && python3 -m unittest -v test_measure

The per-layer closed forms below are what the harness measured on torch 1.13 (CPU) and are written
out so that a change in the model code, or a torch whose autograd saves something else, shows up
as a failure with the difference in bytes. `m` is the extra fp32 x^2 that mean() keeps in torch
1.13 (0 where mean's backward needs only sizes).
"""

import os
import sys
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.autograd.graph import saved_tensors_hooks  # noqa: E402

import measure  # noqa: E402
import scenario  # noqa: E402
import training  # noqa: E402

CASES = os.path.join(HERE, "cases")
# The cases' shape: b=2, s=128, h=256, a=4, k=2, d=64, I=688, V=1000, 2 layers.
B, S, H, A, D, I, V = 2, 128, 256, 4, 64, 688, 1000
T = B * S
WRAPPED = 8  # `* scaling` saves its Python float as a 0-dim float64 tensor


def mean_keeps_input():
    saved = []
    x = torch.randn(2, 4, requires_grad=True)
    with saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = x.pow(2).mean(-1, keepdim=True)
    del y
    return len(saved) >= 2


M = 4 * H if mean_keeps_input() else 0


def run_case(name, *extra):
    args = measure.build_parser().parse_args([os.path.join(CASES, name + ".yaml"), "--steps", "1", *extra])
    return measure.run(args)


def attention_eager(e):
    """q, repeat_kv-expanded k and v (a heads each), the fp32 softmax and, below fp32, its copy."""
    return T * (3 * e * A * D + 4 * A * S + (e * A * S if e != 4 else 0)) + WRAPPED


class ScenarioErrors(unittest.TestCase):
    def test_preset_only_is_refused_with_a_hint(self):
        with self.assertRaisesRegex(scenario.ScenarioError, "--arch-json"):
            scenario.parse({"format": "membudget/1", "model": {"preset": "llama-2-7b"}}, "x.yaml")

    def test_unknown_key(self):
        with self.assertRaisesRegex(scenario.ScenarioError, "unknown key 'trainig'"):
            scenario.parse({"format": "membudget/1", "trainig": {}}, "x.yaml")

    def test_unsupported(self):
        doc = {"format": "membudget/1", "model": {"layers": 1, "hidden_size": 8, "intermediate_size": 8,
                                                   "attention_heads": 2, "vocab_size": 10},
               "training": {"optimizer": "adamw-8bit"}}
        with self.assertRaises(scenario.Unsupported):
            scenario.parse(doc, "x.yaml")

    def test_all_linear(self):
        doc = {"format": "membudget/1", "model": {"layers": 1, "hidden_size": 8, "intermediate_size": 8,
                                                   "attention_heads": 2, "vocab_size": 10},
               "training": {"method": "lora", "lora": {"targets": ["all-linear"]}}}
        self.assertEqual(len(scenario.parse(doc).training.lora.targets), 7)


class TrainingCache(unittest.TestCase):
    """transformers' use_cache in a training forward (a DynamicCache in the model output)."""

    def test_a_stack_needs_the_keys_it_decides(self):
        doc = {"format": "membudget/1", "stack": {"name": "hf-trainer", "version": "4.55"},
               "model": {"layers": 1, "hidden_size": 8, "intermediate_size": 8, "attention_heads": 2,
                         "vocab_size": 10},
               "training": {"precision": "bf16", "optimizer": "adamw", "loss": "hf"}}
        with self.assertRaisesRegex(scenario.Unsupported, "gradient_checkpointing, training.use_cache"):
            scenario.parse(doc, "x.yaml")
        doc["training"].update(gradient_checkpointing="none", use_cache=True)
        self.assertFalse(scenario.parse(doc).training.cache_copies)  # 4.55 keeps the states
        doc["stack"]["version"] = "4.56"
        self.assertTrue(scenario.parse(doc).training.cache_copies)

    def test_the_cache_keeps_grouped_keys_and_values_until_the_loss(self):
        plain = run_case("bf16-eager-full")["memory"]["phases"]
        kv = 2 * 2 * T * 2 * D * 2  # layers x (keys, values) x tokens x kv heads x d x bf16
        for case in ("bf16-eager-full-use-cache", "bf16-eager-full-use-cache-4.55"):
            cached = run_case(case)["memory"]["phases"]
            self.assertEqual(cached["forward"]["peak_bytes"] - plain["forward"]["peak_bytes"], kv)
            self.assertEqual(cached["backward"]["peak_bytes"], plain["backward"]["peak_bytes"])

    def test_checkpointing_turns_it_off(self):
        tr = scenario.Training(use_cache=True, gradient_checkpointing="full")
        self.assertIsNone(training.training_cache(tr))
        tr.gradient_checkpointing = "none"
        self.assertIsNotNone(training.training_cache(tr))


class TrlChunkedLoss(unittest.TestCase):
    """TRL's chunked_nll as the harness writes it, and the non-reentrant checkpoint it runs in."""

    def test_the_chunks_give_the_whole_logits_cross_entropy(self):
        import torch.nn.functional as F
        import llama_model
        torch.manual_seed(0)
        hidden = torch.randn(2, 300, 16)
        weight = torch.randn(50, 16)
        labels = torch.randint(0, 50, (2, 300))
        labels[0, :40] = llama_model.IGNORE_INDEX  # a prompt without loss
        chunked = llama_model.trl_chunked_nll_loss(hidden, weight, labels)
        whole = F.cross_entropy((hidden[:, :-1] @ weight.t()).reshape(-1, 50),
                                labels[:, 1:].reshape(-1), ignore_index=llama_model.IGNORE_INDEX)
        self.assertAlmostEqual(chunked.item(), whole.item(), places=5)

    def test_the_walk_does_not_run_the_recomputation(self):
        import torch_compat
        w = torch.randn(4, 4, requires_grad=True)
        calls = []

        def f(x):
            calls.append(1)
            return (x @ w).exp()

        x = torch.randn(2, 4, requires_grad=True)
        y = torch_compat.checkpoint_non_reentrant(f, x).sum()
        marked, stack, seen = set(), [y.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if torch_compat.CHECKPOINTED_NODE in node.metadata:
                marked.add(type(node).__name__)
            stack.extend(n for n, _ in node.next_functions)
        self.assertIn("ExpBackward0", marked)
        self.assertIn("MmBackward0", marked)
        self.assertNotIn("SumBackward0", marked)
        self.assertEqual(len(calls), 1)
        y.backward()
        self.assertEqual(len(calls), 2)  # the recomputation, in backward only


class FullFineTuning(unittest.TestCase):
    def check_common(self, r):
        self.assertEqual(r["parameters"], r["expected_parameters"])
        self.assertEqual(r["trainable_parameters"], r["expected_trainable_parameters"])
        self.assertEqual(r["saved_unattributed_count"], 0)
        self.assertEqual(r["saved_tokens_alive_after_backward"], 0)
        self.assertEqual(r["saved_logits_bytes"], 4 * T * V)  # log_softmax's fp32 output

    def test_fp32_eager(self):
        r = run_case("fp32-eager-full", "--steps", "2")
        self.check_common(r)
        params = r["parameters"]
        self.assertEqual(r["weight_bytes"], 4 * params)
        self.assertEqual(r["gradient_bytes"], 4 * params)
        self.assertEqual(r["optimizer_state_bytes"] - r["optimizer"]["state_bytes_by_key"].get("step", 0), 8 * params)
        norm = T * (4 * H + M + 4 + 4 * H)  # x, (x^2), rsqrt, normalized (weight trains)
        linear = T * (4 * H + 4 * A * D + 4 * H + 4 * 4 * I)  # qkv in, o in, gate/up in, MLP
        expected = 2 * norm + linear + attention_eager(4)
        self.assertEqual(r["saved_activation_bytes_per_layer"], [expected, expected])
        self.assertEqual(r["saved_activation_shared_by_layers_bytes"], 2 * S * D * 4)  # cos, sin [1, s, d]

    def test_mha_saves_as_much_as_gqa(self):
        gqa = run_case("fp32-eager-full")
        mha = run_case("fp32-eager-full-mha")
        self.assertEqual(gqa["saved_activation_bytes_per_layer"], mha["saved_activation_bytes_per_layer"])

    def test_bf16_eager(self):
        r = run_case("bf16-eager-full")
        self.check_common(r)
        self.assertEqual(r["weight_bytes"], 2 * r["parameters"])
        norm = T * (4 * H + M + 4 + 2 * H)  # fp32 copy of x, (x^2), rsqrt, bf16 normalized
        linear = T * (2 * H + 2 * A * D + 2 * H + 4 * 2 * I)
        expected = 2 * norm + linear + attention_eager(2)
        self.assertEqual(r["saved_activation_bytes_per_layer"], [expected, expected])

    def test_amp_bf16_saves_weight_copies(self):
        r = run_case("amp-bf16-eager-full")
        self.check_common(r)
        linear_weights = r["parameters"] - V * H - 5 * H  # all but the embedding and the norms
        self.assertEqual(r["saved_weight_copy_bytes"], 2 * linear_weights)

    def test_checkpointing(self):
        plain = run_case("fp32-eager-full")
        r = run_case("fp32-eager-full-ckpt")
        self.check_common(r)
        self.assertEqual(r["saved_activation_bytes_per_layer"], [4 * T * H] * 2)
        # the eager mask [b, 1, s, s] and position_ids (cache_position shares its storage)
        self.assertEqual(r["saved_activation_shared_by_layers_bytes"], 4 * B * S * S + 8 * S)
        cos_sin = 2 * S * D * 4
        self.assertEqual(r["saved_recompute_bytes_per_layer"],
                         [b + cos_sin for b in plain["saved_activation_bytes_per_layer"]])

    def test_op_selective_keeps_every_second_matmul(self):
        # 3 layers; per token the outputs of mm 1, 3, 5, 7 of each layer: q_proj (a d), v_proj
        # (k d), gate_proj (I) and down_proj (h), fp32. Eager attention's bmm is not counted.
        r = run_case("fp32-eager-full-ckpt-op")
        self.assertEqual(r["policy_kept_bytes"], 3 * T * 4 * (A * D + 2 * D + I + H))
        self.assertEqual(r["saved_activation_bytes_per_layer"], [4 * T * H] * 3)

    def test_op_selective_gradients_match_and_recompute_uses_the_kept(self):
        import op_selective
        torch.manual_seed(0)
        lins = [torch.nn.Linear(8, 8, bias=False) for _ in range(3)]

        def body(x):
            return lins[2](torch.relu(lins[1](torch.relu(lins[0](x)))))

        x = torch.randn(4, 8, requires_grad=True)
        body(x).sum().backward()
        want = [x.grad.clone()] + [l.weight.grad.clone() for l in lins]
        x.grad = None
        for l in lins:
            l.weight.grad = None
        kept = []
        op_selective.checkpoint(body, x, registry=kept).sum().backward()
        got = [x.grad] + [l.weight.grad for l in lins]
        for a, b in zip(want, got):
            self.assertTrue(torch.allclose(a, b))
        self.assertEqual(kept, [[]])  # mm 1 and 3 were kept, then handed to the recomputation

    def test_optimizer_in_backward_steps_as_the_optimizer_does(self):
        # One optimizer per parameter stepped from the hook gives the parameters one whole-model
        # step gives, and leaves no gradient behind.
        from training import OptimizerInBackward, make_optimizer
        results = []
        for in_backward in (False, True):
            torch.manual_seed(0)
            lins = [torch.nn.Linear(8, 8, bias=False) for _ in range(3)]
            params = [l.weight for l in lins]
            opt = (OptimizerInBackward("adamw", params) if in_backward
                   else make_optimizer("adamw", params))
            for _ in range(2):
                lins[2](torch.relu(lins[1](torch.relu(lins[0](torch.ones(4, 8)))))).sum().backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            self.assertTrue(all(p.grad is None for p in params))
            results.append([p.detach().clone() for p in params])
        for a, b in zip(*results):
            self.assertTrue(torch.allclose(a, b))

    def test_optimizer_in_backward_frees_the_gradients(self):
        r = run_case("fp32-eager-full-optim-in-bwd")
        self.assertEqual(r["gradient_bytes"], 0)
        self.assertEqual(r["optimizer_state_bytes"] // 4, 2 * r["trainable_parameters"] + 21)

    def test_activation_offloading_gives_the_same_gradients(self):
        # The offload hooks hand autograd back what it saved: the same loss and gradients as the
        # same step without them; every layer input went to the CPU side.
        case = scenario.load(os.path.join(CASES, "fp32-eager-full-ckpt-offload.yaml"))
        grads = []
        for offload in (True, False):
            setup = training.Setup(case, "cpu", 0)
            if not offload:
                setup.model.model.offload = None
            ids, mask, labels = setup.batches[0]
            loss, _ = setup.model(ids, attention_mask=mask, labels=labels)
            if offload:
                self.assertGreaterEqual(setup.model.model.offload.offloaded_bytes, 8 * 4 * T * H)
            loss.backward()
            grads.append([p.grad.clone() for p in setup.trainable()])
        for a, b in zip(*grads):
            self.assertTrue(torch.allclose(a, b))


class Lora(unittest.TestCase):
    def test_dora_starts_at_the_base_and_trains_the_magnitude(self):
        # B = 0 at initialisation: m = ||W|| per row, so the layer's output is the base layer's;
        # the magnitude gets a gradient, and what a forward saves alive is its own (the identity's
        # graph dies inside the forward).
        import lora as lora_mod
        torch.manual_seed(0)
        base = torch.nn.Linear(16, 8, bias=False)
        dora = lora_mod.DoraLinear(base, 4, 8, 0.0, torch.float32)
        x = torch.randn(3, 16, requires_grad=True)
        y = dora(x)
        self.assertTrue(torch.allclose(y, base(x), atol=1e-6))
        y.sum().backward()
        self.assertIsNotNone(dora.lora_magnitude_vector.grad)
        self.assertIsNotNone(dora.lora_B.weight.grad)

    def test_ia3_trains_one_vector_per_target(self):
        # PEFT's defaults for Llama: k_proj and v_proj outputs (k d each), down_proj's input (I).
        r = run_case("fp32-ia3")
        self.assertEqual(r["trainable_parameters"], 2 * (2 * 2 * D + I))
        self.assertEqual(r["gradient_bytes"], 4 * r["trainable_parameters"])

    def test_dora_saved_bytes_match_membudget(self):
        # Exact to the byte against the estimate in compare.py; here: DoRA keeps more than LoRA.
        plain = run_case("fp32-lora-qv")
        dora = run_case("fp32-dora-qv")
        self.assertGreater(dora["saved_activation_bytes"], plain["saved_activation_bytes"])
        self.assertEqual(dora["trainable_parameters"], plain["trainable_parameters"] + 2 * (A * D + 2 * D))

    def test_qv(self):
        r = run_case("fp32-lora-qv")
        self.assertEqual(r["trainable_parameters"], r["expected_trainable_parameters"])
        self.assertEqual(r["gradient_bytes"], 4 * r["trainable_parameters"])
        self.assertEqual(r["saved_unattributed_count"], 0)
        rank = 8
        norm = T * (4 * H + M + 4)  # the weight is frozen: no normalized copy
        adapters = T * (4 * H + 2 * 4 * rank) + 2 * WRAPPED  # lora_A input shared by q and v
        mlp = T * 3 * 4 * I  # silu input, silu output, up output; frozen down_proj keeps nothing
        expected = 2 * norm + adapters + attention_eager(4) + mlp
        self.assertEqual(r["saved_activation_bytes_per_layer"][1], expected)
        self.assertLess(r["saved_activation_bytes_per_layer"][0], expected)  # frozen embedding output

    def test_dropout_keeps_mask_and_copy_per_adapter(self):
        plain = run_case("fp32-lora-qv")
        drop = run_case("fp32-lora-qv-dropout")
        mask = 4  # on CPU dropout keeps a float mask in the input dtype (a 1-byte bool mask on CUDA)
        # per adapter: a mask and the dropped copy (4 B); the shared undropped input is no longer kept
        delta = T * (2 * (mask + 4) * H - 4 * H)
        self.assertEqual(drop["saved_activation_bytes_per_layer"][1] - plain["saved_activation_bytes_per_layer"][1],
                         delta)

    def test_checkpointing_reaches_the_adapters(self):
        r = run_case("fp32-lora-qv-ckpt")
        self.assertEqual(r["gradient_bytes"], 4 * r["trainable_parameters"])


if __name__ == "__main__":
    unittest.main()


class GpuOptions(unittest.TestCase):
    """What the GPU runs add, checked where a CPU can: refusals, the flags reaching the JSON, and a
    batch run gathering its results."""

    def test_snapshot_needs_cuda(self):
        with self.assertRaisesRegex(scenario.Unsupported, "needs a CUDA device"):
            run_case("bf16-eager-full", "--snapshot", os.path.join(HERE, "unused.pickle"))

    def test_snapshot_from_load_starts_before_the_model_is_built(self):
        # Recording starts before Setup builds the model: on a CPU its refusal comes first.
        snapshot = ("--snapshot", os.path.join(HERE, "unused.pickle"))
        built = RuntimeError("the model was built")
        with unittest.mock.patch.object(measure, "Setup", side_effect=built):
            with self.assertRaisesRegex(scenario.Unsupported, "needs a CUDA device"):
                run_case("bf16-eager-full", *snapshot, "--snapshot-from-load")
            with self.assertRaisesRegex(RuntimeError, "the model was built"):
                run_case("bf16-eager-full", *snapshot)

    def test_fused_adamw_is_fused_or_refused(self):
        try:
            result = run_case("fp32-eager-full", "--set", "training.optimizer=adamw-fused")
        except scenario.Unsupported as err:  # torch without fused AdamW on this device
            self.assertIn("adamw-fused", str(err))
            return
        self.assertEqual(result["optimizer"]["class"], "AdamW")
        self.assertFalse(result["optimizer"]["foreach"])

    def test_hf_sdpa_style_is_recorded(self):
        result = run_case("bf16-eager-full", "--hf-sdpa", "current")
        self.assertEqual(result["hf_sdpa"], "current")

    def test_out_of_memory_is_recognised(self):
        self.assertTrue(measure.is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")))
        self.assertFalse(measure.is_out_of_memory(RuntimeError("addmm_impl_cpu_ not implemented for 'Half'")))

    def test_batch_gathers_runs(self):
        import json
        import tempfile

        import gpu_batch

        with tempfile.TemporaryDirectory() as out:
            plan = os.path.join(out, "plan.json")
            with open(plan, "w", encoding="utf-8") as fh:
                json.dump([{"id": "ok", "case": "cases/bf16-eager-full.yaml"},
                           {"id": "refused", "case": "cases/bf16-eager-full.yaml",
                            "set": ["training.optimizer=adamw-8bit"]}], fh)
            self.assertEqual(gpu_batch.main([plan, out, "--device", "cpu"]), 0)
            with open(os.path.join(out, "results.json"), encoding="utf-8") as fh:
                runs = {r["id"]: r for r in json.load(fh)["runs"]}
        self.assertEqual(runs["ok"]["rc"], 0)
        self.assertGreater(runs["ok"]["result"]["weight_bytes"], 0)
        self.assertEqual(runs["refused"]["rc"], 3)
        self.assertIn("adamw-8bit", runs["refused"]["stderr"])


class Generation(unittest.TestCase):
    """The generation harness: transformers' dynamic cache and generate()'s phases."""

    def test_cache_copies_the_prompt_then_grows_by_cat(self):
        import generation
        cache = generation.DynamicCache()
        k, v = torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
        keys, values = cache.update(0, k, v)
        self.assertNotEqual(keys.data_ptr(), k.data_ptr())  # a copy (lazy_initialization + cat)
        self.assertTrue(torch.equal(keys, k) and torch.equal(values, v))
        keys, _ = cache.update(0, k[:, :, :1], v[:, :, :1])
        self.assertEqual(keys.shape[-2], 6)
        self.assertEqual(cache.length(), 6)

    def test_generation_matches_a_forward_without_cache(self):
        import generation
        import measure_generation
        sc = scenario.load(os.path.join(CASES, "inference", "fp32-eager-gqa-decode4.yaml"))
        model, ids = measure_generation.build(sc, "cpu", 1)
        phases = []
        out = generation.generate(model, ids, 3, phases.append)
        self.assertEqual(phases, ["prefill", "decode_earlier", "decode_earlier", "decode", "end"])
        self.assertEqual(out.shape, (B, S + 4))
        # Greedy decoding with the cache picks what a forward over the whole sequence picks.
        with torch.no_grad():
            _, logits = model(out[:, :-1])
        self.assertTrue(torch.equal(logits[:, S - 1:].argmax(-1), out[:, S:]))

    def test_training_harness_refuses_inference(self):
        with self.assertRaises(scenario.Unsupported):
            measure.run(measure.build_parser().parse_args(
                [os.path.join(CASES, "inference", "fp32-eager-gqa-prefill.yaml")]))
