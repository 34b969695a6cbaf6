#!/usr/bin/python3
"""Reference typing of salt-run CLI words, for tests/runner_cli_test.cpp.

usage: yamlify.py WORDS.json > typed

Reads a JSON array of CLI words and writes, one line per word, the JSON of the
value salt-run would pass to the runner: salt.utils.args.yamlify_arg with the
rules of salt-queue-and-tests.md section 1.2, over Salt's YAML loader
(PyYAML's SafeLoader with SaltYamlSafeLoader's changes: an unsigned int written
with leading zeros loses them, so 010 is 10, not octal 8; timestamps stay text;
a key given twice is an error). Each line is
json.dumps(v, separators=(",", ":"), ensure_ascii=False), so it compares with
brine::ToJson in Python style without spaces.
"""
import json
import sys

import yaml


class SaltYamlSafeLoader(yaml.SafeLoader):
    """The parts of salt.utils.yamlloader.SaltYamlSafeLoader that type scalars."""

    def construct_scalar(self, node):
        if node.tag == "tag:yaml.org,2002:int":
            if node.value != "0" and node.value.startswith("0") and not node.value.startswith(("0b", "0x")):
                node.value = node.value.lstrip("0") or "0"
        return super().construct_scalar(node)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"found conflicting ID '{key}'", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


SaltYamlSafeLoader.add_constructor("tag:yaml.org,2002:timestamp", SaltYamlSafeLoader.construct_scalar)


def safe_load(text):
    return yaml.load(text, Loader=SaltYamlSafeLoader)


def yamlify_arg(arg):
    """salt.utils.args.yamlify_arg, with spec 1.2's skips."""
    if not isinstance(arg, str):
        return arg
    if arg.strip() in ("", "---", "..."):
        return arg
    if "_" in arg and all(x in "0123456789_" for x in arg.strip()):
        return arg
    if any(c in arg for c in "\t\r\n"):
        return arg
    original = arg
    try:
        if "#" in arg:
            parsed = safe_load(arg)
            if isinstance(parsed, str) or parsed is None:
                return arg
            return parsed
        value = None if arg == "None" else safe_load(arg)
        if isinstance(value, dict):
            return value if original.startswith("{") else original
        if isinstance(value, list):
            return value if original.startswith("[") else original
        if value is None or isinstance(value, (float, int, str)):
            if value == "" and original in ("|", "!"):
                return original
            if value is None and original.strip().startswith("#"):
                return original
            if value is None and original == "!":
                return original
            return value
        return original  # a type salt-run does not pass on (datetime, bytes, set)
    except Exception:  # noqa: BLE001 - Salt's own catch-all
        return original


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        words = json.load(f)
    for word in words:
        print(json.dumps(yamlify_arg(word), separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    main()
