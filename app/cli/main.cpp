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
    estimate
        ->add_option("--stage",
                     est.stage,
                     "With pipeline parallelism: the stage to show (1 = first; default: the stage "
                     "that allocates the most)")
        ->check(CLI::Range(1, 1 << 16));

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
    snapshotCmd->add_flag("--calibrate",
                          snap.calibrate,
                          "Take from the snapshot what MemBudget cannot know into the scenario's "
                          "overheads (needs --scenario) and write the calibrated scenario");
    snapshotCmd->add_option("-o,--output",
                            snap.output,
                            "Where --calibrate writes the scenario (default or '-': standard "
                            "output)");

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

    ImportOptions importOptions;
    auto *importCmd = app.add_subcommand(
        "import-config",
        "Turn a Hugging Face config.json (a file, or a model on the Hub) into a scenario");
    importCmd
        ->add_option("config",
                     importOptions.source,
                     "config.json, a folder holding one, or a Hugging Face model: hf:owner/name"
                     "[@revision], owner/name, or the model page's address")
        ->required();
    importCmd->add_option("-o,--output",
                          importOptions.output,
                          "Scenario file to write (default: standard output)");
    importCmd
        ->add_flag("--offline",
                   importOptions.offline,
                   "Ask no server: use the copy cached by an earlier import (as HF_HUB_OFFLINE=1)");
    importCmd
        ->add_option("--timeout",
                     importOptions.timeoutSeconds,
                     "Seconds to wait for the Hub (default 20)")
        ->check(CLI::Range(0.1, 600.0));
    importCmd->footer(
        "A Hugging Face model's config.json is fetched from https://huggingface.co/<id>/resolve/"
        "<revision>/config.json\n"
        "($HF_ENDPOINT overrides the address; $HF_TOKEN, or the token file $HF_TOKEN_PATH or "
        "$HF_HOME/token,\n"
        "is sent for gated models) and cached in $XDG_CACHE_HOME/membudget/hub "
        "(~/.cache/membudget/hub);\n"
        "when the Hub cannot be reached the cached copy is used, and the message says so.");

    ExportConfigOptions exportConfig;
    auto *exportConfigCmd = app.add_subcommand("export-config",
                                               "Write a scenario's setup as a Trainer/SFTConfig "
                                               "snippet, accelerate YAML or DeepSpeed JSON");
    exportConfigCmd->add_option("scenario", exportConfig.file, "Scenario YAML file")->required();
    exportConfigCmd
        ->add_option("-f,--format",
                     exportConfig.format,
                     "trainer (transformers TrainingArguments + PEFT/bitsandbytes), sft (TRL "
                     "SFTConfig), accelerate (accelerate launch YAML) or deepspeed (config JSON); "
                     "default trainer")
        ->check(CLI::IsMember({"trainer", "sft", "accelerate", "deepspeed"}));
    exportConfigCmd->add_option("-o,--output",
                                exportConfig.output,
                                "File to write (default: standard output)");
    exportConfigCmd->footer(
        "Python and YAML start with a comment naming the scenario, the model, MemBudget's "
        "estimate and what\n"
        "the settings cannot express; those notes are also printed on standard error (JSON "
        "has no comments).");

    ExportOptions ex;
    std::string exWidth, exHeight, exScale, exTitle, exCaption;
    auto *exportCmd
        = app.add_subcommand("export",
                             "Render a scenario's chart to PNG, SVG or PDF (no display needed)");
    exportCmd->add_option("scenario", ex.scenario, "Scenario YAML file")->required();
    exportCmd->add_option("-o,--output", ex.output, "The file to write: .png, .svg or .pdf")
        ->required();
    // Passed on as given: membudget-gui checks them, so that both programs say the same.
    const std::pair<CLI::Option *, std::pair<std::optional<std::string> *, std::string *>>
        exportValues[]
        = {{exportCmd->add_option("--width", exWidth, "Width in pixels (default 1200)"),
            {&ex.width, &exWidth}},
           {exportCmd->add_option("--height", exHeight, "Height in pixels (default 700)"),
            {&ex.height, &exHeight}},
           {exportCmd->add_option("--scale", exScale, "PNG pixel scale (default 1)"),
            {&ex.scale, &exScale}},
           {exportCmd->add_option("--title", exTitle, "Title (default: the scenario's name)"),
            {&ex.title, &exTitle}},
           {exportCmd->add_option("--caption",
                                  exCaption,
                                  "Caption (default: a sentence stating the scenario)"),
            {&ex.caption, &exCaption}}};
    auto *exGib = exportCmd->add_flag("--gib", ex.gib, "Binary units, GiB (the default)");
    exportCmd->add_flag("--gb", ex.gb, "Decimal units, GB, instead of GiB")->excludes(exGib);
    exportCmd->footer("Runs membudget-gui --export, offscreen. Width and height are 16 to 20000 "
                      "pixels, the scale 0.25 to 8, and a PNG at most 40 million pixels (width x "
                      "height x scale squared).");

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
        if (snap.calibrate && snap.scenario.empty()) {
            std::cerr
                << "--calibrate needs --scenario: the scenario whose overheads to calibrate\n";
            return kExitUsage;
        }
        if (!snap.output.empty() && !snap.calibrate) {
            std::cerr << "-o/--output goes with --calibrate\n";
            return kExitUsage;
        }
        return runSnapshot(snap);
    }
    if (*validate)
        return runValidate(validateFiles);
    if (*importCmd)
        return runImportConfig(importOptions);
    if (*exportConfigCmd)
        return runExportConfig(exportConfig);
    if (*exportCmd) {
        for (const auto &[option, value] : exportValues)
            if (*option)
                *value.first = *value.second;
        return runExport(argv[0], ex);
    }
    return runGui(argv[0], *gui ? gui->remaining() : std::vector<std::string>{});
}
