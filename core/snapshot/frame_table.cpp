// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/frame_table.h"

#include <algorithm>

namespace membudget::snapshot {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
    // 64-bit FNV-1a over whole words, then a final avalanche (splitmix64's finaliser).
    h = (h ^ v) * 0x100000001b3ull;
    return h;
}

std::uint64_t avalanche(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t hashFrames(std::span<const FrameId> frames)
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (FrameId f : frames)
        h = mix(h, f);
    return avalanche(mix(h, frames.size()));
}

} // namespace

std::size_t FrameTable::FrameKeyHash::operator()(const FrameKey &k) const
{
    return static_cast<std::size_t>(avalanche(
        mix(mix(mix(0xcbf29ce484222325ull, k.file), k.name), static_cast<std::uint64_t>(k.line))));
}

FrameTable::FrameTable()
{
    internText("");  // text 0
    internStack({}); // stack 0: kEmptyStack
}

std::span<const FrameId> FrameTable::stack(StackId id) const
{
    return std::span<const FrameId>(m_stackFrames).subspan(m_stackStart[id], m_stackSize[id]);
}

TextId FrameTable::internText(std::string_view text)
{
    if (const auto it = m_textIds.find(text); it != m_textIds.end())
        return it->second;
    const auto id = static_cast<TextId>(m_texts.size());
    m_texts.emplace_back(text);
    m_textIds.emplace(std::string(text), id);
    return id;
}

FrameId FrameTable::internFrame(std::string_view file, std::int64_t line, std::string_view name)
{
    const FrameKey key{internText(file), internText(name), line};
    if (const auto it = m_frameIds.find(key); it != m_frameIds.end())
        return it->second;
    const auto id = static_cast<FrameId>(m_frames.size());
    m_frames.push_back({key.file, key.name, line});
    m_frameIsUser.push_back(isPythonFile(file) && !isTorchInternal(file));
    m_frameIds.emplace(key, id);
    return id;
}

StackId FrameTable::internStack(std::span<const FrameId> frames)
{
    const std::uint64_t h = hashFrames(frames);
    auto &candidates = m_stackIds[h];
    for (StackId s : candidates) {
        const auto existing = stack(s);
        if (std::equal(existing.begin(), existing.end(), frames.begin(), frames.end()))
            return s;
    }
    const auto id = static_cast<StackId>(m_stackStart.size());
    m_stackStart.push_back(static_cast<std::uint32_t>(m_stackFrames.size()));
    m_stackSize.push_back(static_cast<std::uint32_t>(frames.size()));
    m_stackFrames.insert(m_stackFrames.end(), frames.begin(), frames.end());
    const auto user = std::find_if(frames.begin(), frames.end(), [&](FrameId f) {
        return m_frameIsUser[f];
    });
    m_stackTopUser.push_back(user == frames.end() ? 0 : *user + 1);
    candidates.push_back(id);
    return id;
}

std::optional<FrameId> FrameTable::topUserFrame(StackId stack) const
{
    const std::uint32_t top = m_stackTopUser[stack];
    if (top == 0)
        return std::nullopt;
    return top - 1;
}

bool FrameTable::isPythonFile(std::string_view file)
{
    if (file.size() >= 3 && file.substr(file.size() - 3) == ".py")
        return true;
    // Python's pseudo-files: code from exec(), torch.fx's generated modules, frozen modules.
    return file.size() >= 2 && file.front() == '<' && file.substr(0, 7) != "<frozen";
}

bool FrameTable::isTorchInternal(std::string_view file)
{
    // A folder named "torch" anywhere in the path, with either separator (snapshots from Windows
    // keep backslashes): site-packages/torch/..., a source checkout's pytorch/torch/...
    std::size_t start = 0;
    while (start <= file.size()) {
        std::size_t end = file.find_first_of("/\\", start);
        if (end == std::string_view::npos)
            return false; // the last component is the file itself
        if (file.substr(start, end - start) == "torch")
            return true;
        start = end + 1;
    }
    return false;
}

} // namespace membudget::snapshot
