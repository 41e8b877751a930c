// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/pickle_reader.h"

#include "base/byte_format.h"
#include "base/utf8.h"
#include "snapshot/pickle_opcodes.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>

namespace membudget::pickle {

const char *kindName(Kind kind)
{
    switch (kind) {
    case Kind::None:
        return "None";
    case Kind::Bool:
        return "a boolean";
    case Kind::Int:
        return "a whole number";
    case Kind::Float:
        return "a decimal number";
    case Kind::String:
        return "a string";
    case Kind::List:
        return "a list";
    case Kind::Tuple:
        return "a tuple";
    case Kind::Dict:
        return "a dict";
    }
    return "a value";
}

Kind Value::kind() const
{
    switch (tag()) {
    case Special:
        return payload() == 0 ? Kind::None : Kind::Bool;
    case SmallInt:
    case BigInt:
        return Kind::Int;
    case Float:
        return Kind::Float;
    case String:
        return Kind::String;
    case List:
        return Kind::List;
    case Tuple:
        return Kind::Tuple;
    case Dict:
        return Kind::Dict;
    }
    return Kind::None;
}

namespace {

constexpr std::uint64_t kStringLengthBits = 24;
constexpr std::uint64_t kMaxStringField = (std::uint64_t{1} << kStringLengthBits) - 1;
constexpr std::int64_t kSmallIntMin = -(std::int64_t{1} << 60);
constexpr std::int64_t kSmallIntMax = (std::int64_t{1} << 60) - 1;

std::string hexByte(unsigned char c)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", c);
    return buf;
}

std::string withThousands(std::uint64_t n)
{
    return formatCount(static_cast<double>(n));
}

// Little-endian unsigned integer of `n` bytes (n <= 8).
std::uint64_t readLittle(const unsigned char *p, std::size_t n)
{
    std::uint64_t v = 0;
    for (std::size_t i = n; i > 0; --i)
        v = (v << 8) | p[i - 1];
    return v;
}

} // namespace

// The parsing state machine. One pass over the bytes; every opcode is checked before it acts.
class Parser
{
public:
    Parser(Document &doc, const Limits &limits)
        : m_doc(doc)
        , m_limits(limits)
        , m_data(reinterpret_cast<const unsigned char *>(doc.m_bytes.data()))
        , m_size(doc.m_bytes.size())
    {
        m_maxString = std::min<std::uint64_t>(limits.max_string_bytes, kMaxStringField);
        // The 23 real snapshots of the collection hold an item per 2.6 to 13 bytes, a container
        // per 30 or more and a new string per 100 or more: reserving about that much avoids most
        // regrowing of the arrays (and reserved pages cost nothing until used).
        const auto expect = [&](std::uint64_t perBytes, std::size_t cap) {
            return static_cast<std::size_t>(std::min<std::uint64_t>(m_size / perBytes, cap));
        };
        doc.m_items.reserve(expect(4, limits.max_values));
        doc.m_containers.reserve(expect(32, limits.max_containers));
        doc.m_strings.reserve(expect(128, limits.max_values));
        m_memo.reserve(expect(8, limits.max_values));
    }

    bool run(ReadError &error);

private:
    struct Chunk
    {
        std::uint64_t start;
        std::uint64_t count;
    };

    Document &m_doc;
    const Limits &m_limits;
    const unsigned char *m_data;
    std::uint64_t m_size;
    std::uint64_t m_maxString = 0;
    std::uint64_t m_pos = 0;  // next byte to read
    std::uint64_t m_opAt = 0; // offset of the opcode being run
    unsigned char m_op = 0;
    std::vector<Value> m_stack;
    std::vector<std::size_t> m_marks; // stack sizes at each open MARK
    std::vector<Value> m_memo;
    std::vector<std::vector<Chunk>> m_chunks; // item chunks of containers filled in pieces
    std::uint64_t m_held = 0;                 // values held: stack, items, memo, chunks
    bool m_stopped = false;
    ReadError m_error;

