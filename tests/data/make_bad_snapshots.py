#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the hand-made hostile pickles of the bad-input corpus (tests/data/bad/snapshot-*.pickle).

Every file here is malformed or malicious on purpose: each one must make `membudget snapshot` and
`membudget validate` fail with one line `file: offset N: message` (EXPECTED.tsv). None of them is
a real memory snapshot; the real ones are in tests/data/snapshots. This script only writes bytes
(pickle.dumps of plain data, or opcodes assembled by hand) and never unpickles anything.

    python3 tests/data/make_bad_snapshots.py     # rewrites tests/data/bad/snapshot-*.pickle
"""
import os
import pickle
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "bad")

PROTO4 = b"\x80\x04"


def dumps(obj):
    return pickle.dumps(obj, protocol=4)


def short_str(s):
    b = s.encode("utf-8")
    return b"\x8c" + bytes([len(b)]) + b


def segment(address=0, total=2 << 20, blocks=None, **extra):
    seg = {"device": 0, "address": address, "total_size": total, "stream": 0,
           "segment_type": "large", "blocks": blocks if blocks is not None else [
               {"address": address, "size": total, "requested_size": total,
                "state": "inactive", "frames": []}]}
    seg.update(extra)
    return seg


def event(action, addr, size, **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 1, "frames": []}
    e.update(extra)
    return e


def snapshot(segments, traces=None):
    return {"segments": segments, "device_traces": traces if traces is not None else [[]]}


def cases():
    c = {}
    # Opcodes that would import, call or build Python objects: refused, never executed.
    c["global-os-system"] = PROTO4 + b"cos\nsystem\n" + short_str("echo owned") + b"\x85R."
    c["stack-global"] = dumps(__import__("collections").OrderedDict())
    c["reduce"] = PROTO4 + b"N)R."
    c["build"] = PROTO4 + b"}}b."
    c["inst"] = PROTO4 + b"(ios\nsystem\n."
    c["obj"] = PROTO4 + b"(N)o."
    c["newobj"] = PROTO4 + b"N)\x81."
    c["newobj-ex"] = PROTO4 + b"N)}\x92."
    c["persid"] = PROTO4 + b"Pdisk-file\n."
    c["binpersid"] = PROTO4 + b"NQ."
    c["ext1"] = PROTO4 + b"\x82\x01."
    # Plain data, but never in a snapshot.
    c["bytes"] = dumps(b"raw bytes")
    c["set"] = dumps({1, 2, 3})
    c["pop"] = PROTO4 + b"N0N."
    c["unknown-opcode"] = PROTO4 + b"\xff."
    # Not a pickle a snapshot could be.
    c["empty"] = b""
    c["text"] = b"format: membudget/1\nname: not a snapshot\n"
    c["torch-save-zip"] = b"PK\x03\x04" + b"\x00" * 60
    c["protocol-0"] = pickle.dumps({"segments": []}, protocol=0)
    c["protocol-9"] = b"\x80\x09}."
    c["proto-twice"] = PROTO4 + b"\x80\x04}."
    # Broken structure.
    c["truncated"] = dumps(snapshot([segment()]))[:-40]
    c["truncated-string"] = PROTO4 + b"\x8c\x20only eight"
    c["truncated-int"] = PROTO4 + b"J\x01\x02"
    c["no-stop"] = PROTO4 + b"}"
    c["frame-too-long"] = PROTO4 + b"\x95" + struct.pack("<Q", 1 << 40) + b"}."
    c["trailing-data"] = dumps({"segments": []}) + b"\x00garbage"
    c["two-values"] = PROTO4 + b"}}."
    c["open-mark"] = PROTO4 + b"}(."
    c["stop-empty"] = PROTO4 + b"."
    c["mark-underflow"] = PROTO4 + b"]K\x01K\x02e."
    c["stack-underflow"] = PROTO4 + b"]a."
    c["tuple-underflow"] = PROTO4 + b"K\x01\x86."
    c["items-below-mark"] = PROTO4 + b"(K\x01K\x02e."
    c["append-to-dict"] = PROTO4 + b"}K\x01a."
    c["setitems-to-list"] = PROTO4 + b"](K\x01K\x02u."
    c["odd-setitems"] = PROTO4 + b"}(K\x01K\x02K\x03u."
    c["list-as-key"] = PROTO4 + b"}]K\x01s."
    c["memo-out-of-range"] = PROTO4 + b"h\x05."
    c["memo-long-out-of-range"] = PROTO4 + b"}\x94j\x00\x00\x01\x00."
    c["memo-skips-ahead"] = PROTO4 + b"}r\x40\x42\x0f\x00."
    c["memo-empty-stack"] = PROTO4 + b"\x94}."
    c["bad-utf8"] = PROTO4 + b"\x8c\x04ab\xffc."
    c["overlong-utf8"] = PROTO4 + b"\x8c\x02\xc0\xaf."
    c["surrogate"] = dumps("\udc80")  # Python writes lone surrogates ('surrogatepass')
    c["int-past-64-bits"] = dumps(2 ** 64)
    c["long4-negative-length"] = PROTO4 + b"\x8b\xff\xff\xff\xff."
    c["huge-string-length"] = PROTO4 + b"\x8d" + struct.pack("<Q", 1 << 40) + b"x."
    c["string-over-limit"] = PROTO4 + b"X" + struct.pack("<I", 2 << 20) + b"x" * 64 + b"."
    c["nesting"] = PROTO4 + b"(" * 100 + b"]" + b"e" * 100 + b"."
    # Plain data that is not a memory snapshot.
    c["string-root"] = dumps("hello")
    c["list-root"] = dumps([segment()])
    c["dict-without-segments"] = dumps({"device_traces": [[]]})
    c["segments-not-a-list"] = dumps({"segments": {"0": segment()}})
    c["segment-without-address"] = dumps(snapshot([{k: v for k, v in segment().items()
                                                     if k != "address"}]))
    c["segment-type-unknown"] = dumps(snapshot([segment(segment_type="huge")]))
    c["segment-size-string"] = dumps(snapshot([segment(total="2097152")]))
    c["segment-device-out-of-range"] = dumps(snapshot([segment(device=5000)]))
    c["negative-block-size"] = dumps(snapshot([segment(blocks=[
        {"address": 0, "size": -512, "requested_size": 0, "state": "inactive"}])]))
    c["block-outside-segment"] = dumps(snapshot([segment(blocks=[
        {"address": 4 << 20, "size": 512, "requested_size": 512, "state": "active_allocated"}])]))
    c["block-state-unknown"] = dumps(snapshot([segment(blocks=[
        {"address": 0, "size": 2 << 20, "requested_size": 1, "state": "leaked"}])]))
    c["legacy-blocks-short"] = dumps(snapshot([segment(blocks=[
        {"size": 1 << 20, "requested_size": 1 << 20, "state": "inactive"}])]))
    c["frame-line-string"] = dumps(snapshot([segment(blocks=[
        {"address": 0, "size": 2 << 20, "requested_size": 1, "state": "active_allocated",
         "frames": [{"filename": "train.py", "line": "12", "name": "step"}]}])]))
    c["frames-not-dicts"] = dumps(snapshot([segment(frames=["train.py:12"])]))
    c["unknown-action"] = dumps(snapshot([segment()], [[event("teleport", 0, 512)]]))
    c["event-without-size"] = dumps(snapshot([segment()], [[{"action": "alloc", "addr": 0}]]))
    shared = event("alloc", 0, 512)
    c["shared-event"] = dumps(snapshot([segment()], [[shared, shared]]))
    trace = [event("alloc", 0, 512)]
    c["shared-trace"] = dumps(snapshot([segment()], [trace, trace]))
    wide = [1]
    for _ in range(4):
        wide = [wide] * 100  # 100^4 values through the memo, in a few hundred bytes
    c["settings-memo-bomb"] = dumps({"segments": [], "allocator_settings": {"x": wide}})
    deep = [1]
    for _ in range(40):
        deep = [deep, deep]
    c["settings-too-deep"] = dumps({"segments": [], "allocator_settings": {"x": deep}})
    # Well-formed data whose trace contradicts its segments.
    c["frees-more-than-held"] = dumps(snapshot([segment()], [[event("free_requested", 0, 512),
                                                                event("alloc", 4096, 512)]]))
    two_live = [{"address": 0, "size": 1 << 20, "requested_size": 512,
                 "state": "active_allocated", "frames": []},
                {"address": 1 << 20, "size": 1 << 20, "requested_size": 512,
                 "state": "active_allocated", "frames": []}]
    c["double-alloc"] = dumps(snapshot([segment(blocks=two_live)],
                                       [[event("alloc", 0, 512), event("alloc", 0, 512)]]))
    c["segment-alloc-missing"] = dumps(snapshot([segment()], [[event("segment_alloc", 1 << 30,
                                                                     2 << 20)]]))
    c["segment-freed-twice"] = dumps(snapshot([segment()], [[event("segment_free", 0, 2 << 20)]]))
    one_live = [{"address": 0, "size": 2 << 20, "requested_size": 512,
                 "state": "active_allocated", "frames": []}]
    c["live-block-missing"] = dumps(snapshot([segment(blocks=one_live)],
                                             [[event("alloc", 4096, 512)]]))
    c["free-size-differs"] = dumps(snapshot([segment()], [[event("alloc", 0, 512),
                                                             event("free_requested", 0, 1024)]]))
    c["double-free"] = dumps(snapshot([segment(blocks=one_live)],
                                      [[event("alloc", 4096, 512), event("free_requested", 4096, 512),
                                        event("free_requested", 4096, 512),
                                        event("alloc", 8192, 512)]]))
    c["live-after-free"] = dumps(snapshot([segment(blocks=one_live)],
                                          [[event("free_requested", 0, 512),
                                            event("alloc", 8192, 512)]]))
    c["no-memory-at-all"] = dumps({"segments": [], "device_traces": []})
    return c


def main():
    for old in os.listdir(OUT):
        if old.startswith("snapshot-") and old.endswith(".pickle"):
            os.remove(os.path.join(OUT, old))
    for name, data in cases().items():
        with open(os.path.join(OUT, "snapshot-%s.pickle" % name), "wb") as f:
            f.write(data)
    print("wrote %d files to %s" % (len(cases()), OUT))


if __name__ == "__main__":
    main()
