// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Pipeline parallelism (torch.distributed.pipelining as torchtitan runs it; Megatron-LM's
// schedules.py): the decoder layers are split into `pipeline_parallel` consecutive stages, each on
// its own group of GPUs. The first stage also holds the embedding, the last the final norm, lm_head
// and the loss. A step's micro-batches (gradient_accumulation_steps) flow through the stages; a
// stage keeps the saved activations of every micro-batch whose forward it ran and whose backward it
// has not, which the schedule decides (Korthikanti et al. 2022, arXiv:2205.05198, section 4.2.3).

#include "model/memory_estimator.h"
#include "model/size_expr.h"
#include "model/step_timeline.h"

#include <cstdint>
#include <string>
#include <vector>

namespace membudget {

// Decoder layers of stage `index` of `stages`: an even split, the first stages taking one more
// where the layers do not divide (torchtitan's pipeline_module_split splits evenly).
std::int64_t pipelineStageLayers(std::int64_t layers, std::int64_t stages, std::int64_t index);
// Decoder layers of stage `index` of the input's pipeline: `pipeline_layers` where it is set for
// every stage (validatePipelineParallel checks that it adds up), else the even split above.
std::int64_t pipelineStageLayers(const EstimateInput &input, std::int64_t index);

// Micro-batches whose activations stage `index` holds at once, in units of one micro-batch through
// all of the stage's layers (fractional for interleaved 1F1B, whose chunks are 1/v of them):
// GPipe m; 1F1B min(p - index, m) (PipeDream-Flush, Narayanan et al. 2021, section 2.1);
// interleaved min(2 (p - index - 1) + (v - 1) p + 1, m v) / v chunks (Megatron-LM
// forward_backward_pipelining_with_interleaving's warm-up count, plus the chunk in flight).
double pipelineInFlight(const ParallelismConfig &parallelism,
                        std::int64_t microBatches,
                        std::int64_t index);

// Whether stage `index` runs a forward after one of its backwards within a step, so that the
// gradients exist while it holds its micro-batches in flight: not with GPipe, nor when the warm-up
// forwards take all micro-batches but one (zero_grad(set_to_none=True) leaves none before the
// step's first backward). Without, the stage's peaks are those of one micro-batch whose gradients
// are born in its backward.
bool pipelineGradientsInForward(const ParallelismConfig &parallelism,
                                std::int64_t microBatches,
                                std::int64_t index);

// The stall of the pipeline's fill and drain as a fraction of the ideal step time:
// (p - 1) / (v m) (Narayanan et al. 2021, sections 2.1 and 2.2; GPipe's is that of 1F1B).
double pipelineBubbleFraction(const ParallelismConfig &parallelism, std::int64_t microBatches);

// The input of one stage: its share of the layers, the ends it holds (model_architecture.h), and
// the FSDP resharding the stack uses with a pipeline (torchtitan keeps each stage's units gathered
// between micro-batches: parallelize.py, reshard_after_forward "default" is not pp_enabled).
// `input` is the whole model's (StepModel slices it once).
EstimateInput pipelineStageInput(const EstimateInput &input, std::int64_t index);

// The stages that may take the longest: of an even split the two ends (the first holds the
// embedding and the most layers, the last the loss), of a split set by hand every stage. 0-based,
// first to last; {0} without a pipeline.
std::vector<std::int64_t> pipelineCandidateStages(const EstimateInput &input);

// The stage an estimate models when the input leaves it open: of every stage, the one that
// allocates the most at its peak. Not only the ends: a stage whose warm-up leaves it gradients
// while it holds its micro-batches can outgrow the first, whose warm-up takes all but one (FSDP's
// unsharded gradients under torch pipelining: Llama 3.1 405B on PP 8, stage 2), and interleaving
// spreads the chunk passes unevenly.
std::int64_t pipelineWorstStage(const EstimateInput &input);

// One stage of a pipeline as its own estimate builds it: its decoder layers, the micro-batches it
// holds at once and its allocated peak.
struct PipelineStagePeak
{
    std::int64_t stage = 0; // 0-based
    std::int64_t layers = 0;
    double in_flight = 1;
    Bytes peak_allocated = 0;
};

// Every stage of the input's pipeline, first to last (empty without one), each built alone; the
// command line's per-stage table.
std::vector<PipelineStagePeak> pipelineStagePeaks(const EstimateInput &input);

// Of stages' peaks, the 0-based index of the one that allocates the most (the first of equals); 0
// when there are none. pipelineWorstStage(input) is that of pipelineStagePeaks(input).
std::int64_t worstStage(const std::vector<PipelineStagePeak> &peaks);

// What one micro-batch holds when its forward through the stage ends (the saved tensors and the
// logits' chain, not the states), in three parts: the decoder layers' own tensors, what each pass
// through a run of layers makes once (its input, received or embedded, the mask and rotary tables),
// and what the loss keeps (final norm, lm_head, logits; last stage only).
struct ForwardEndParts
{
    SizeExpr layers;
    SizeExpr pass;
    SizeExpr head;
};
ForwardEndParts forwardEndParts(const StepTimeline &timeline);

// Interleaved 1F1B: how many passes of each of its v chunks stage `index` holds at the forward's
// end that holds the most, each pass of chunk c weighing weight[c], over Megatron-LM's order of its
// m v chunk passes (forward pass k: chunk (k % pv) / p; backward pass k: chunk v - 1 - (k % pv) /
// p; 2 (p - index - 1) + (v - 1) p warm-up forwards).
std::vector<std::int64_t> interleavedPeakPasses(const ParallelismConfig &parallelism,
                                                std::int64_t microBatches,
                                                std::int64_t index,
                                                const std::vector<double> &weight);

// What stage `stage.pipeline_stage`'s other in-flight micro-batches hold beyond the one its
// timeline models: (in_flight - 1) x forwardEndParts for GPipe and 1F1B; with interleaving, the
// chunk passes held at once that hold the most at the input's shape (each pass its chunk's share
// of the layers, a pass's own tensors and its output, `boundary`, the hidden states between
// stages; the loss's only in the last stage's last chunk), less the modelled micro-batch.
// `microBatches` is the step's. `inputsInBuffers`: the stage keeps its received inputs for
// backward and they are torch.distributed.pipelining's receive buffers (addPipelineReceiveBuffers
// counts them), so a held pass of a stage object that receives holds its input there, not here.
SizeExpr pipelineInFlightExtra(const StepTimeline &timeline,
                               const EstimateInput &stage,
                               std::int64_t microBatches,
                               double inFlight,
                               const SizeExpr &boundary,
                               bool inputsInBuffers = false);

// Adds the other in-flight micro-batches' activations (`extra`) to a stage's timeline: allocated
// before the forward, freed before the optimizer step, in (in_flight - 1) x layers pieces.
void addPipelineInFlight(StepTimeline &timeline, const SizeExpr &extra, double inFlight);

// torch.distributed.pipelining (the torchtitan stack) gives each stage object one receive buffer
// per micro-batch and direction, made on the first step() and never freed (stage.py,
// _prepare_forward_infra / _create_act_recv_info and _prepare_backward_infra /
// _create_grad_recv_info, torch 2.5 to at least 2.9): every stage but the pipeline's first
// receives activations, every stage but its last gradients, each of `boundary` bytes. With
// interleaving a GPU runs v stage objects. How many buffers stage `stage.pipeline_stage`'s GPU
// holds; 0 for other stacks (Megatron-LM receives into a new tensor per transfer, which the
// activations already count).
std::int64_t pipelineReceiveBufferCount(const EstimateInput &stage, std::int64_t microBatches);
// The stage runs forward on the buffer itself (stage.py, _retrieve_recv_activations and
// forward_one_chunk): where the stage keeps that input for backward, the timeline's received
// input of the modelled micro-batch is its buffer.
// Adds `count` buffers of `boundary` bytes: allocated before the first forward, freed after the
// optimizer step. `modelledInputIsBuffer`: one of them is the modelled micro-batch's kept input
// from its forward to its backward, and is held as a buffer again only once the backward is done.
void addPipelineReceiveBuffers(StepTimeline &timeline,
                               const SizeExpr &boundary,
                               std::int64_t count,
                               bool modelledInputIsBuffer = false);

// What torch.distributed.pipelining (the torchtitan stack) keeps on stage `stage.pipeline_stage`'s
// GPU until the next step begins (stage.py, clear_runtime_states), by the PyTorch release the
// scenario names, in bytes at the step's end:
// - `outputs` (output_chunks, for the merged output step() returns): before 2.8 every stage
//   object's outputs, `boundary` each and the pipeline's last object's logits; 2.8 and 2.9 only the
//   logits (pytorch PR #153383, "if self.is_last"); from 2.10 none (step(return_outputs=False),
//   pytorch PR #165822, which torchtitan passes since torchtitan#1922, October 2025);
// - `input_grads` (the receive buffers' .grad, which stage_backward leaves set): before 2.10, one
//   `boundary` per micro-batch of each stage object that receives activations (pytorch PR #164329
//   clears them once sent);
// - `merged`, not kept but made at the end of the last stage's step() before 2.10: the output it
//   returns, merge_chunks' torch.cat of the kept logits (a second copy, which torchtitan drops at
//   once, before the optimizer step).
// A scenario that names no PyTorch release gets the newest behaviour: nothing kept. Zero for
// other stacks.
struct PipelineKeptTensors
{
    SizeExpr outputs;
    SizeExpr input_grads;
    SizeExpr merged;
};
PipelineKeptTensors pipelineKeptTensors(const EstimateInput &stage,
                                        std::int64_t microBatches,
                                        const SizeExpr &boundary,
                                        const SizeExpr &logits);
// Adds `kept` bytes to a stage's timeline, as the micro-batches finish: the share of those done
// before the stage's last steady-state forward ((m - in_flight) / m) from the first forward on,
// the rest when the last backward is done; all freed after the optimizer step.
void addPipelineKeptTensors(StepTimeline &timeline,
                            const SizeExpr &kept,
                            double inFlight,
                            std::int64_t microBatches);
// Adds the merged output: made and dropped after the last backward, before the optimizer step.
void addPipelineMergedOutput(StepTimeline &timeline, const SizeExpr &merged);

// For people: "stage 1 of 4: the embedding and 8 decoder layers, 4 micro-batches' activations at
// once (1f1b)"; empty without pipeline parallelism.
std::string pipelineStageSummary(const ParallelismConfig &parallelism, const Derivation &d);

// Why the scenario cannot run with its pipeline (empty: it can); sets *key to the key at fault.
std::string validatePipelineParallel(const EstimateInput &input, std::string *key);

} // namespace membudget
