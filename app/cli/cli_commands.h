// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/byte_format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membudget::cli {

// Exit codes of every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;
// `fit`: for at least one of the GPUs neither the scenario nor any suggestion fits.
inline constexpr int kExitNoFit = 3;

struct EstimateOptions
{
    std::string file;
    bool json = false;
    std::vector<std::string> gpus; // override / extend the scenario's GPUs
    ByteUnit unit = ByteUnit::GiB;
    bool timeline = false; // --json: add every allocation and free of the step
    int stage = 0;         // pipeline stage to show, 1-based; 0: the one that allocates the most
};
int runEstimate(const EstimateOptions &options);

struct FitOptions
{
    std::string file;
    std::vector<std::string> gpus;
    int limit = 8;
    bool json = false;
    ByteUnit unit = ByteUnit::GiB;
};
// Exit code kExitNoFit when some GPU has neither a fit nor a suggestion that fits.
int runFit(const FitOptions &options);

struct SnapshotOptions
{
    std::string file;
    bool json = false;
    std::string scenario; // estimate shown beside the measurement
    int top = 10;         // allocation sites listed
    int device = -1;      // -1: the device with the most trace events
    ByteUnit unit = ByteUnit::GiB;
    std::int64_t capacity = INT64_MAX; // device memory for the allocator-model replay; max: no limit
    bool calibrate = false;            // write the scenario with overheads taken from the snapshot
    std::string output;                // where (empty or "-": standard output)
};
int runSnapshot(const SnapshotOptions &options);

int runPresets(const std::string &what, bool json, ByteUnit unit);
int runLadder(const std::string &file, bool json, ByteUnit unit, const std::string &gpu);
int runValidate(const std::vector<std::string> &files);
struct ImportOptions
{
    // A config.json file, a folder holding one, or a Hugging Face model: hf:owner/name[@revision],
    // a model page's address, or owner/name when no such file or folder exists.
    std::string source;
    std::string output; // empty or "-": standard output
    bool offline = false;
    double timeoutSeconds = 20;
};
int runImportConfig(const ImportOptions &options);

struct ExportConfigOptions
{
    std::string file;
    std::string format = "trainer"; // trainer | sft | accelerate | deepspeed
    std::string output;             // empty or "-": standard output
};
int runExportConfig(const ExportConfigOptions &options);

// `membudget export`: the options as given (membudget-gui checks the numbers, so that both
// programs say the same).
struct ExportOptions
{
    std::string scenario;
    std::string output;
    std::optional<std::string> width, height, scale, title, caption; // unset: not given
    bool gib = false;
    bool gb = false;
};
int runExport(const std::string &self, const ExportOptions &options);

// Hands `args` to membudget-gui (installed beside this binary) and returns its exit code.
int runGui(const std::string &self, const std::vector<std::string> &args);

} // namespace membudget::cli