    bool fail(std::uint64_t offset, std::string message)
    {
        m_error.offset = offset;
        m_error.message = std::move(message);
        return false;
    }
    bool failHere(const std::string &message)
    {
        return fail(m_opAt, std::string(opcodeName(m_op)) + ": " + message);
    }

    bool step();
    bool need(std::uint64_t n)
    {
        if (m_size - m_pos >= n)
            return true;
        return fail(m_opAt,
                    std::string("the file ends inside ") + opcodeName(m_op) + " (it needs "
                        + withThousands(n) + " more bytes, " + withThousands(m_size - m_pos)
                        + (m_size - m_pos == 1 ? " is" : " are") + " left): the file is truncated");
    }
    bool hold(std::uint64_t n)
    {
        m_held += n;
        if (m_held <= m_limits.max_values)
            return true;
        return failHere("more than " + withThousands(m_limits.max_values)
                        + " values; a memory snapshot of this size holds far fewer");
    }
    bool push(Value v)
    {
        if (!hold(1))
            return false;
        m_stack.push_back(v);
        return true;
    }
    // Values above the innermost MARK: what an opcode may pop.
    std::size_t available() const
    {
        return m_stack.size() - (m_marks.empty() ? 0 : m_marks.back());
    }
    bool needValues(std::size_t n)
    {
        if (available() >= n)
            return true;
        return failHere("needs " + std::to_string(n) + " value" + (n == 1 ? "" : "s")
                        + " on the stack, " + std::to_string(available())
                        + (available() == 1 ? " is" : " are") + " there"
                        + (m_marks.empty() ? "" : " above the last MARK"));
    }

    bool pushInt(std::int64_t v);
    bool pushString(std::uint64_t length);
    bool pushContainer(Value::Tag tag, std::size_t itemsFromStack);
    bool readLong(std::uint64_t length);
    bool appendToContainer(Value target, std::size_t firstItem, bool pairs);
    bool memoPut(std::uint64_t index);
    bool memoGet(std::uint64_t index);
    bool popMark(std::size_t &first);
    bool finish();
    bool compact();
    bool checkUtf8(std::uint64_t start, std::uint64_t length);
    bool refuse();
};

bool Parser::run(ReadError &error)
{
    if (m_size == 0)
        return (error = {0, "an empty file, not a PyTorch memory snapshot"}), false;
    if (m_data[0] != kProto) {
        std::string what = "not a pickle of protocol 2 or later (first byte " + hexByte(m_data[0])
                           + "); PyTorch memory snapshots are pickles written by "
                             "torch.cuda.memory._dump_snapshot()";
        if (m_size >= 4 && std::memcmp(m_data, "PK\x03\x04", 4) == 0)
            what = "a zip archive (torch.save writes these), not a memory snapshot from "
                   "torch.cuda.memory._dump_snapshot()";
        return (error = {0, what}), false;
    }
    while (!m_stopped) {
        if (m_pos >= m_size) {
            error = {m_size, "the file ends before the pickle's STOP opcode: the file is truncated"};
            return false;
        }
        if (!step()) {
            error = m_error;
            return false;
        }
    }
    if (m_pos != m_size) {
        error = {m_pos,
                 withThousands(m_size - m_pos)
                     + " bytes after the pickle's STOP opcode; a snapshot file holds one pickle"};
        return false;
    }
    if (!compact()) {
        error = m_error;
        return false;
    }
    return true;
}

