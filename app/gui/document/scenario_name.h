// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The name a scenario goes by when nobody named it, made from its settings, and the file name that
// goes with a name.

#include "io/preset_catalog.h"
#include "model/scenario.h"

#include <QString>

namespace membudget {

// "Llama 3.1 8B LoRA r16, bf16, 4 × 4,096 tokens" (model, method, precision, batch and sequence,
// GPUs when several): what the settings are, so it never goes stale.
QString derivedScenarioName(const Scenario &scenario, const PresetCatalog &catalog);

// "llama-3.1-8b-lora-r16-bf16-4x4096-tokens": lower case, dashes, whole words of `name` up to about
// `maxLength` characters (never cut inside a word); "scenario" when nothing is left.
QString fileNameFor(const QString &name, int maxLength = 48);

// The settings of two scenarios are the same: model, training, parallelism and overheads (name,
// description, claims and the GPUs compared against aside).
bool sameSettings(const Scenario &a, const Scenario &b);

} // namespace membudget
