// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A restricted reader for the pickles that torch.cuda.memory._dump_snapshot() writes
// (pickle.dump of a dict of lists, dicts, strings and numbers, protocol 4). It understands only
// the opcodes that build such plain data; anything that would import, call or construct a Python
// object (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT1...) is refused with
// its byte offset and name, never executed. The opcode set and encodings follow Python's
// Lib/pickletools.py (the pickle format's own documentation).
//
// The reader is a loop over the bytes with an explicit stack: no recursion, so no input can exhaust
// the C++ stack. What it builds is stored flat (containers in one array, their items in another),
// so a deeply nested or self-referencing pickle costs no more than its bytes; consumers walk it
// with a fixed schema or a depth limit.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace membudget::pickle {

enum class Kind : std::uint8_t { None, Bool, Int, Float, String, List, Tuple, Dict };

const char *kindName(Kind kind); // "None", "a boolean", "a whole number", "a string", "a list"...

// One value, 8 bytes: a 3-bit tag and a 61-bit payload (the number itself, or an index into the
// document's tables). Containers are shared, as in Python: a value fetched from the memo twice
// refers to the same list or dict.
class Value
{
public:
    Value() = default;
    Kind kind() const;
    bool isNone() const { return m_bits == 0; }

private:
    friend class Document;
    friend class Parser;
    enum Tag : std::uint64_t { Special, SmallInt, BigInt, Float, String, List, Tuple, Dict };
    static Value make(Tag tag, std::uint64_t payload) { return Value((payload << 3) | tag); }
    explicit Value(std::uint64_t bits)
        : m_bits(bits)
    {}
    Tag tag() const { return static_cast<Tag>(m_bits & 7); }
    std::uint64_t payload() const { return m_bits >> 3; }
    std::uint64_t m_bits = 0; // Special/None
};

// Bounds on what a pickle may make the reader build. The defaults fit the largest real snapshots
// (hundreds of MB) with room to spare; tests pass smaller ones.
struct Limits
{
    std::size_t max_values = 256u << 20;     // values held at once (8 bytes each): 2 GiB
    std::size_t max_containers = 32u << 20;  // lists, tuples and dicts
    std::size_t max_string_bytes = 1u << 20; // one string
    std::size_t max_nesting = 64;            // open MARKs, the pickle's own nesting
};

struct ReadError
{
    std::uint64_t offset = 0; // byte offset of the opcode (or byte) at fault
    std::string message;
};

// A parsed pickle: the root value and the tables values refer to. Strings are views into the
// bytes the document keeps.
class Document
{
public:
    // Parses a whole pickle: protocol 2 to 5, exactly one STOP at the very end. On failure returns
    // nothing and sets `error`.
    static std::optional<Document> parse(std::string bytes,
                                         ReadError &error,
                                         const Limits &limits = {});

    const Value &root() const { return m_root; }
    std::size_t byteSize() const { return m_bytes.size(); }

    // Scalars; each returns nothing when `v` is of another kind.
    std::optional<std::int64_t> integer(Value v) const;
    std::optional<double> number(Value v) const; // an int or a float
    std::optional<bool> boolean(Value v) const;
    std::optional<std::string_view> string(Value v) const; // valid UTF-8

    // Containers: the items of a list or tuple; a dict's keys and values alternate (key, value,
    // key, value...) in insertion order. Empty for scalars.
    std::span<const Value> items(Value v) const;
    // The value stored under a string key (the last one, as Python keeps it), or nothing.
    std::optional<Value> find(Value dict, std::string_view key) const;
    // Index of a container in [0, containerCount()), for callers that remember what they visited.
    std::optional<std::size_t> containerIndex(Value v) const;
    std::size_t containerCount() const { return m_containers.size(); }
    // Byte offset of the opcode that created a container (0 for scalars), for messages.
    std::uint64_t offsetOf(Value v) const;

private:
    friend class Parser;
    struct Container
    {
        std::uint64_t start = 0;  // first item in m_items
        std::uint64_t offset = 0; // byte offset of the creating opcode
        std::uint32_t count = 0;
        std::uint32_t chunk = 0; // while parsing: index+1 of its chunk list in the parser, 0 if one
    };
    std::string m_bytes;
    std::vector<Container> m_containers;
    std::vector<Value> m_items;
    std::vector<std::uint64_t> m_strings; // byte offset << 24 | length
    std::vector<std::int64_t> m_bigInts;  // integers outside the 61-bit range of a Value
    std::vector<double> m_floats;
    Value m_root;
};

} // namespace membudget::pickle