bool Parser::step()
{
    m_opAt = m_pos;
    m_op = m_data[m_pos++];
    const unsigned char *arg = m_data + m_pos;
    switch (m_op) {
    case kProto:
        if (!need(1))
            return false;
        if (m_opAt != 0)
            return failHere("only allowed at the start of the pickle");
        if (arg[0] < 2 || arg[0] > 5)
            return failHere("protocol " + std::to_string(arg[0])
                            + " is not one this reader knows (2 to 5)");
        m_pos += 1;
        return true;
    case kFrame: {
        // A hint for buffered readers; its length must stay inside the file.
        if (!need(8))
            return false;
        const std::uint64_t length = readLittle(arg, 8);
        m_pos += 8;
        if (length > m_size - m_pos)
            return failHere("announces " + withThousands(length) + " bytes but only "
                            + withThousands(m_size - m_pos) + " are left: the file is truncated");
        return true;
    }
    case kStop:
        return finish();
    case kMark:
        if (m_marks.size() >= m_limits.max_nesting)
            return failHere("nested deeper than " + std::to_string(m_limits.max_nesting)
                            + " levels");
        m_marks.push_back(m_stack.size());
        return true;
    case kEmptyDict:
        return pushContainer(Value::Dict, 0);
    case kEmptyList:
        return pushContainer(Value::List, 0);
    case kEmptyTuple:
        return pushContainer(Value::Tuple, 0);
    case kTuple1:
    case kTuple2:
    case kTuple3: {
        const std::size_t n = static_cast<std::size_t>(m_op - kTuple1 + 1);
        return needValues(n) && pushContainer(Value::Tuple, n);
    }
    case kTuple: {
        std::size_t first = 0;
        if (!popMark(first))
            return false;
        return pushContainer(Value::Tuple, m_stack.size() - first);
    }
    case kAppend:
    case kSetItem: {
        const std::size_t n = m_op == kAppend ? 1 : 2;
        if (!needValues(n + 1))
            return false;
        return appendToContainer(m_stack[m_stack.size() - n - 1],
                                 m_stack.size() - n,
                                 m_op == kSetItem);
    }
    case kAppends:
    case kSetItems: {
        std::size_t first = 0;
        if (!popMark(first))
            return false;
        if (first == (m_marks.empty() ? 0 : m_marks.back()))
            return failHere(std::string("needs ") + (m_op == kSetItems ? "a dict" : "a list")
                            + " below its MARK, there is none");
        return appendToContainer(m_stack[first - 1], first, m_op == kSetItems);
    }
    case kBinInt:
        if (!need(4))
            return false;
        m_pos += 4;
        return pushInt(static_cast<std::int32_t>(static_cast<std::uint32_t>(readLittle(arg, 4))));
    case kBinInt1:
        if (!need(1))
            return false;
        m_pos += 1;
        return pushInt(arg[0]);
    case kBinInt2:
        if (!need(2))
            return false;
        m_pos += 2;
        return pushInt(static_cast<std::int64_t>(readLittle(arg, 2)));
    case kLong1:
        if (!need(1))
            return false;
        m_pos += 1;
        return readLong(arg[0]);
    case kLong4: {
        if (!need(4))
            return false;
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(readLittle(arg, 4)));
        if (n < 0)
            return failHere("negative length " + std::to_string(n));
        m_pos += 4;
        return readLong(static_cast<std::uint64_t>(n));
    }
    case kBinFloat: {
        if (!need(8))
            return false;
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i)
            bits = (bits << 8) | arg[i]; // big-endian, unlike every other number in a pickle
        m_pos += 8;
        if (!push(Value::make(Value::Float, m_doc.m_floats.size())))
            return false;
        m_doc.m_floats.push_back(std::bit_cast<double>(bits));
        return true;
    }
    case kShortBinUnicode:
        if (!need(1))
            return false;
        m_pos += 1;
        return pushString(arg[0]);
    case kBinUnicode:
        if (!need(4))
            return false;
        m_pos += 4;
        return pushString(readLittle(arg, 4));
    case kBinUnicode8:
        if (!need(8))
            return false;
        m_pos += 8;
        return pushString(readLittle(arg, 8));
    case kNone:
        return push(Value());
    case kNewTrue:
    case kNewFalse:
        return push(Value::make(Value::Special, m_op == kNewTrue ? 2 : 1));
    case kMemoize:
        return memoPut(m_memo.size());
    case kBinPut:
        if (!need(1))
            return false;
        m_pos += 1;
        return memoPut(arg[0]);
    case kLongBinPut:
        if (!need(4))
            return false;
        m_pos += 4;
        return memoPut(readLittle(arg, 4));
    case kBinGet:
        if (!need(1))
            return false;
        m_pos += 1;
        return memoGet(arg[0]);
    case kLongBinGet:
        if (!need(4))
            return false;
        m_pos += 4;
        return memoGet(readLittle(arg, 4));
    default:
        return refuse();
    }
}

