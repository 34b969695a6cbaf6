"""
brine as a Salt queue backend: ``salt-run queue.insert myqueue item backend=brine``.

Each call runs ``brine-run --out json --kwargs-stdin queue.<op>`` with its
arguments as one JSON object on standard input (Linux caps one command-line
word at 128 KiB; a queue item can be bigger) and returns the decoded output,
so Salt's queue runner and brine-run see the same queues, and FIFO order and
atomic pops are implemented once, in brine-run (docs/salt.md, "The queue").

brine-run must be on the Salt master's PATH; it reads the master config from the
folder of ``conf_file``. A call that runs longer than ``brine.queue_timeout_s``
(default 60) is stopped. brine-run's exit code 2 (a refused call) raises
SaltInvocationError; any other failure raises CommandExecutionError with
brine-run's message.
"""

import json
import logging
import os
import shutil
import subprocess

try:
    from salt.exceptions import CommandExecutionError, SaltInvocationError
except ImportError:  # outside Salt (tests): the same names, the same roles

    class SaltInvocationError(Exception):
        """A queue call brine-run refused."""

    class CommandExecutionError(Exception):
        """A queue call that failed while it ran."""


log = logging.getLogger(__name__)

__virtualname__ = "brine"


def _run_bin():
    return shutil.which("brine-run")


def __virtual__():
    if _run_bin() is None:
        return False, "the brine queue backend needs brine-run on PATH"
    return __virtualname__


def _timeout_s():
    value = __opts__.get("brine.queue_timeout_s")
    nested = __opts__.get("brine")
    if value is None and isinstance(nested, dict):
        value = nested.get("queue_timeout_s")
    try:
        return max(1, int(value)) if value is not None else 60
    except (TypeError, ValueError):
        return 60


def _run(op, **kwargs):
    cmd = [_run_bin() or "brine-run"]
    conf_file = __opts__.get("conf_file")
    if conf_file:
        cmd += ["-c", os.path.dirname(conf_file)]
    cmd += ["--out", "json", "--kwargs-stdin", "queue." + op]
    try:
        proc = subprocess.run(
            cmd,
            input=json.dumps(kwargs, ensure_ascii=False).encode("utf-8"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=_timeout_s(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandExecutionError(
            "brine-run queue.{} did not finish within {} s (brine.queue_timeout_s)".format(op, _timeout_s())
        )
    except OSError as exc:
        raise CommandExecutionError("cannot run brine-run: {}".format(exc))
    err = proc.stderr.decode("utf-8", "replace").strip()
    prefix = "brine-run: "
    message = err[len(prefix) :] if err.startswith(prefix) else err
    if proc.returncode == 2:
        raise SaltInvocationError(message)
    if proc.returncode != 0:
        raise CommandExecutionError(
            "brine-run queue.{} failed (exit {}): {}".format(op, proc.returncode, message or "no message")
        )
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
