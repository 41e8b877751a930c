// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/pickle_opcodes.h"

#include <array>

namespace membudget::pickle {

namespace {

enum class Role { Read, Imports, Calls, Builds, Outside, Unused };

struct Opcode
{
    unsigned char code;
    const char *name;
    Role role;
};

// Every opcode of protocols 0 to 5 (Lib/pickletools.py).
constexpr std::array<Opcode, 68> kOpcodes{{
    {0x28, "MARK", Role::Read},
    {0x29, "EMPTY_TUPLE", Role::Read},
    {0x2E, "STOP", Role::Read},
    {0x47, "BINFLOAT", Role::Read},
    {0x4A, "BININT", Role::Read},
    {0x4B, "BININT1", Role::Read},
    {0x4D, "BININT2", Role::Read},
    {0x4E, "NONE", Role::Read},
    {0x58, "BINUNICODE", Role::Read},
    {0x5D, "EMPTY_LIST", Role::Read},
    {0x61, "APPEND", Role::Read},
    {0x65, "APPENDS", Role::Read},
    {0x68, "BINGET", Role::Read},
    {0x6A, "LONG_BINGET", Role::Read},
    {0x71, "BINPUT", Role::Read},
    {0x72, "LONG_BINPUT", Role::Read},
    {0x73, "SETITEM", Role::Read},
    {0x74, "TUPLE", Role::Read},
    {0x75, "SETITEMS", Role::Read},
    {0x7D, "EMPTY_DICT", Role::Read},
    {0x80, "PROTO", Role::Read},
    {0x85, "TUPLE1", Role::Read},
    {0x86, "TUPLE2", Role::Read},
    {0x87, "TUPLE3", Role::Read},
    {0x88, "NEWTRUE", Role::Read},
    {0x89, "NEWFALSE", Role::Read},
    {0x8A, "LONG1", Role::Read},
    {0x8B, "LONG4", Role::Read},
    {0x8C, "SHORT_BINUNICODE", Role::Read},
    {0x8D, "BINUNICODE8", Role::Read},
    {0x94, "MEMOIZE", Role::Read},
    {0x95, "FRAME", Role::Read},
    {0x63, "GLOBAL", Role::Imports},
    {0x93, "STACK_GLOBAL", Role::Imports},
    {0x82, "EXT1", Role::Imports},
    {0x83, "EXT2", Role::Imports},
    {0x84, "EXT4", Role::Imports},
    {0x69, "INST", Role::Calls},
    {0x6F, "OBJ", Role::Calls},
    {0x52, "REDUCE", Role::Calls},
    {0x81, "NEWOBJ", Role::Calls},
    {0x92, "NEWOBJ_EX", Role::Calls},
    {0x62, "BUILD", Role::Builds},
    {0x50, "PERSID", Role::Outside},
    {0x51, "BINPERSID", Role::Outside},
    {0x97, "NEXT_BUFFER", Role::Outside},
    {0x98, "READONLY_BUFFER", Role::Outside},
    {0x30, "POP", Role::Unused},
    {0x31, "POP_MARK", Role::Unused},
    {0x32, "DUP", Role::Unused},
    {0x46, "FLOAT", Role::Unused},
    {0x49, "INT", Role::Unused},
    {0x4C, "LONG", Role::Unused},
    {0x53, "STRING", Role::Unused},
    {0x54, "BINSTRING", Role::Unused},
    {0x55, "SHORT_BINSTRING", Role::Unused},
    {0x56, "UNICODE", Role::Unused},
    {0x42, "BINBYTES", Role::Unused},
    {0x43, "SHORT_BINBYTES", Role::Unused},
    {0x8E, "BINBYTES8", Role::Unused},
    {0x96, "BYTEARRAY8", Role::Unused},
    {0x64, "DICT", Role::Unused},
    {0x6C, "LIST", Role::Unused},
    {0x67, "GET", Role::Unused},
    {0x70, "PUT", Role::Unused},
    {0x8F, "EMPTY_SET", Role::Unused},
    {0x90, "ADDITEMS", Role::Unused},
    {0x91, "FROZENSET", Role::Unused},
}};

const Opcode *lookup(unsigned char op)
{
    for (const Opcode &o : kOpcodes)
        if (o.code == op)
            return &o;
    return nullptr;
}

} // namespace

const char *opcodeName(unsigned char op)
{
    const Opcode *o = lookup(op);
    return o ? o->name : nullptr;
}

const char *refusalReason(unsigned char op)
{
    const Opcode *o = lookup(op);
    switch (o ? o->role : Role::Unused) {
    case Role::Imports:
        return "it imports a Python name, which MemBudget never does";
    case Role::Calls:
        return "it calls Python code to build an object, which MemBudget never does";
    case Role::Builds:
        return "it sets a Python object's state, which MemBudget never does";
    case Role::Outside:
        return "it refers to an object or buffer outside the file";
    case Role::Read:
    case Role::Unused:
        break;
    }
    return "memory snapshots never use it";
}

} // namespace membudget::pickle
