// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/memory_snapshot.h"

#include <algorithm>
#include <array>

namespace membudget::snapshot {

using pickle::Document;
using pickle::Kind;
using pickle::Value;

const char *traceActionName(TraceAction action)
{
    switch (action) {
    case TraceAction::Alloc:
        return "alloc";
    case TraceAction::FreeRequested:
        return "free_requested";
    case TraceAction::FreeCompleted:
        return "free_completed";
    case TraceAction::SegmentAlloc:
        return "segment_alloc";
    case TraceAction::SegmentFree:
        return "segment_free";
    case TraceAction::SegmentMap:
        return "segment_map";
    case TraceAction::SegmentUnmap:
        return "segment_unmap";
    case TraceAction::Oom:
        return "oom";
    case TraceAction::Snapshot:
        return "snapshot";
    }
    return "?";
}

namespace {

// Sum of `bytes(item)` over `items` for which `pick(item)`, saturating.
template<typename Items, typename Pick, typename Size>
Bytes sumOf(const Items &items, Pick pick, Size bytes)
{
    Bytes sum = 0;
    for (const auto &item : items)
        if (pick(item))
            sum = addSat(sum, bytes(item));
    return sum;
}

bool isLive(const Block &b)
{
    return b.state == BlockState::ActiveAllocated;
}

} // namespace

Bytes Segment::requestedBytes() const
{
    return sumOf(blocks, isLive, [](const Block &b) { return b.requested_size; });
}

Bytes Segment::allocatedBytes() const
{
    return sumOf(blocks, isLive, [](const Block &b) { return b.size; });
}

std::size_t MemorySnapshot::eventCount() const
{
    std::size_t n = 0;
    for (const DeviceTrace &t : device_traces)
        n += t.events.size();
    return n;
}

const std::vector<TraceEvent> &MemorySnapshot::traceOf(int device) const
{
    static const std::vector<TraceEvent> kNone;
    for (const DeviceTrace &t : device_traces)
        if (t.device == device)
            return t.events;
    return kNone;
}

int MemorySnapshot::busiestDevice() const
{
    int best = -1;
    std::size_t most = 0;
    for (const DeviceTrace &t : device_traces)
        if (t.events.size() > most) {
            most = t.events.size();
            best = t.device;
        }
    return best;
}

Bytes MemorySnapshot::reservedAtSnapshot(int device) const
{
    return sumOf(
        segments,
        [&](const Segment &s) { return s.device == device; },
        [](const Segment &s) { return s.total_size; });
}

Bytes MemorySnapshot::allocatedAtSnapshot(int device) const
{
    return sumOf(
        segments,
        [&](const Segment &s) { return s.device == device; },
        [](const Segment &s) { return s.allocatedBytes(); });
}

Bytes MemorySnapshot::requestedAtSnapshot(int device) const
{
    return sumOf(
        segments,
        [&](const Segment &s) { return s.device == device; },
        [](const Segment &s) { return s.requestedBytes(); });
}

namespace {

constexpr std::size_t kMaxSettingsValues = 10000;
constexpr int kMaxSettingsDepth = 8;

// Turns the pickle's plain data into the typed snapshot. Every dict that stands for a segment,
// block or trace event must be its own object (a pickle can refer to one dict many times through
// its memo; real snapshots never do for these, and refusing it keeps the work linear in the file).
// Frames and stacks may be shared, and are converted once.
class Converter
{
public:
    Converter(const Document &doc, MemorySnapshot &out)
        : m_doc(doc)
        , m_out(out)
        , m_tags(doc.containerCount(), 0)
    {}

    bool run();
    LoadError error;

private:
    enum Role : std::uint32_t { Entry = 1u << 30, FrameRole = 2u << 30, StackRole = 3u << 30 };
    static constexpr std::uint32_t kIdMask = (1u << 30) - 1;

    const Document &m_doc;
    MemorySnapshot &m_out;
    std::vector<std::uint32_t> m_tags; // per container: its role and converted id
    std::vector<FrameId> m_scratch;
    std::string m_where; // "segment 3, block 2: "

