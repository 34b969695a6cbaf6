"""
brine as a Salt queue backend: ``salt-run queue.insert myqueue item backend=brine``.

Each call runs ``brine-run --out json queue.<op> ...`` and returns its decoded
output, so Salt's queue runner and brine-run see the same queues, and FIFO
order and atomic pops are implemented once, in brine-run (README, "Queue").

brine-run must be on the Salt master's PATH; it reads the master config from the
folder of ``conf_file``.
"""

import json
import logging
import os
import shutil
import subprocess

try:
    from salt.exceptions import SaltInvocationError
except ImportError:  # outside Salt (tests): the same name, the same role

    class SaltInvocationError(Exception):
        """A queue call brine-run refused."""


log = logging.getLogger(__name__)

__virtualname__ = "brine"


def _run_bin():
    return shutil.which("brine-run")


def __virtual__():
    if _run_bin() is None:
        return False, "the brine queue backend needs brine-run on PATH"
    return __virtualname__


def _needs_raw(text):
    """Whether salt-run's argument typing keeps `text` as the string it is
    (spec salt-queue-and-tests.md 1.2): then it is passed unquoted."""
    stripped = text.strip()
    if not stripped or text in ("---", "...") or "#" in text:
        return True
    if any(c in text for c in "\t\r\n"):
        return True
    return "_" in text and all(c.isdigit() or c == "_" for c in text)


def _arg(value):
    """One command-line word that brine-run's typing turns back into `value`."""
    if isinstance(value, str):
        return value if _needs_raw(value) else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _run(op, **kwargs):
    cmd = [_run_bin() or "brine-run"]
    conf_file = __opts__.get("conf_file")
    if conf_file:
        cmd += ["-c", os.path.dirname(conf_file)]
    cmd += ["--out", "json", "queue." + op]
    # Keyword arguments only: a positional word with "=" in it would be read as one.
    cmd += ["{}={}".format(k, _arg(v)) for k, v in kwargs.items()]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    err = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        prefix = "brine-run: "
        raise SaltInvocationError(err[len(prefix):] if err.startswith(prefix) else err)
    out = proc.stdout.decode("utf-8")
    return json.loads(out) if out.strip() else None


def insert(queue, items):
    """Adds `items` (one item, or a list of them) to the end of `queue`."""
    return _run("insert", queue=queue, items=items)


def delete(queue, items):
    """Removes `items` (one item, or a list of them) from `queue`."""
    return _run("delete", queue=queue, items=items)


def list_queues():
    """Every queue name any call has named."""
    return _run("list_queues")


def list_length(queue):
    """How many items `queue` holds."""
    return _run("list_length", queue=queue)


def list_items(queue):
    """The items of `queue`, oldest first."""
    return _run("list_items", queue=queue)


def pop(queue, quantity=1, is_runner=False):
    """Removes and returns the oldest `quantity` items ("all" for every one)."""
    if is_runner:
        return _run("pop", queue=queue, quantity=quantity, is_runner=True)
    return _run("pop", queue=queue, quantity=quantity)
