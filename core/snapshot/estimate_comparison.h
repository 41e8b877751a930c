// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A scenario's estimate held against a recorded trace, phase by phase: the most allocated and
// reserved in each phase the trace shows (trace_phases.h) beside the estimate's phase peaks, the
// bytes live when the step began beside the resident tensors MemBudget models, the reserved bytes
// beyond allocated at the allocated peak, and the differences named in sentences.
//
// Measured bytes are the trace's requested sizes (measured_timeline.h), estimated ones the
// timeline's tensor sizes: both without the allocator's rounding. Neither counts the CUDA context
// or NCCL's buffers, which a snapshot does not see.

#include "base/byte_format.h"
#include "model/memory_estimate.h"
#include "model/timeline_series.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/trace_phases.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace membudget::snapshot {

struct ComparedBytes
{
    std::optional<Bytes> measured;
    std::optional<Bytes> estimated;

    bool both() const { return measured && estimated; }
    Bytes difference() const { return both() ? *estimated - *measured : 0; } // estimated - measured
    // estimated / measured (nothing without both, or with nothing measured)
    std::optional<double> ratio() const;
};

struct PhaseComparison
{
    Phase phase = Phase::Forward;
    bool in_trace = false;        // the trace shows this phase
    std::size_t first_event = 0;  // its trace events [first_event, end_event)
    std::size_t end_event = 0;    //   (forward: with the loss)
    std::int64_t peak_event = -1; // where allocated peaks in it (-1: before the first event)
    ComparedBytes allocated;      // the most allocated while the phase runs
    ComparedBytes reserved;       // the most reserved
};

struct EstimateComparison
{
    TracePhases phases;
    ComparedBytes peak_allocated;
    ComparedBytes peak_reserved;
    // Live when the step began: measured at the start of the trace's forward (or of the trace when
    // no phases were found), estimated as the resident tensors (weights, master weights, optimizer
    // states, kept gradients, extra_resident). Unknown when recording began with an empty
    // allocator (the trace then holds the model's loading) or in the middle of a step.
    ComparedBytes resident;
    std::string resident_source; // how the measured figure was found, or why it is unknown
    // Reserved beyond allocated at the allocated peak (cached blocks and rounding): measured from
    // the trace, estimated from the allocator model's replay of the step.
    ComparedBytes reserve_at_peak;
    std::array<PhaseComparison, kPhaseCount> by_phase{};
};

// `series` is the estimate's step (for the resident bytes); `estimate` its figures.
EstimateComparison compareWithEstimate(const SnapshotAnalysis &analysis,
                                       const TracePhases &phases,
                                       const TimelineSeries &series,
                                       const MemoryEstimate &estimate);

// Where estimate and measurement part, most important first, one sentence each.
std::vector<std::string> comparisonFindings(const EstimateComparison &comparison,
                                            const MemoryEstimate &estimate,
                                            ByteUnit unit);

} // namespace membudget::snapshot