    bool fail(Value at, const std::string &message)
    {
        error.offset = static_cast<std::int64_t>(m_doc.offsetOf(at));
        error.message = m_where + message;
        return false;
    }
    bool wrongKind(Value at, std::string_view key, Value got, const char *want)
    {
        return fail(at,
                    "'" + std::string(key) + "' must be " + want + ", not "
                        + pickle::kindName(got.kind()));
    }

    // Fields of a dict, by key: the last value of each wanted key (as Python keeps it).
    template<std::size_t N>
    void fields(Value dict,
                const std::array<std::string_view, N> &keys,
                std::array<std::optional<Value>, N> &out)
    {
        const auto all = m_doc.items(dict);
        for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
            const auto k = m_doc.string(all[i]);
            if (!k)
                continue;
            for (std::size_t j = 0; j < N; ++j)
                if (*k == keys[j]) {
                    out[j] = all[i + 1];
                    break;
                }
        }
    }
    bool claim(Value dict, const char *what);
    bool integer(Value dict,
                 std::string_view key,
                 std::optional<Value> v,
                 std::int64_t &out,
                 bool required,
                 bool nonNegative);
    bool text(Value dict, std::string_view key, std::optional<Value> v, std::string_view &out);
    bool list(Value dict, std::string_view key, std::optional<Value> v, std::span<const Value> &out);

