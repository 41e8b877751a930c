// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/step_graphs.h"

#include "model/decoder_layer_graph.h"
#include "model/model_ends_graph.h"

namespace membudget {

ModelArchitecture architectureAsRun(const ModelArchitecture &arch, const TrainingConfig &training)
{
    if (training.mode == Mode::Train)
        return arch;
    ModelArchitecture eval = arch;
    eval.attention_dropout = 0;
    eval.hidden_dropout = 0;
    return eval;
}

StepGraphs stepGraphs(const ModelArchitecture &modelArch,
                      const TrainingConfig &t,
                      const ParameterLayout &layout,
                      TensorParallelPlan tp)
{
    StepGraphs g;
    g.train = t.mode == Mode::Train;
    const ModelArchitecture arch = architectureAsRun(modelArch, t);
    // HF enable_input_require_grads (called with gradient checkpointing, and by PEFT's
    // prepare_model_for_kbit_training): a frozen embedding's output requires a gradient.
    // A later pipeline stage's input always does: its gradient goes back to the stage before.
    const bool firstInputGrad = g.train
                                && (!arch.holds_embedding || t.method == Method::Full
                                    || checkpointedLayers(t, arch.layers) > 0);
    g.embed = arch.holds_embedding ? embeddingGraph(arch, t, layout, tp, firstInputGrad)
                                   : pipelineReceiveGraph(arch, t, tp);
    if (g.train && t.checkpointing == Checkpointing::Full && t.checkpoint_every > 1) {
        TrainingConfig plain = t;
        plain.checkpointing = Checkpointing::None;
        g.checkpoint_every = t.checkpoint_every;
        g.body = decoderLayerGraph(arch, plain, layout, tp, g.train);
        g.checkpointed = decoderLayerGraph(arch, t, layout, tp, g.train);
    } else {
        g.body = decoderLayerGraph(arch, t, layout, tp, g.train);
    }
    g.first_differs = firstInputGrad != g.train && arch.layers > 1;
    if (g.first_differs)
        g.first = decoderLayerGraph(arch, t, layout, tp, firstInputGrad);
    g.head = arch.holds_head ? headGraph(arch, t, layout, tp, g.train)
                             : pipelineSendGraph(arch, t, tp);
    return g;
}

} // namespace membudget