bool Parser::refuse()
{
    const char *name = opcodeName(m_op);
    if (!name)
        return fail(m_opAt, "unknown pickle opcode " + hexByte(m_op) + ": not a valid pickle");
    return fail(m_opAt,
                std::string("opcode ") + name + " (" + hexByte(m_op)
                    + ") refused: " + refusalReason(m_op)
                    + "; a memory snapshot holds only dicts, lists, tuples, strings, numbers, "
                      "booleans and None");
}

bool Parser::pushInt(std::int64_t v)
{
    if (v >= kSmallIntMin && v <= kSmallIntMax)
        return push(Value::make(Value::SmallInt, static_cast<std::uint64_t>(v)));
    if (!push(Value::make(Value::BigInt, m_doc.m_bigInts.size())))
        return false;
    m_doc.m_bigInts.push_back(v);
    return true;
}

// LONG1/LONG4: a little-endian two's-complement integer of `length` bytes. Accepted while it fits
// in 64 bits (sizes, addresses and times do); longer encodings must be pure sign extension.
bool Parser::readLong(std::uint64_t length)
{
    if (!need(length))
        return false;
    const unsigned char *p = m_data + m_pos;
    m_pos += length;
    if (length == 0)
        return pushInt(0);
    const std::size_t low = static_cast<std::size_t>(std::min<std::uint64_t>(length, 8));
    std::uint64_t bits = readLittle(p, low);
    const bool negative = (p[length - 1] & 0x80) != 0;
    if (length > 8) {
        const unsigned char fill = negative ? 0xFF : 0x00;
        const bool fits = ((p[7] & 0x80) != 0) == negative
                          && std::all_of(p + 8, p + length, [&](unsigned char b) {
                                 return b == fill;
                             });
        if (!fits)
            return failHere("an integer wider than 64 bits (" + withThousands(length)
                            + " bytes); a memory snapshot's numbers fit in 64");
    } else if (negative && low < 8) {
        bits |= ~std::uint64_t{0} << (8 * low); // sign-extend
    }
    return pushInt(static_cast<std::int64_t>(bits));
}