    bool readSegments(Value root);
    bool readSegment(Value dict, Segment &seg);
    bool readBlock(
        Value dict, const Segment &seg, std::int64_t layoutAddress, Block &block, bool &laidOut);
    bool readTraces(Value list);
    bool readEvent(Value dict, TraceEvent &event);
    bool readStack(Value holder, std::string_view key, std::optional<Value> v, StackId &out);
    bool readFrame(Value holder, Value dict, FrameId &out);
    bool readSettings(Value dict);
    bool toJson(Value v, int depth, std::size_t &budget, nlohmann::json &out);
};

bool Converter::claim(Value dict, const char *what)
{
    if (dict.kind() != Kind::Dict)
        return fail(dict,
                    std::string("must be a dict, not ") + pickle::kindName(dict.kind()) + " ("
                        + what + ")");
    std::uint32_t &tag = m_tags[*m_doc.containerIndex(dict)];
    if (tag != 0)
        return fail(dict,
                    std::string("the same dict appears twice as a ") + what
                        + "; a memory snapshot never repeats one");
    tag = Entry;
    return true;
}

bool Converter::integer(Value dict,
                        std::string_view key,
                        std::optional<Value> v,
                        std::int64_t &out,
                        bool required,
                        bool nonNegative)
{
    if (!v) {
        if (required)
            return fail(dict, "no '" + std::string(key) + "'");
        return true;
    }
    const auto i = m_doc.integer(*v);
    if (!i)
        return wrongKind(dict, key, *v, "a whole number");
    if (nonNegative && *i < 0)
        return fail(dict, "'" + std::string(key) + "' is negative (" + std::to_string(*i) + ")");
    out = *i;
    return true;
}

bool Converter::text(Value dict, std::string_view key, std::optional<Value> v, std::string_view &out)
{
    if (!v)
        return fail(dict, "no '" + std::string(key) + "'");
    const auto s = m_doc.string(*v);
    if (!s)
        return wrongKind(dict, key, *v, "a string");
    out = *s;
    return true;
}

bool Converter::list(Value dict,
                     std::string_view key,
                     std::optional<Value> v,
                     std::span<const Value> &out)
{
    if (!v)
        return fail(dict, "no '" + std::string(key) + "'");
    if (v->kind() != Kind::List)
        return wrongKind(dict, key, *v, "a list");
    out = m_doc.items(*v);
    return true;
}

bool Converter::run()
{
    const Value root = m_doc.root();
    if (root.kind() == Kind::List)
        return fail(root,
                    "the pickle holds a list, not the dict that torch.cuda.memory._snapshot() "
                    "returns (is it torch.cuda.memory_snapshot()'s list of segments? "
                    "save torch.cuda.memory._snapshot() or use _dump_snapshot)");
    if (root.kind() != Kind::Dict)
        return fail(root,
                    std::string("the pickle holds ") + pickle::kindName(root.kind())
                        + ", not a PyTorch memory snapshot");
    std::array<std::optional<Value>, 4> f;
    fields<4>(root, {"segments", "device_traces", "allocator_settings", "external_annotations"}, f);
    if (!f[0])
        return fail(root,
                    "a dict without 'segments': not a PyTorch memory snapshot "
                    "(torch.cuda.memory._dump_snapshot writes one)");
    if (!readSegments(*f[0]))
        return false;
    m_where.clear();
    if (f[1] && !readTraces(*f[1]))
        return false;
    m_where.clear();
    if (f[2] && f[2]->kind() != Kind::None && !readSettings(*f[2]))
        return false;
    if (f[3] && f[3]->kind() == Kind::List)
        m_out.external_annotations = m_doc.items(*f[3]).size();
    return true;
}

bool Converter::readSegments(Value segments)
{
    if (segments.kind() != Kind::List)
        return wrongKind(m_doc.root(), "segments", segments, "a list");
    const auto all = m_doc.items(segments);
    m_out.segments.reserve(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
        m_where = "segment " + std::to_string(i) + ": ";
        Segment seg;
        if (!readSegment(all[i], seg))
            return false;
        m_out.segments.push_back(std::move(seg));
    }
    return true;
}

bool Converter::readSegment(Value dict, Segment &seg)
{
    if (!claim(dict, "segment"))
        return false;
    std::array<std::optional<Value>, 8> f;
    fields<8>(dict,
              {"device",
               "address",
               "total_size",
               "stream",
               "segment_type",
               "is_expandable",
               "frames",
               "blocks"},
              f);
    std::int64_t device = 0;
    std::string_view type;
    std::span<const Value> blocks;
    if (!integer(dict, "device", f[0], device, false, true)
        || !integer(dict, "address", f[1], seg.address, true, true)
        || !integer(dict, "total_size", f[2], seg.total_size, true, true)
        || !integer(dict, "stream", f[3], seg.stream, false, false)
        || !text(dict, "segment_type", f[4], type) || !list(dict, "blocks", f[7], blocks))
        return false;
    if (device >= kMaxDevices)
        return fail(dict,
                    "'device' " + std::to_string(device) + " is past the "
                        + std::to_string(kMaxDevices) + " devices this reader accepts");
    seg.device = static_cast<int>(device);
    if (type != "large" && type != "small")
        return fail(dict, "'segment_type' must be \"large\" or \"small\"");
    seg.pool = type == "small" ? SegmentPool::Small : SegmentPool::Large;
    if (f[5]) {
        const auto b = m_doc.boolean(*f[5]);
        if (!b)
            return wrongKind(dict, "is_expandable", *f[5], "True or False");
        seg.is_expandable = *b;
    }
    if (!readStack(dict, "frames", f[6], seg.stack))
        return false;
    if (seg.address > INT64_MAX - seg.total_size)
        return fail(dict, "the segment ends past the 64-bit address space");
    const std::string where = m_where;
    std::int64_t next = seg.address; // where the next block starts if laid end to end
    bool laidOut = false;            // a block without an address was placed there
    seg.blocks.reserve(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        m_where = where + "block " + std::to_string(i) + ": ";
        Block block;
        if (!readBlock(blocks[i], seg, next, block, laidOut))
            return false;
        next = addSat(block.address, block.size);
        seg.blocks.push_back(block);
    }
    m_where = where;
    if (laidOut && next != seg.address + seg.total_size)
        return fail(dict,
                    "its blocks add up to " + std::to_string(next - seg.address)
                        + " bytes, not its total_size " + std::to_string(seg.total_size));
    return true;
}

bool Converter::readBlock(
    Value dict, const Segment &seg, std::int64_t layoutAddress, Block &block, bool &laidOut)
{
    if (!claim(dict, "block"))
        return false;
    std::array<std::optional<Value>, 6> f;
    fields<6>(dict, {"address", "size", "requested_size", "state", "frames", "history"}, f);
    std::string_view state;
    if (!integer(dict, "size", f[1], block.size, true, true)
        || !integer(dict, "requested_size", f[2], block.requested_size, false, true)
        || !text(dict, "state", f[3], state))
        return false;
    if (!f[2])
        block.requested_size = block.size;
    if (state == "active_allocated")
        block.state = BlockState::ActiveAllocated;
    else if (state == "active_awaiting_free" || state == "active_pending_free")
        block.state = BlockState::ActivePendingFree;
    else if (state == "inactive")
        block.state = BlockState::Inactive;
    else
        return fail(dict,
                    "unknown block state \"" + std::string(state)
                        + "\" (expected active_allocated, active_awaiting_free or inactive)");
    if (f[0]) {
        if (!integer(dict, "address", f[0], block.address, true, true)
            || !readStack(dict, "frames", f[4], block.stack))
            return false;
    } else {
        // Legacy (torch 2.0): no address, blocks in address order, so each starts where the one
        // before it ends (checked: they must fill the segment exactly). A live block's stack is
        // the last entry of its 'history', whose 'addr' must agree with the layout.
        m_out.layout = SnapshotLayout::Legacy;
        laidOut = true;
        block.address = layoutAddress;
        std::span<const Value> history;
        if (f[5] && !list(dict, "history", f[5], history))
            return false;
        if (!history.empty()) {
            const Value last = history.back();
            if (last.kind() != Kind::Dict)
                return fail(dict, "a 'history' entry must be a dict");
            std::array<std::optional<Value>, 2> h;
            fields<2>(last, {"addr", "frames"}, h);
            std::int64_t addr = 0;
            if (!integer(last, "addr", h[0], addr, true, true)
                || !readStack(last, "frames", h[1], block.stack))
                return false;
            if (addr != layoutAddress)
                return fail(dict,
                            "its history says address " + std::to_string(addr)
                                + " but the blocks before it end at "
                                + std::to_string(layoutAddress));
        }
    }
    const bool inside = block.address >= seg.address
                        && block.address - seg.address <= seg.total_size
                        && block.size <= seg.total_size - (block.address - seg.address);
    if (!inside && !seg.is_expandable)
        return fail(dict,
                    "the block (" + std::to_string(block.size) + " bytes at "
                        + std::to_string(block.address) + ") lies outside its segment");
    return true;
}

bool Converter::readTraces(Value traces)
{
    if (traces.kind() != Kind::List)
        return wrongKind(m_doc.root(), "device_traces", traces, "a list");
    const auto devices = m_doc.items(traces);
    if (devices.size() > static_cast<std::size_t>(kMaxDevices))
        return fail(traces,
                    "traces of " + std::to_string(devices.size()) + " devices; this reader accepts "
                        + std::to_string(kMaxDevices));
    m_out.device_traces.resize(devices.size());
    for (std::size_t d = 0; d < devices.size(); ++d) {
        DeviceTrace &trace = m_out.device_traces[d];
        trace.device = static_cast<int>(d);
        m_where = "trace of device " + std::to_string(d) + ": ";
        if (devices[d].kind() != Kind::List)
            return fail(traces,
                        "must be a list, not " + std::string(pickle::kindName(devices[d].kind())));
        const auto events = m_doc.items(devices[d]);
        trace.events.resize(events.size());
        for (std::size_t i = 0; i < events.size(); ++i) {
            m_where = "trace event " + std::to_string(i) + " of device " + std::to_string(d) + ": ";
            if (!readEvent(events[i], trace.events[i]))
                return false;
        }
    }
    return true;
}

bool Converter::readEvent(Value dict, TraceEvent &event)
{
    if (!claim(dict, "trace event"))
        return false;
    std::array<std::optional<Value>, 7> f;
    fields<7>(dict, {"action", "addr", "size", "stream", "time_us", "frames", "device_free"}, f);
    static constexpr std::array<std::string_view, 9> kActions{"alloc",
                                                              "free_requested",
                                                              "free_completed",
                                                              "segment_alloc",
                                                              "segment_free",
                                                              "segment_map",
                                                              "segment_unmap",
                                                              "oom",
                                                              "snapshot"};
    std::string_view action;
    if (!text(dict, "action", f[0], action))
        return false;
    const auto known = std::find(kActions.begin(), kActions.end(), action);
    if (known == kActions.end())
        return fail(dict,
                    "unknown action \"" + std::string(action)
                        + "\"; this reader knows alloc, free_requested, free_completed, "
                          "segment_alloc, segment_free, segment_map, segment_unmap, oom "
                          "and snapshot");
    event.action = static_cast<TraceAction>(known - kActions.begin());
    const bool changesMemory = event.action != TraceAction::Oom
                               && event.action != TraceAction::Snapshot;
    std::int64_t time = 0;
    if (!integer(dict, "addr", f[1], event.address, changesMemory, true)
        || !integer(dict,
                    "size",
                    f[2],
                    event.size,
                    changesMemory || event.action == TraceAction::Oom,
                    true)
        || !integer(dict, "stream", f[3], event.stream, false, false)
        || !integer(dict, "time_us", f[4], time, false, false)
        || !integer(dict, "device_free", f[6], event.device_free, false, true)
        || !readStack(dict, "frames", f[5], event.stack))
        return false;
    if (f[4])
        event.time_us = time;
    return true;
}

bool Converter::readStack(Value holder, std::string_view key, std::optional<Value> v, StackId &out)
{
    out = kEmptyStack;
    if (!v || v->kind() == Kind::None)
        return true;
    if (v->kind() != Kind::List)
        return wrongKind(holder, key, *v, "a list of frames");
    std::uint32_t &tag = m_tags[*m_doc.containerIndex(*v)];
    if ((tag & ~kIdMask) == StackRole) {
        out = tag & kIdMask;
        return true;
    }
    if (tag != 0)
        return fail(holder, "'" + std::string(key) + "' is a list used as something else too");
    const auto frames = m_doc.items(*v);
    std::vector<FrameId> ids;
    ids.reserve(frames.size());
    for (const Value frame : frames) {
        FrameId id = 0;
        if (!readFrame(*v, frame, id))
            return false;
        ids.push_back(id);
    }
    out = m_out.frames.internStack(ids);
    if (out > kIdMask)
        return fail(holder, "more distinct call stacks than this reader holds");
    tag = StackRole | out;
    return true;
}

bool Converter::readFrame(Value holder, Value dict, FrameId &out)
{
    if (dict.kind() != Kind::Dict)
        return fail(holder,
                    std::string("a frame must be a dict, not ") + pickle::kindName(dict.kind()));
    std::uint32_t &tag = m_tags[*m_doc.containerIndex(dict)];
    if ((tag & ~kIdMask) == FrameRole) {
        out = tag & kIdMask;
        return true;
    }
    if (tag != 0)
        return fail(dict, "a frame dict used as something else too");
    std::array<std::optional<Value>, 3> f;
    fields<3>(dict, {"filename", "line", "name"}, f);
    std::string_view file, name;
    std::int64_t line = 0;
    if (!text(dict, "filename", f[0], file) || !integer(dict, "line", f[1], line, true, false)
        || !text(dict, "name", f[2], name))
        return false;
    out = m_out.frames.internFrame(file, line, name);
    if (out > kIdMask)
        return fail(dict, "more distinct frames than this reader holds");
    tag = FrameRole | out;
    return true;
}

bool Converter::readSettings(Value dict)
{
    m_where = "allocator_settings: ";
    if (dict.kind() != Kind::Dict)
        return wrongKind(m_doc.root(), "allocator_settings", dict, "a dict");
    RecordedAllocatorSettings s;
    std::size_t budget = kMaxSettingsValues;
    if (!toJson(dict, 0, budget, s.raw))
        return false;
    std::array<std::optional<Value>, 5> f;
    fields<5>(dict,
              {"PYTORCH_CUDA_ALLOC_CONF",
               "max_split_size",
               "garbage_collection_threshold",
               "expandable_segments",
               "roundup_power2_divisions"},
              f);
    if (f[0] && f[0]->kind() != Kind::None) {
        std::string_view conf;
        if (!text(dict, "PYTORCH_CUDA_ALLOC_CONF", f[0], conf))
            return false;
        s.alloc_conf = std::string(conf);
    }
    if (!integer(dict, "max_split_size", f[1], s.max_split_size, false, false))
        return false;
    if (f[2]) {
        const auto n = m_doc.number(*f[2]);
        if (!n)
            return wrongKind(dict, "garbage_collection_threshold", *f[2], "a number");
        s.garbage_collection_threshold = *n;
    }
    if (f[3]) {
        const auto b = m_doc.boolean(*f[3]);
        if (!b)
            return wrongKind(dict, "expandable_segments", *f[3], "True or False");
        s.expandable_segments = *b;
    }
    if (f[4] && f[4]->kind() == Kind::Dict) {
        // {"1": divisions, "2": ..., "32768": ...}: sizes in MiB as keys
        // (torch/csrc/cuda/memory_snapshot.cpp writes the roundup_power2_divisions setting so).
        const auto all = m_doc.items(*f[4]);
        for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
            std::int64_t size = 0;
            if (const auto k = m_doc.string(all[i])) {
                const std::string key(*k);
                if (key.empty() || key.size() > 18
                    || key.find_first_not_of("0123456789") != std::string::npos)
                    return fail(*f[4],
                                "roundup_power2_divisions: key \"" + key
                                    + "\" is not a size in MiB");
                size = std::stoll(key);
            } else if (const auto n = m_doc.integer(all[i])) {
                size = *n;
            }
            const auto divisions = m_doc.integer(all[i + 1]);
            if (!divisions)
                return wrongKind(*f[4], "roundup_power2_divisions", all[i + 1], "whole numbers");
            s.roundup_power2_divisions.emplace_back(size, *divisions);
        }
    }
    m_out.allocator_settings = std::move(s);
    return true;
}

