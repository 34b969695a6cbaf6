#!/usr/bin/env python3
"""Reference renderings for tests/output_test.cpp, made by Python itself.

usage: render.py OUTPUTTER [INDENT|none] < value.json > rendered

Reads one value as brine's storage JSON (strings may carry \\udcXX for bytes
that are not UTF-8, as Python's surrogateescape) and writes, as bytes, what
Python prints for it:

  json        json.dumps(v, indent=INDENT, ensure_ascii=False); INDENT 'none' is
              Salt's default 4, a negative INDENT is indent=None (one line)
  yaml        yaml.dump(v, Dumper=yaml.CSafeDumper, allow_unicode=True, ...)
              with Salt's yaml_out arguments: default_flow_style=False, plus
              indent=INDENT when INDENT >= 0, or default_flow_style=True and
              indent=0 when INDENT < 0. CSafeDumper (libyaml) is what Salt's
              salt.utils.yaml.safe_dump uses when PyYAML has libyaml.
  yaml-pure   the same with yaml.SafeDumper, the pure-Python emitter that
              yaml.safe_dump uses
  raw         str(v)
  pformat     pprint.pformat(v)

Salt right-strips the text and prints it with one newline; so does this script,
so its output compares byte for byte with brine::output::Render.
"""
import json
import pprint
import sys

import yaml


def main():
    outputter = sys.argv[1]
    indent = None if len(sys.argv) < 3 or sys.argv[2] == "none" else int(sys.argv[2])
    value = json.loads(sys.stdin.buffer.read().decode("utf-8"), object_pairs_hook=dict)
    if outputter == "json":
        text = json.dumps(value, indent=4 if indent is None else (indent if indent >= 0 else None),
                          ensure_ascii=False)
    elif outputter in ("yaml", "yaml-pure"):
        dumper = yaml.CSafeDumper if outputter == "yaml" else yaml.SafeDumper
        params = {"default_flow_style": False}
        if indent is not None:
            if indent >= 0:
                params["indent"] = indent
            else:
                params = {"default_flow_style": True, "indent": 0}
        text = yaml.dump(value, Dumper=dumper, allow_unicode=True, **params)
    elif outputter == "raw":
        text = str(value)
    elif outputter == "pformat":
        text = pprint.pformat(value)
    else:
        sys.exit("unknown outputter " + outputter)
    text = text.rstrip()
    if text:
        sys.stdout.buffer.write((text + "\n").encode("utf-8", "surrogateescape"))


if __name__ == "__main__":
    main()
