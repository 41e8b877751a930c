// SPDX-License-Identifier: GPL-3.0-or-later
// What autograd allocates, keeps and frees for small hand-made op graphs.
#include "model/graph_builder.h"
#include "model/graph_executor.h"
#include "model/selective_checkpoint_policy.h"

#include <QtTest>

using namespace membudget;

namespace {

int count(const std::vector<GraphEvent> &events, GraphEventKind kind, int tensor = -2)
{
    int n = 0;
    for (const GraphEvent &e : events)
        if (e.kind == kind && (tensor == -2 || e.tensor == tensor))
            ++n;
    return n;
}

int indexOf(const std::vector<GraphEvent> &events, GraphEventKind kind, int tensor)
{
    for (std::size_t i = 0; i < events.size(); ++i)
        if (events[i].kind == kind && events[i].tensor == tensor)
            return static_cast<int>(i);
    return -1;
}

SizeExpr tok(double w)
{
    return SizeExpr::perToken(w);
}

} // namespace

class TestGraphExecutor : public QObject
{
    Q_OBJECT
private slots:
    // y = silu(x); z = y @ W: silu keeps x, the matmul keeps y only because W trains.
    void keepsWhatTheDerivativeNeeds()
    {
        for (bool trainable : {true, false}) {
            OpGraph g;
            GraphBuilder b(g);
            const int x = b.input("x", tok(4), 2, true);
            const int w = b.parameter("W", 32, trainable);
            const int y = b.keepsInput(x, tok(4), 2, "silu");
            const int z = b.matmul(y, w, tok(8), 2, "matmul");
            g.input = x;
            g.output = z;
            const GraphAnalysis a = analyzeGraph(g);
            QCOMPARE(a.saved_count[static_cast<std::size_t>(x)], 1);
            QCOMPARE(a.saved_count[static_cast<std::size_t>(y)], trainable ? 1 : 0);
            std::vector<GraphEvent> fwd;
            forwardEvents(g, a, fwd);
            QCOMPARE(count(fwd, GraphEventKind::AllocValue), 2);
            QCOMPARE(count(fwd, GraphEventKind::FreeValue, y), trainable ? 0 : 1);
            QCOMPARE(count(fwd, GraphEventKind::FreeValue, x), 0); // kept by silu
            std::vector<GraphEvent> bwd;
            const int inputGrad = backwardEvents(g, a, false, bwd);
            QCOMPARE(inputGrad, x);
            QCOMPARE(count(bwd, GraphEventKind::AllocParamGrad, w), trainable ? 1 : 0);
            QCOMPARE(count(bwd, GraphEventKind::FreeValue, x), 1);
            // The output's gradient (made outside) is freed once the matmul's backward has used it.
            QCOMPARE(count(bwd, GraphEventKind::FreeGrad, z), 1);
            QVERIFY(indexOf(bwd, GraphEventKind::AllocGrad, y)
                    < indexOf(bwd, GraphEventKind::FreeGrad, z));
        }
    }

