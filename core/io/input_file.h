// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Files a user hands to MemBudget (scenarios, preset files, Hugging Face config.json) are untrusted:
// they are read only from the path the user chose, never executed, never followed to other files,
// and checked before any parser sees them.

#include "io/load_error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace membudget {

class PresetCatalog;

// Scenarios, preset files and config.json files are a few kilobytes; anything past this is refused
// before it is read.
inline constexpr std::size_t kMaxInputFileBytes = 1024 * 1024;

// Checks that `path` is a regular file (never a FIFO or device, which could block) and gives its
// size; false with `error` set ("no such file", "permission denied", a symbolic link loop, "a
// folder, not a <what> file", "not a regular file") otherwise. Nothing is read.
bool regularFileSize(const std::string &path,
                     const char *what,
                     std::uintmax_t &size,
                     LoadError &error);

// Reads `path` into `text`: it must be a regular file (never a FIFO or device, which could block)
// of at most kMaxInputFileBytes, and at most that many bytes plus one are read even if the file
// grows meanwhile. `what` names the kind of file in messages ("scenario", "config.json"). Returns
// false with `error` set otherwise, saying what the system said: "no such file", "permission
// denied", a symbolic link loop, a name too long, "cannot read the file: Input/output error" (a
// failing disk, /proc/self/mem). Never throws. Whether the bytes are text is checked once, by the
// parser they go to (parseScenario, PresetCatalog::addFile and importHfConfig all start with
// checkInputText), so that text from memory gets the same check.
bool readInputFile(const std::string &path, const char *what, std::string &text, LoadError &error);

// Text files only: no NUL bytes or other binary control characters, valid UTF-8 (a leading BOM is
// fine). On failure `error` gets the 1-based line and column of the first offending byte.
bool checkInputText(const std::string &text, const std::string &fileName, LoadError &error);

// Line and column (1-based, columns counted in bytes) of byte `offset` in `text`; LF, CR LF and a
// lone CR each end a line.
void positionOf(const std::string &text, std::size_t offset, int &line, int &column);

enum class InputFileKind { Scenario, Presets, HfConfig };

// A .json file is a Hugging Face config; a YAML file whose top-level `format:` key says
// membudget-presets/... is a preset file; anything else is read as a scenario (whose loader
// explains what is wrong). Nothing else in the file (a name that mentions a format) decides.
InputFileKind guessInputFileKind(const std::string &path, const std::string &text);
const char *inputFileKindName(InputFileKind kind);

// Loads `path` the way the app would use it and reports the first problem: a scenario is parsed
// and resolved against `catalog`; a preset file is added to a copy of it; a config.json is imported.
bool checkInputFile(const std::string &path,
                    const PresetCatalog &catalog,
                    LoadError &error,
                    InputFileKind *kind = nullptr);

} // namespace membudget
