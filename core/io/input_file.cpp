// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/input_file.h"

#include "base/utf8.h"
#include "io/hf_config_import.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace membudget {

namespace {

std::string hexByte(unsigned char c)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", c);
    return buf;
}

} // namespace

void positionOf(const std::string &text, std::size_t offset, int &line, int &column)
{
    line = 1;
    column = 1;
    const std::size_t end = std::min(offset, text.size());
    for (std::size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
}

bool checkInputText(const std::string &text, const std::string &fileName, LoadError &error)
{
    std::size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    while (i < text.size()) {
        char32_t cp = 0;
        const std::size_t n = utf8SequenceLength(text, i, cp);
        std::string problem;
        if (n == 0)
            problem = "not valid UTF-8 text (byte " + hexByte(static_cast<unsigned char>(text[i]))
                      + ")";
        else if (cp == 0)
            problem = "a binary file, not text (NUL byte)";
        else if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7F
                 || (cp >= 0x80 && cp <= 0x9F && cp != 0x85))
            problem = "a binary file, not text (control character U+00"
                      + hexByte(static_cast<unsigned char>(cp)).substr(2) + ")";
        if (!problem.empty()) {
            error.file = fileName;
            positionOf(text, i, error.line, error.column);
            error.message = problem;
            return false;
        }
        i += n;
    }
    return true;
}

bool regularFileSize(const std::string &path,
                     const char *what,
                     std::uintmax_t &size,
                     LoadError &error)
{
    namespace fs = std::filesystem;
    error = LoadError{};
    error.file = path;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) {
        error.message = "no such file";
        return false;
    }
    if (!fs::is_regular_file(status)) {
        error.message = fs::is_directory(status) ? "a folder, not a " + std::string(what) + " file"
                                                 : "not a regular file";
        return false;
    }
    size = fs::file_size(path, ec);
    if (ec) {
        error.message = "cannot read the file: " + ec.message();
        return false;
    }
    return true;
}

bool readInputFile(const std::string &path, const char *what, std::string &text, LoadError &error)
{
    std::uintmax_t size = 0;
    if (!regularFileSize(path, what, size, error))
        return false;
    if (size > kMaxInputFileBytes) {
        error.line = 1;
        error.column = 1;
        error.message = "the file is " + std::to_string(size / (1024 * 1024)) + " MiB; a " + what
                        + " file is a few kilobytes (at most 1 MiB is read)";
        return false;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error.message = "cannot open the file";
        return false;
    }
    // Read at most one byte past the limit: the file may have grown since it was measured.
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) {
        error.message = "cannot read the file";
        return false;
    }
    if (text.size() > kMaxInputFileBytes) {
        text.clear();
        error.line = 1;
        error.column = 1;
        error.message = std::string("the file grew past 1 MiB while it was read; a ") + what
                        + " file is a few kilobytes";
        return false;
    }
    return true; // the parser each caller hands the text to checks it (checkInputText) first
}

InputFileKind guessInputFileKind(const std::string &path, const std::string &text)
{
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json" || ext == ".JSON")
        return InputFileKind::HfConfig;
    // The format line of a preset file; a scenario says membudget/1.
    const std::size_t at = text.find("membudget-presets/");
    if (at != std::string::npos) {
        const std::size_t lineStart = text.rfind('\n', at);
        const std::string lead
            = text.substr(lineStart == std::string::npos ? 0 : lineStart + 1,
                          at - (lineStart == std::string::npos ? 0 : lineStart + 1));
        if (lead.find("format") != std::string::npos && lead.find('#') == std::string::npos)
            return InputFileKind::Presets;
    }
    return InputFileKind::Scenario;
}

const char *inputFileKindName(InputFileKind kind)
{
    switch (kind) {
    case InputFileKind::Scenario:
        return "scenario";
    case InputFileKind::Presets:
        return "preset";
    case InputFileKind::HfConfig:
        return "config.json";
    }
    return "input";
}

bool checkInputFile(const std::string &path,
                    const PresetCatalog &catalog,
                    LoadError &error,
                    InputFileKind *kind)
{
    std::string text;
    // Peek at the name first so the size message names the right kind of file.
    const bool isJson = std::filesystem::path(path).extension() == ".json";
    if (!readInputFile(path, isJson ? "config.json" : "scenario or preset", text, error))
        return false;
    const InputFileKind k = guessInputFileKind(path, text);
    if (kind)
        *kind = k;
    switch (k) {
    case InputFileKind::HfConfig:
        return importHfConfig(text, path, error).has_value();
    case InputFileKind::Presets: {
        PresetCatalog copy = catalog;
        return copy.addFile(path, text, error);
    }
    case InputFileKind::Scenario:
        return parseScenario(text, path, error, &catalog).has_value();
    }
    return false;
}

} // namespace membudget
