// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/op_graph.h"
#include "model/parameter_layout.h"
#include "model/tensor_parallel_plan.h"
#include "model/training_options.h"

#include <cstdint>

namespace membudget {

// The name of the embedding's weight in the graphs (the step timeline finds its gradient by it).
inline constexpr const char *kEmbeddingWeight = "embed_tokens";

// What enters the first decoder layer: token ids looked up in the embedding (plus learned
// positions, Gemma's scaling, GPT-2's dropout). Its output is the first layer's input.
// `outputRequiresGrad`: HF's enable_input_require_grads hook (gradient checkpointing with a frozen
// embedding) makes the looked-up embeddings require a gradient.
OpGraph embeddingGraph(const ModelArchitecture &arch,
                       const TrainingConfig &training,
                       const ParameterLayout &layout,
                       TensorParallelPlan tensorParallel,
                       bool outputRequiresGrad);

// Tokens per chunk of TRL's chunked_nll loss (trl/trainer/sft_trainer.py,
// _CHUNKED_LM_HEAD_CHUNK_SIZE).
constexpr double kTrlLossChunkTokens = 256;

// What follows the last decoder layer: the final norm, lm_head and the causal-LM loss (training),
// or the last position's logits (inference, as generate() asks for). Its input is the last layer's
// output; its output is the loss.
OpGraph headGraph(const ModelArchitecture &arch,
                  const TrainingConfig &training,
                  const ParameterLayout &layout,
                  TensorParallelPlan tensorParallel,
                  bool inputRequiresGrad);

// A later pipeline stage's start (pipeline_parallel.h): the hidden states received from the stage
// before, which require a gradient (it is sent back in backward).
OpGraph pipelineReceiveGraph(const ModelArchitecture &arch,
                             const TrainingConfig &training,
                             TensorParallelPlan tensorParallel);

// The hidden states a stage sends the next: b x s x h elements (h shared out when sequence
// parallelism splits the sequence) in the residual stream's dtype. The boundary graphs below and
// the pipeline's in-flight count (pipeline_parallel.h) both take it from here.
double pipelineBoundaryWidth(const ModelArchitecture &arch, TensorParallelPlan tensorParallel);
SizeExpr pipelineBoundaryBytes(const ModelArchitecture &arch,
                               const TrainingConfig &training,
                               TensorParallelPlan tensorParallel);

// The last stage's output, the logits of one micro-batch as lm_head makes them: b x s x vocab
// elements (the vocabulary shared out with loss parallelism) in the matmul's dtype.
SizeExpr pipelineLogitsBytes(const ModelArchitecture &arch,
                             const TrainingConfig &training,
                             TensorParallelPlan tensorParallel);

// An earlier pipeline stage's end: its last layer's output is sent on and kept for backward, which
// starts from the gradient the next stage sends back.
OpGraph pipelineSendGraph(const ModelArchitecture &arch,
                          const TrainingConfig &training,
                          TensorParallelPlan tensorParallel);

} // namespace membudget