// Plain data to JSON for display, at most kMaxSettingsDepth deep and kMaxSettingsValues values.
bool Converter::toJson(Value v, int depth, std::size_t &budget, nlohmann::json &out)
{
    if (budget == 0)
        return fail(m_doc.root(), "more than " + std::to_string(kMaxSettingsValues) + " values");
    --budget;
    if (depth > kMaxSettingsDepth)
        return fail(v, "nested deeper than " + std::to_string(kMaxSettingsDepth) + " levels");
    switch (v.kind()) {
    case Kind::None:
        out = nullptr;
        return true;
    case Kind::Bool:
        out = *m_doc.boolean(v);
        return true;
    case Kind::Int:
        out = *m_doc.integer(v);
        return true;
    case Kind::Float:
        out = *m_doc.number(v);
        return true;
    case Kind::String:
        out = std::string(*m_doc.string(v));
        return true;
    case Kind::List:
    case Kind::Tuple:
        out = nlohmann::json::array();
        for (const Value item : m_doc.items(v)) {
            nlohmann::json j;
            if (!toJson(item, depth + 1, budget, j))
                return false;
            out.push_back(std::move(j));
        }
        return true;
    case Kind::Dict: {
        out = nlohmann::json::object();
        const auto all = m_doc.items(v);
        for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
            std::string key;
            if (const auto s = m_doc.string(all[i]))
                key = std::string(*s);
            else if (const auto n = m_doc.integer(all[i]))
                key = std::to_string(*n);
            nlohmann::json j;
            if (!toJson(all[i + 1], depth + 1, budget, j))
                return false;
            out[key] = std::move(j);
        }
        return true;
    }
    }
    return true;
}

} // namespace

std::optional<MemorySnapshot> readMemorySnapshot(std::string bytes,
                                                 const std::string &fileName,
                                                 LoadError &error,
                                                 const pickle::Limits &limits)
{
    error = LoadError{};
    error.file = fileName;
    pickle::ReadError readError;
    const auto doc = Document::parse(std::move(bytes), readError, limits);
    if (!doc) {
        error.offset = static_cast<std::int64_t>(readError.offset);
        error.message = readError.message;
        return std::nullopt;
    }
    MemorySnapshot snapshot;
    Converter converter(*doc, snapshot);
    if (!converter.run()) {
        error.offset = converter.error.offset;
        error.message = converter.error.message;
        return std::nullopt;
    }
    return snapshot;
}

} // namespace membudget::snapshot
