#!/usr/bin/env python3
"""Reference renderings for tests/output_test.cpp and output_highstate_test.cpp,
made by Python itself.

usage: render.py < cases.json > results

Reads a JSON array of cases [outputter, indent, value] in brine's storage JSON
(a string may carry \\udcXX for a byte that is not UTF-8: Python's
surrogateescape) and writes, for each case in order, `<byte length>\\n<bytes>`:
what Python prints for the value. indent is null when --out-indent is not
given.

  json        json.dumps(v, indent=..., ensure_ascii=False): indent 4 when
              null, one line (indent=None) when negative
  yaml        yaml.dump(v, Dumper=yaml.CSafeDumper, allow_unicode=True, ...)
              with Salt's yaml_out arguments: default_flow_style=False, plus
              indent=N when N >= 0, or default_flow_style=True and indent=0
              when N < 0. CSafeDumper (libyaml) is what Salt's
              salt.utils.yaml.safe_dump uses when PyYAML has libyaml.
  yaml-pure   the same with yaml.SafeDumper, PyYAML's pure-Python emitter
              (what yaml.safe_dump uses)
  raw         str(v)
  txt         per dict item f"{key}: {line}" for each line of a str value
              (str.splitlines) or f"{key}: {value}"; a str as it is; any
              other value pprint.pformat(v)
  warnings    the Warnings line of Salt's highstate outputter for a state whose
              warnings are v (a list of str): textwrap.TextWrapper(width=80,
              initial_indent=' '*14, subsequent_indent=' '*14) filling
              "\n".join(v), left-stripped, after "    Warnings: "

Salt right-strips the text and prints it with one newline, and so does this
script, so a result compares byte for byte with brine::output::Render.
"""
import json
import pprint
import sys
import textwrap

import yaml


def render(outputter, indent, value):
    if outputter == "json":
        return json.dumps(value, indent=4 if indent is None else (indent if indent >= 0 else None),
                          ensure_ascii=False)
    if outputter in ("yaml", "yaml-pure"):
        if not yaml.__with_libyaml__ and outputter == "yaml":
            sys.exit("render.py: this PyYAML has no libyaml (CSafeDumper)")
        dumper = yaml.CSafeDumper if outputter == "yaml" else yaml.SafeDumper
        params = {"default_flow_style": False}
        if indent is not None:
            if indent >= 0:
                params["indent"] = indent
            else:
                params = {"default_flow_style": True, "indent": 0}
        return yaml.dump(value, Dumper=dumper, allow_unicode=True, **params)
    if outputter == "raw":
        return str(value)
    if outputter == "txt":
        if isinstance(value, dict):
            text = ""
            for key, item in value.items():
                if isinstance(item, str):
                    text += "".join(f"{key}: {line}\n" for line in item.splitlines())
                else:
                    text += f"{key}: {item}\n"
            return text
        if isinstance(value, str):
            return value
        return pprint.pformat(value)
    if outputter == "warnings":
        wrapper = textwrap.TextWrapper(width=80, initial_indent=" " * 14, subsequent_indent=" " * 14)
        return "    Warnings: " + wrapper.fill("\n".join(value)).lstrip()
    sys.exit("render.py: unknown outputter " + outputter)


def main():
    cases = json.loads(sys.stdin.buffer.read().decode("utf-8"), object_pairs_hook=dict)
    out = sys.stdout.buffer
    for outputter, indent, value in cases:
        text = render(outputter, indent, value).rstrip()
        data = (text + "\n").encode("utf-8", "surrogateescape") if text else b""
        out.write(b"%d\n" % len(data))
        out.write(data)


if __name__ == "__main__":
    main()