bool Parser::checkUtf8(std::uint64_t start, std::uint64_t length)
{
    const std::string_view all(m_doc.m_bytes);
    std::uint64_t i = start;
    const std::uint64_t end = start + length;
    while (i < end) {
        // ASCII runs, eight bytes at a time.
        while (end - i >= 8) {
            std::uint64_t word = 0;
            std::memcpy(&word, m_data + i, 8);
            if (word & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= end)
            break;
        if (m_data[i] < 0x80) {
            ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t n = utf8SequenceLength(all.substr(0, end), i, cp);
        if (n == 0)
            return fail(i,
                        "a string that is not valid UTF-8 (byte " + hexByte(m_data[i]) + ") in the "
                            + opcodeName(m_op) + " at offset " + std::to_string(m_opAt));
        i += n;
    }
    return true;
}

bool Parser::pushString(std::uint64_t length)
{
    if (length > m_maxString)
        return failHere("a string of " + withThousands(length) + " bytes; at most "
                        + withThousands(m_maxString) + " are read");
    if (!need(length) || !checkUtf8(m_pos, length))
        return false;
    if (!push(Value::make(Value::String, m_doc.m_strings.size())))
        return false;
    m_doc.m_strings.push_back((m_pos << kStringLengthBits) | length);
    m_pos += length;
    return true;
}

// A new container, optionally filled with the top `itemsFromStack` values (tuples).
bool Parser::pushContainer(Value::Tag tag, std::size_t itemsFromStack)
{
    if (m_doc.m_containers.size() >= m_limits.max_containers)
        return failHere("more than " + withThousands(m_limits.max_containers)
                        + " lists, tuples and dicts; a memory snapshot of this size holds far "
                          "fewer");
    Document::Container c;
    c.offset = m_opAt;
    c.start = m_doc.m_items.size();
    c.count = static_cast<std::uint32_t>(itemsFromStack);
    m_doc.m_items.insert(m_doc.m_items.end(),
                         m_stack.end() - static_cast<std::ptrdiff_t>(itemsFromStack),
                         m_stack.end());
    m_stack.resize(m_stack.size() - itemsFromStack);
    const std::uint64_t index = m_doc.m_containers.size();
    m_doc.m_containers.push_back(c);
    return push(Value::make(tag, index));
}

bool Parser::popMark(std::size_t &first)
{
    if (m_marks.empty())
        return failHere("no MARK before it (the pickle's stack has no open mark)");
    first = m_marks.back();
    m_marks.pop_back();
    return true;
}

// APPEND(S) into a list, SETITEM(S) into a dict: moves the stack's values from `firstItem` up
// into `target`'s items.
bool Parser::appendToContainer(Value target, std::size_t firstItem, bool pairs)
{
    const Value::Tag want = pairs ? Value::Dict : Value::List;
    if (target.tag() != want)
        return failHere(std::string("needs ") + (pairs ? "a dict" : "a list")
                        + " below its items, found " + kindName(target.kind()));
    const std::size_t n = m_stack.size() - firstItem;
    if (pairs && n % 2 != 0)
        return failHere("a key without a value (" + std::to_string(n) + " items)");
    if (pairs)
        for (std::size_t i = firstItem; i < m_stack.size(); i += 2)
            if (m_stack[i].tag() != Value::String && m_stack[i].tag() != Value::SmallInt
                && m_stack[i].tag() != Value::BigInt)
                return failHere(std::string("a dict key that is ") + kindName(m_stack[i].kind())
                                + "; snapshot dicts have string or number keys");
    Document::Container &c = m_doc.m_containers[target.payload()];
    if (std::uint64_t{c.count} + n > std::numeric_limits<std::uint32_t>::max())
        return failHere("a container with more than 4 billion items");
    auto &items = m_doc.m_items;
    const std::uint64_t end = items.size();
    if (n > 0 && c.count > 0 && !(c.chunk == 0 && c.start + c.count == end)) {
        // Its items so far are not at the end of the item array: keep this piece apart and join
        // the pieces once the whole pickle is read (compact()).
        if (c.chunk == 0) {
            m_chunks.push_back({{c.start, c.count}});
            c.chunk = static_cast<std::uint32_t>(m_chunks.size());
        }
        auto &chunks = m_chunks[c.chunk - 1];
        if (chunks.back().start + chunks.back().count == end) {
            chunks.back().count += n;
        } else {
            if (!hold(2))
                return false;
            chunks.push_back({end, n});
        }
    } else if (c.count == 0) {
        c.start = end;
    }
    items.insert(items.end(),
                 m_stack.begin() + static_cast<std::ptrdiff_t>(firstItem),
                 m_stack.end());
    m_stack.resize(firstItem);
    c.count += static_cast<std::uint32_t>(n);
    return true;
}

bool Parser::memoPut(std::uint64_t index)
{
    if (available() < 1)
        return failHere("nothing on the stack to memoize");
    if (index > m_memo.size())
        return failHere("memo index " + withThousands(index) + " skips ahead of the "
                        + withThousands(m_memo.size())
                        + " values stored so far (pickle.dump numbers them in order)");
    if (index == m_memo.size()) {
        if (!hold(1))
            return false;
        m_memo.push_back(m_stack.back());
    } else {
        m_memo[index] = m_stack.back();
    }
    return true;
}

bool Parser::memoGet(std::uint64_t index)
{
    if (index >= m_memo.size())
        return failHere("memo index " + withThousands(index) + " out of range ("
                        + withThousands(m_memo.size()) + (m_memo.size() == 1 ? " value" : " values")
                        + " memoized)");
    return push(m_memo[index]);
}

bool Parser::finish()
{
    if (!m_marks.empty())
        return failHere(std::to_string(m_marks.size()) + " MARK" + (m_marks.size() == 1 ? "" : "s")
                        + " left open at the end of the pickle");
    if (m_stack.size() != 1)
        return failHere("the pickle ends with " + std::to_string(m_stack.size())
                        + " values on its stack instead of one");
    m_doc.m_root = m_stack.back();
    m_stack.clear();
    m_stopped = true;
    return true;
}

// Joins the items of containers that were filled in pieces, so that each container's items lie
// together (Document::items returns a span).
bool Parser::compact()
{
    auto &items = m_doc.m_items;
    for (Document::Container &c : m_doc.m_containers) {
        if (c.chunk == 0)
            continue;
        if (!hold(c.count))
            return false;
        const std::uint64_t start = items.size();
        items.reserve(items.size() + c.count);
        for (const Chunk &piece : m_chunks[c.chunk - 1])
            for (std::uint64_t i = 0; i < piece.count; ++i)
                items.push_back(items[piece.start + i]);
        c.start = start;
        c.chunk = 0;
    }
    m_chunks.clear();
    return true;
}

std::optional<Document> Document::parse(std::string bytes, ReadError &error, const Limits &limits)
{
    Document doc;
    doc.m_bytes = std::move(bytes);
    Parser parser(doc, limits);
    if (!parser.run(error))
        return std::nullopt;
    return doc;
}

std::optional<std::int64_t> Document::integer(Value v) const
{
    if (v.tag() == Value::SmallInt)
        return static_cast<std::int64_t>(v.m_bits) >> 3; // arithmetic shift keeps the sign
    if (v.tag() == Value::BigInt)
        return m_bigInts[v.payload()];
    return std::nullopt;
}

std::optional<double> Document::number(Value v) const
{
    if (v.tag() == Value::Float)
        return m_floats[v.payload()];
    if (const auto i = integer(v))
        return static_cast<double>(*i);
    return std::nullopt;
}

std::optional<bool> Document::boolean(Value v) const
{
    if (v.tag() == Value::Special && v.payload() != 0)
        return v.payload() == 2;
    return std::nullopt;
}

std::optional<std::string_view> Document::string(Value v) const
{
    if (v.tag() != Value::String)
        return std::nullopt;
    const std::uint64_t packed = m_strings[v.payload()];
    return std::string_view(m_bytes).substr(packed >> kStringLengthBits, packed & kMaxStringField);
}

std::span<const Value> Document::items(Value v) const
{
    const auto index = containerIndex(v);
    if (!index)
        return {};
    const Container &c = m_containers[*index];
    return std::span<const Value>(m_items).subspan(c.start, c.count);
}

std::optional<Value> Document::find(Value dict, std::string_view key) const
{
    if (dict.tag() != Value::Dict)
        return std::nullopt;
    const auto all = items(dict);
    for (std::size_t i = all.size(); i >= 2; i -= 2) {
        const auto k = string(all[i - 2]);
        if (k && *k == key)
            return all[i - 1];
    }
    return std::nullopt;
}

std::optional<std::size_t> Document::containerIndex(Value v) const
{
    const auto t = v.tag();
    if (t != Value::List && t != Value::Tuple && t != Value::Dict)
        return std::nullopt;
    return static_cast<std::size_t>(v.payload());
}

std::uint64_t Document::offsetOf(Value v) const
{
    const auto index = containerIndex(v);
    return index ? m_containers[*index].offset : 0;
}

} // namespace membudget::pickle
