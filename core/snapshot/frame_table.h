// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Call stacks of a memory snapshot, interned: every distinct text, frame (file, line, function)
// and stack is stored once and referred to by a 32-bit id. A trace of a million allocations with
// 40-frame stacks repeats a few thousand distinct frames, so events carry one StackId each.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace membudget::snapshot {

using TextId = std::uint32_t;
using FrameId = std::uint32_t;
using StackId = std::uint32_t;

inline constexpr StackId kEmptyStack = 0; // no frames recorded

struct Frame
{
    TextId file = 0; // as recorded: an absolute path, "??" or "" for C++ frames without one
    TextId name = 0; // function
    std::int64_t line = 0;
};

class FrameTable
{
public:
    FrameTable();

    std::string_view text(TextId id) const { return m_texts[id]; }
    const Frame &frame(FrameId id) const { return m_frames[id]; }
    // Innermost frame first, as PyTorch records them.
    std::span<const FrameId> stack(StackId id) const;
    std::size_t frameCount() const { return m_frames.size(); }
    std::size_t stackCount() const { return m_stackStart.size(); }

    TextId internText(std::string_view text);
    FrameId internFrame(std::string_view file, std::int64_t line, std::string_view name);
    StackId internStack(std::span<const FrameId> frames);

    // The first frame of `stack` that is Python code outside the torch package: where the user's
    // program asked for the memory. Python frames are those whose file ends in ".py" or is a
    // Python pseudo-file ("<string>", "<eval_with_key>.3"); frames in a folder named "torch"
    // (site-packages/torch/nn/modules/module.py...) and "<frozen ...>" modules are skipped.
    std::optional<FrameId> topUserFrame(StackId stack) const;
    static bool isPythonFile(std::string_view file);
    static bool isTorchInternal(std::string_view file);

private:
    struct TextHash
    {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const
        {
            return std::hash<std::string_view>{}(s);
        }
    };
    struct FrameKey
    {
        TextId file;
        TextId name;
        std::int64_t line;
        bool operator==(const FrameKey &) const = default;
    };
    struct FrameKeyHash
    {
        std::size_t operator()(const FrameKey &k) const;
    };

    std::vector<std::string> m_texts;
    std::unordered_map<std::string, TextId, TextHash, std::equal_to<>> m_textIds;
    std::vector<Frame> m_frames;
    std::vector<bool> m_frameIsUser; // Python, outside torch
    std::unordered_map<FrameKey, FrameId, FrameKeyHash> m_frameIds;
    std::vector<FrameId> m_stackFrames;      // all stacks, concatenated
    std::vector<std::uint32_t> m_stackStart; // per stack: where its frames start in m_stackFrames
    std::vector<std::uint32_t> m_stackSize;
    std::vector<std::uint32_t> m_stackTopUser; // per stack: its top user frame + 1, or 0
    std::unordered_map<std::uint64_t, std::vector<StackId>> m_stackIds; // by hash of the frames
};

} // namespace membudget::snapshot