    // Nothing requires a gradient: no op is recorded, nothing is kept, every value dies young.
    void inferenceKeepsNothing()
    {
        OpGraph g;
        GraphBuilder b(g);
        const int x = b.input("x", tok(4), 2, false);
        const int w = b.parameter("W", 32, false);
        const int y = b.matmul(x, w, tok(8), 2, "matmul");
        const int z = b.keepsOutput(y, tok(8), 4, "softmax");
        g.input = x;
        g.output = z;
        const GraphAnalysis a = analyzeGraph(g, false);
        QCOMPARE(a.recorded[0], std::uint8_t(0));
        std::vector<GraphEvent> fwd;
        forwardEvents(g, a, fwd);
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, x), 1);
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, y), 1);
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, z), 0); // the graph's output lives on
    }

    // A residual block hands the output's gradient to its input without a copy; the branch's
    // gradient is added to it in place (a part, allocated and freed).
    void residualPassesTheGradientThrough()
    {
        OpGraph g;
        GraphBuilder b(g);
        const int x = b.input("x", tok(4), 2, true);
        const int f = b.keepsInput(x, tok(4), 2, "f");
        const int out = b.add(x, f, "residual add");
        g.input = x;
        g.output = out;
        const GraphAnalysis a = analyzeGraph(g);
        std::vector<GraphEvent> bwd;
        QCOMPARE(backwardEvents(g, a, false, bwd), out);
        QCOMPARE(count(bwd, GraphEventKind::AllocGrad), 0);
        QCOMPARE(count(bwd, GraphEventKind::AllocGradPart, x), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeGradPart, x), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeGrad), 0); // the buffer lives on as x's gradient
    }

    // A recomputation region keeps only its input in forward and runs again in backward.
    void checkpointRegion()
    {
        OpGraph g;
        GraphBuilder b(g);
        const int x = b.input("x", tok(4), 2, true);
        const int w = b.parameter("W", 32, true);
        const int y = b.keepsInput(x, tok(16), 2, "gelu");
        const int z = b.matmul(y, w, tok(4), 2, "matmul");
        g.input = x;
        g.output = z;
        g.regions.push_back({0, 1});
        for (GraphOp &op : g.ops)
            op.region = 0;
        const GraphAnalysis a = analyzeGraph(g);
        QCOMPARE(a.saved_count[static_cast<std::size_t>(y)], 0);
        QCOMPARE(a.region_kept[static_cast<std::size_t>(x)], 1);
        std::vector<GraphEvent> fwd;
        forwardEvents(g, a, fwd);
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, y), 1); // not kept under the checkpoint
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, x), 0); // the checkpoint's input
        std::vector<GraphEvent> bwd;
        backwardEvents(g, a, false, bwd);
        QCOMPARE(count(bwd, GraphEventKind::AllocRecomputed, y), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeRecomputed, y), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeValue, x), 1); // released when the region is done
        QVERIFY(indexOf(bwd, GraphEventKind::AllocRecomputed, y)
                < indexOf(bwd, GraphEventKind::AllocParamGrad, w));
    }

    // An op-level policy keeps an op's output from forward: the recomputation takes it instead of
    // making it again, and backward frees that forward tensor (the others are made again).
    void keptOutputIsHandedToTheRecomputation()
    {
        OpGraph g;
        GraphBuilder b(g);
        const int x = b.input("x", tok(4), 2, true);
        const int w1 = b.parameter("W1", 32, true);
        const int w2 = b.parameter("W2", 32, true);
        const int y = b.matmul(x, w1, tok(16), 2, "mm 1");
        g.ops.back().policy_class = PolicyClass::Matmul;
        const int s = b.keepsInput(y, tok(16), 2, "gelu");
        const int z = b.matmul(s, w2, tok(4), 2, "mm 2");
        g.ops.back().policy_class = PolicyClass::Matmul;
        g.input = x;
        g.output = z;
        g.regions.push_back({0, 2});
        for (GraphOp &op : g.ops)
            op.region = 0;
        markSelectiveSaves(g, g.regions.back());
        QVERIFY(g.ops[0].cached);
        QVERIFY(!g.ops[1].cached);
        QVERIFY(!g.ops[2].cached); // every second matmul runs again
        const GraphAnalysis a = analyzeGraph(g);
        std::vector<GraphEvent> fwd;
        forwardEvents(g, a, fwd);
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, y), 0); // kept for the recomputation
        QCOMPARE(count(fwd, GraphEventKind::FreeValue, s), 1);
        std::vector<GraphEvent> bwd;
        backwardEvents(g, a, false, bwd);
        QCOMPARE(count(bwd, GraphEventKind::AllocRecomputed, y), 0);
        QCOMPARE(count(bwd, GraphEventKind::AllocRecomputed, s), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeValue, y), 1); // the forward's tensor, freed once
        QCOMPARE(count(bwd, GraphEventKind::FreeRecomputed, y), 0);
        QCOMPARE(count(bwd, GraphEventKind::FreeRecomputed, s), 1);
        // y is no longer needed once gelu's backward has run (it saved y): freed after that.
        QVERIFY(indexOf(bwd, GraphEventKind::FreeValue, y)
                > indexOf(bwd, GraphEventKind::AllocGrad, y));
    }

    // Gradient accumulation: the .grad exists, backward adds a part and frees it.
    void accumulationAddsParts()
    {
        OpGraph g;
        GraphBuilder b(g);
        const int x = b.input("x", tok(4), 2, true);
        const int w = b.parameter("W", 32, true);
        g.output = b.matmul(x, w, tok(8), 2, "matmul");
        g.input = x;
        const GraphAnalysis a = analyzeGraph(g);
        std::vector<GraphEvent> bwd;
        backwardEvents(g, a, true, bwd);
        QCOMPARE(count(bwd, GraphEventKind::AllocParamGrad), 0);
        QCOMPARE(count(bwd, GraphEventKind::AllocParamGradPart, w), 1);
        QCOMPARE(count(bwd, GraphEventKind::FreeParamGradPart, w), 1);
    }
};

QTEST_APPLESS_MAIN(TestGraphExecutor)
#include "tst_graph_executor.moc"
