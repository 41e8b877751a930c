// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/input_file.h"

#include "base/byte_format.h"
#include "base/utf8.h"
#include "io/hf_config_import.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "io/yaml_reader.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
    // Line breaks as YAML and JSON count them: LF, CR LF, or a lone CR (old Mac files).
    line = 1;
    column = 1;
    const std::size_t end = std::min(offset, text.size());
    for (std::size_t i = 0; i < end; ++i) {
        const bool lineFeed = text[i] == '\n';
        const bool loneCr = text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n');
        if (lineFeed || loneCr) {
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

namespace {

// What open(2) failing means to a user; "no such file" only when there is none.
std::string openProblem(int err)
{
    switch (err) {
    case ENOENT:
        return "no such file";
    case ENOTDIR:
        return "no such file (a part of the path is not a folder)";
    case EACCES:
    case EPERM:
        return "permission denied";
    case ELOOP:
        return "too many levels of symbolic links (a symbolic link loop?)";
    case ENAMETOOLONG:
        return "the file name is too long";
    default:
        return "cannot open the file: " + std::generic_category().message(err);
    }
}

std::string tooLarge(std::uint64_t size, const char *what)
{
    return "the file is larger than 1 MiB (" + formatCount(static_cast<double>(size))
           + " bytes); a " + what + " file is a few kilobytes";
}

bool kindProblem(const struct stat &st, const char *what, LoadError &error)
{
    if (S_ISREG(st.st_mode))
        return false;
    error.message = S_ISDIR(st.st_mode) ? "a folder, not a " + std::string(what) + " file"
                                        : "not a regular file";
    return true;
}

class FileDescriptor
{
public:
    explicit FileDescriptor(int fd)
        : m_fd(fd)
    {}
    ~FileDescriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor &) = delete;
    FileDescriptor &operator=(const FileDescriptor &) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

} // namespace

bool regularFileSize(const std::string &path,
                     const char *what,
                     std::uintmax_t &size,
                     LoadError &error)
{
    error = LoadError{};
    error.file = path;
    struct stat st = {};
    if (::stat(path.c_str(), &st) != 0) {
        error.message = openProblem(errno);
        return false;
    }
    if (kindProblem(st, what, error))
        return false;
    size = static_cast<std::uintmax_t>(st.st_size);
    return true;
}

bool readInputFile(const std::string &path, const char *what, std::string &text, LoadError &error)
{
    error = LoadError{};
    error.file = path;
    text.clear();
    // Look before opening: a FIFO would block and some devices act on open(2).
    struct stat st = {};
    if (::stat(path.c_str(), &st) != 0) {
        error.message = openProblem(errno);
        return false;
    }
    if (kindProblem(st, what, error))
        return false;
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
        error.message = openProblem(errno);
        return false;
    }
    // The file may have been swapped since stat(): check what was opened.
    if (::fstat(fd.get(), &st) != 0) {
        error.message = "cannot read the file: " + std::generic_category().message(errno);
        return false;
    }
    if (kindProblem(st, what, error))
        return false;
    if (static_cast<std::uint64_t>(st.st_size) > kMaxInputFileBytes) {
        error.line = error.column = 1;
        error.message = tooLarge(static_cast<std::uint64_t>(st.st_size), what);
        return false;
    }
    // Read at most one byte past the limit: the file may have grown since it was measured.
    text.resize(kMaxInputFileBytes + 1);
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            // EIO from a failing disk or share, or /proc/self/mem: a message, never an abort.
            const int err = errno;
            text.clear();
            error.message = "cannot read the file: " + std::generic_category().message(err);
            return false;
        }
        if (n == 0)
            break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    if (text.size() > kMaxInputFileBytes) {
        text.clear();
        error.line = error.column = 1;
        error.message = std::string("the file grew past 1 MiB while it was read; a ") + what
                        + " file is a few kilobytes";
        return false;
    }
    return true; // the parser each caller hands the text to checks it (checkInputText) first
}

namespace {

// The value of the top-level `format:` key. In block style a top-level key starts a line at
// column 0, so the lines are scanned (a 1 MiB file is not parsed twice); a document written as one
// flow mapping ({format: ..., gpus: [...]}) is parsed. Empty when there is none.
std::string topLevelFormat(const std::string &path, const std::string &text)
{
    std::size_t lineStart = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    bool sawContent = false;
    while (lineStart < text.size()) {
        std::size_t lineEnd = text.find_first_of("\r\n", lineStart);
        if (lineEnd == std::string::npos)
            lineEnd = text.size();
        std::string_view line(text.data() + lineStart, lineEnd - lineStart);
        lineStart = lineEnd + 1;
        for (const std::string_view key : {"format", "\"format\"", "'format'"}) {
            if (line.substr(0, key.size()) != key)
                continue;
            std::string_view rest = line.substr(key.size());
            rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
            if (rest.empty() || rest[0] != ':')
                continue;
            rest.remove_prefix(1);
            if (const std::size_t hash = rest.find(" #"); hash != std::string_view::npos)
                rest = rest.substr(0, hash);
            const std::size_t first = rest.find_first_not_of(" \t");
            const std::size_t last = rest.find_last_not_of(" \t");
            if (first == std::string_view::npos)
                return {};
            rest = rest.substr(first, last - first + 1);
            if (rest.size() >= 2 && (rest.front() == '"' || rest.front() == '\'')
                && rest.back() == rest.front())
                rest = rest.substr(1, rest.size() - 2);
            return std::string(rest);
        }
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string_view::npos || line[first] == '#' || line.substr(0, 3) == "---"
            || line[0] == '%')
            continue;
        if (!sawContent && line[first] == '{')
            break; // a flow mapping: parse it
        sawContent = true;
    }
    if (!sawContent) {
        try {
            LoadError ignored;
            YamlReader reader(path, ignored);
            YAML::Node root;
            if (reader.parse(text, root) && root.IsMap()) {
                const YAML::Node &map = root;
                if (const YAML::Node format = map["format"]; format.IsScalar())
                    return format.Scalar();
            }
        } catch (const std::exception &) {
        }
    }
    return {};
}

} // namespace

InputFileKind guessInputFileKind(const std::string &path, const std::string &text)
{
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json" || ext == ".JSON")
        return InputFileKind::HfConfig;
    // Only the top-level format key decides (a name that mentions the preset format does not); a
    // file without one is a scenario, whose loader then explains what is wrong.
    return topLevelFormat(path, text).rfind("membudget-presets/", 0) == 0 ? InputFileKind::Presets
                                                                          : InputFileKind::Scenario;
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
