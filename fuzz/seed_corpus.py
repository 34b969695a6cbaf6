#!/usr/bin/python3
"""Writes the seed corpora of fuzz/corpus/ from tests/fixtures (run once;
the output is checked in). frame/: every fixture event in both of Salt's
framings, plus a few hand-made hostile frames. arguments/: brine-run command
lines (NUL-separated words) built from the fixtures' jids, functions and
targets, and salt-run's typing corner cases."""
import hashlib
import json
import os
import sys

import msgpack

here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, "..", "tests", "fixtures")


def write(folder, blob):
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(blob).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(blob)


def main():
    frames = os.path.join(here, "corpus", "frame")
    args = os.path.join(here, "corpus", "arguments")
    words = set()
    for name in sorted(os.listdir(fixtures)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(fixtures, name), encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                ev = json.loads(line)
                tag, data = ev["tag"].encode(), ev["data"]
                write(frames, tag + b"\n\n" + msgpack.packb(data, use_bin_type=True))
                if len(tag) <= 20:
                    write(frames, tag.ljust(20, b"|") + msgpack.packb(data, use_bin_type=False))
                for key in ("jid", "fun", "tgt", "id"):
                    if isinstance(data.get(key), str):
                        words.add(data[key])
                if "arg" in data:
                    words.add(json.dumps(data["arg"]))
    hostile = [
        b"", b"\n\n", b"salt/x\n\n", b"salt/x\n\n\x80", b"salt/x\n\n\x81\xa1a",
        b"salt/x\n\n\xdf\xff\xff\xff\xff", b"salt/x\n\n\x81\xa1a\xdb\xff\xff\xff\xff",
        b"salt/x\n\n" + b"\x81\xa1a" * 50 + b"\x80", b"bad\xff\n\n\x80", b"a\x00b\n\n\x80",
        b"salt/x\n\n\x81\xa1d\xc7\x04\x4e2014", b"salt/x\n\n\x81\xa1b\xc4\x02\xff\xfe",
        b"salt/x\n\n\x81\xa1s\xa2\xff\xfe", b"salt/x\n\n\x81\xa1f\xcb@\x10\x00\x00\x00\x00\x00\x00",
    ]
    for blob in hostile:
        write(frames, blob)
    for w in sorted(words):
        write(args, w.encode())
        write(args, b"jid=" + w.encode())
    for line in [
        ["limit=2", "search_function=state.*,cmd.*"], ["search_target=[a, b]"],
        ["search_metadata={foo: bar}"], ["start_time=2014-04-17 13:58", "end_time=now"],
        ["010"], ["0x1F"], ["1e3"], ["None"], ["'quoted'"], ["- a #c"], ["a=b=c"], ["a==b"],
        ["{a: [1, {b: 2}]}"], ["[[[[[[[[[[1]]]]]]]]]]"], ["20240101120000123456"], ["1_000"],
        ["!!binary aGVsbG8="], ["&a [*a]"], ["|"], ["!"], ["---"], ["yes"], ["~"], ["2014-04-17"],
        ["search_function=%_;--'\""],
    ]:
        write(args, b"\0".join(w.encode() for w in line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
