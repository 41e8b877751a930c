// SPDX-License-Identifier: GPL-3.0-or-later
// membudget: GPU memory budgets for LLM training from the command line.
#include "base/byte_format.h"
#include "cli_commands.h"
#include "user_presets.h"

#include <CLI/CLI.hpp>

#include <iostream>

using namespace membudget::cli;

namespace {

// --gib (the default: what GPU names, nvidia-smi and PyTorch mean by "80 GB") and --gb (decimal).
void addUnitFlags(CLI::App *command, membudget::ByteUnit &unit)
{
    auto *gib = command->add_flag_callback(
        "--gib",
        [&unit] { unit = membudget::ByteUnit::GiB; },
        "Binary units, GiB (2^30 bytes; the default)");
    auto *gb = command->add_flag_callback(
        "--gb", [&unit] { unit = membudget::ByteUnit::GB; }, "Decimal units, GB (10^9 bytes)");
    gib->excludes(gb);
}

} // namespace

int main(int argc, char **argv)
{
    CLI::App
        app{"MemBudget: GPU memory budgets for training and fine-tuning large language models.\n"
            "Without a command, starts the desktop application.",
            "membudget"};
    app.set_version_flag("--version", std::string("membudget ") + MEMBUDGET_VERSION);
    app.require_subcommand(0, 1);
    const std::string userFolder = membudget::userPresetFolder();
    app.footer("\"membudget COMMAND --help\" shows a command's options; \"man membudget\" has the "
               "details.\n"
               "User presets (model, GPU and scenario YAML): "
               + (userFolder.empty() ? std::string("none (no home folder)") : userFolder)
               + " ($MEMBUDGET_PRESETS overrides).\n"
                 "SCENARIO is a file or the id of a bundled scenario (membudget presets "
                 "scenarios).\n"
                 "Exit codes: 0 ok, 1 bad input, 2 usage, 3 (fit) nothing fits some GPU.");

    EstimateOptions est;
    auto *estimate = app.add_subcommand("estimate",
                                        "Print the per-GPU memory breakdown of a scenario");
    estimate->add_option("scenario", est.file, "Scenario YAML file or bundled scenario id")
        ->required();
    estimate->add_flag("--json", est.json, "Machine-readable output (bytes as integers)");
    estimate
        ->add_option("--gpu",
                     est.gpus,
                     "GPU preset to compare against (repeatable; replaces the scenario's list)");
    addUnitFlags(estimate, est.unit);
    estimate->add_flag("--timeline",
                       est.timeline,
                       "With --json: every allocation and free of the step, in order");

    FitOptions fit;
    auto *fitCmd = app.add_subcommand(
        "fit", "Suggest technique combinations that make a scenario fit a GPU, fastest first");
    fitCmd->add_option("scenario", fit.file, "Scenario YAML file or bundled scenario id")->required();
    fitCmd->add_option("--gpu", fit.gpus, "GPU preset (repeatable; default: the scenario's GPUs)");
    fitCmd->add_option("--limit", fit.limit, "Most suggestions per GPU")->check(CLI::Range(1, 100));
    fitCmd->add_flag("--json", fit.json, "Machine-readable output");
    addUnitFlags(fitCmd, fit.unit);
    fitCmd->footer("Exit code 3 when, for some GPU, neither the scenario nor any suggestion fits.");

    std::string ladderFile, ladderGpu;
    bool ladderJson = false;
    membudget::ByteUnit ladderUnit = membudget::ByteUnit::GiB;
    auto *ladder
        = app.add_subcommand("ladder",
                             "Show what each technique saves, from the naive configuration up");
    ladder->add_option("scenario", ladderFile, "Scenario YAML file or bundled scenario id")
        ->required();
    ladder->add_flag("--json", ladderJson, "Machine-readable output");
    addUnitFlags(ladder, ladderUnit);
    ladder->add_option("--gpu",
                       ladderGpu,
                       "GPU preset for the step times (default: the scenario's first GPU)");

    SnapshotOptions snap;
    auto *snapshotCmd = app.add_subcommand(
        "snapshot",
        "Measure a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot): peaks, what was "
        "live at the peak, the estimate beside it");
    snapshotCmd->add_option("snapshot", snap.file, "Snapshot pickle file")->required();
    snapshotCmd->add_flag("--json", snap.json, "Machine-readable output (bytes as integers)");
    snapshotCmd->add_option("--scenario",
                            snap.scenario,
                            "Scenario YAML whose estimate to show beside");
    snapshotCmd->add_option("--top", snap.top, "Allocation sites to list (default 10)")
        ->check(CLI::Range(1, 1000));
    snapshotCmd
        ->add_option("--device",
                     snap.device,
                     "Device to measure (default: the one with most events)")
        ->check(CLI::Range(0, 1023));
    addUnitFlags(snapshotCmd, snap.unit);
    std::string replayCapacity;
    snapshotCmd->add_option("--capacity",
                            replayCapacity,
                            "Device memory the allocator model may reserve when it replays the "
                            "trace, e.g. 23.5GiB (default: no limit)");

    std::string presetKind;
    bool presetJson = false;
    auto *presets = app.add_subcommand("presets", "List bundled and user presets");
    presets->add_option("kind", presetKind, "models, gpus or scenarios (default: all)");
    presets->add_flag("--json", presetJson, "Machine-readable output");
    membudget::ByteUnit presetUnit = membudget::ByteUnit::GiB;
    addUnitFlags(presets, presetUnit);

    std::vector<std::string> validateFiles;
    auto *validate = app.add_subcommand(
        "validate",
        "Check scenario, preset, config.json and memory snapshot files; prints the first problem");
    validate
        ->add_option("files",
                     validateFiles,
                     "Scenario or preset YAML files, Hugging Face config.json files, or PyTorch "
                     "memory snapshots (.pickle)")
        ->required();

    std::string configFile, importOut;
    auto *importCmd = app.add_subcommand("import-config",
                                         "Turn a Hugging Face config.json into a scenario");
    importCmd->add_option("config", configFile, "config.json")->required();
    importCmd->add_option("-o,--output",
                          importOut,
                          "Scenario file to write (default: standard output)");

    std::vector<std::string> exportArgs;
    auto *exportCmd
        = app.add_subcommand("export",
                             "Render a scenario's chart to PNG, SVG or PDF (no display needed)");
    exportCmd->allow_extras();
    exportCmd->prefix_command();
    exportCmd->footer(
        "membudget export SCENARIO -o OUT.png|.svg|.pdf [--width W] [--height H] [--scale S]\n"
        "                 [--title T] [--caption C] [--gib | --gb]\n"
        "Runs membudget-gui --export, offscreen. Defaults: 1200 x 700 pixels, scale 1, the "
        "scenario's\n"
        "name as title, a sentence stating the scenario as caption; GiB unless --gb.");

    auto *gui = app.add_subcommand("gui", "Start the desktop application");
    gui->allow_extras();
    gui->prefix_command();
    gui->footer(
        "membudget gui [SCENARIO.yaml] is membudget-gui [SCENARIO.yaml]: the desktop application.");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        app.exit(e);
        return kExitUsage;
    }

    if (*estimate)
        return runEstimate(est);
    if (*fitCmd)
        return runFit(fit);
    if (*ladder)
        return runLadder(ladderFile, ladderJson, ladderUnit, ladderGpu);
    if (*presets)
        return runPresets(presetKind, presetJson, presetUnit);
    if (*snapshotCmd) {
        if (!replayCapacity.empty() && !membudget::parseByteSize(replayCapacity, snap.capacity)) {
            std::cerr << "--capacity: '" << replayCapacity
                      << "' is not a size (24GB, 23.5GiB, 512MiB or bytes)\n";
            return kExitUsage;
        }
        return runSnapshot(snap);
    }
    if (*validate)
        return runValidate(validateFiles);
    if (*importCmd)
        return runImportConfig(configFile, importOut);
    if (*exportCmd) {
        std::vector<std::string> args = {"--export"};
        for (const std::string &a : exportCmd->remaining())
            args.push_back(a);
        return runGui(argv[0], args);
    }
    return runGui(argv[0], *gui ? gui->remaining() : std::vector<std::string>{});
}
