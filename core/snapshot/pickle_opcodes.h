// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Pickle opcodes (protocols 0 to 5), as Python's Lib/pickletools.py documents them. Only the ones
// named k... below are executed by the snapshot reader; the others are known by name so that a
// refusal can say what the file asked for.

#include <cstdint>

namespace membudget::pickle {

inline constexpr unsigned char kMark = 0x28;       // '('
inline constexpr unsigned char kEmptyTuple = 0x29; // ')'
inline constexpr unsigned char kStop = 0x2E;       // '.'
inline constexpr unsigned char kBinFloat = 0x47;   // 'G': 8-byte big-endian double
inline constexpr unsigned char kBinInt = 0x4A;     // 'J': 4-byte signed
inline constexpr unsigned char kBinInt1 = 0x4B;    // 'K': 1-byte unsigned
inline constexpr unsigned char kBinInt2 = 0x4D;    // 'M': 2-byte unsigned
inline constexpr unsigned char kNone = 0x4E;       // 'N'
inline constexpr unsigned char kBinUnicode = 0x58; // 'X': 4-byte length, UTF-8
inline constexpr unsigned char kEmptyList = 0x5D;  // ']'
inline constexpr unsigned char kAppend = 0x61;     // 'a'
inline constexpr unsigned char kAppends = 0x65;    // 'e'
inline constexpr unsigned char kBinGet = 0x68;     // 'h': 1-byte memo index
inline constexpr unsigned char kLongBinGet = 0x6A; // 'j': 4-byte memo index
inline constexpr unsigned char kBinPut = 0x71;     // 'q'
inline constexpr unsigned char kLongBinPut = 0x72; // 'r'
inline constexpr unsigned char kSetItem = 0x73;    // 's'
inline constexpr unsigned char kTuple = 0x74;      // 't'
inline constexpr unsigned char kSetItems = 0x75;   // 'u'
inline constexpr unsigned char kEmptyDict = 0x7D;  // '}'
inline constexpr unsigned char kProto = 0x80;      // protocol 2+
inline constexpr unsigned char kTuple1 = 0x85;     // TUPLE2 = 0x86, TUPLE3 = 0x87
inline constexpr unsigned char kTuple2 = 0x86;
inline constexpr unsigned char kTuple3 = 0x87;
inline constexpr unsigned char kNewTrue = 0x88;
inline constexpr unsigned char kNewFalse = 0x89;
inline constexpr unsigned char kLong1 = 0x8A; // 1-byte length, little-endian two's complement
inline constexpr unsigned char kLong4 = 0x8B; // 4-byte length
inline constexpr unsigned char kShortBinUnicode = 0x8C; // 1-byte length, UTF-8 (protocol 4)
inline constexpr unsigned char kBinUnicode8 = 0x8D;     // 8-byte length
inline constexpr unsigned char kMemoize = 0x94; // memo the top of the stack at the next index
inline constexpr unsigned char kFrame = 0x95;   // 8-byte frame length (protocol 4)

// "GLOBAL", "SHORT_BINUNICODE"...; nullptr for a byte that is no pickle opcode.
const char *opcodeName(unsigned char op);

// Why an opcode the reader does not execute is refused ("imports a Python name", "calls Python
// code", "is not used by memory snapshots"...).
const char *refusalReason(unsigned char op);

} // namespace membudget::pickle
