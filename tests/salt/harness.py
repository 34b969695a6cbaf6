"""Test support for the Salt plug-ins: a real brine-master in a temp dir, the
plug-in modules loaded the way Salt's loader loads them, and read-only
queries against the store."""

import importlib.util
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get(
    "BRINE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
)
BIN_DIR = os.environ.get("BRINE_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
RETURNER_PATH = os.path.join(SOURCE_DIR, "contrib", "salt", "returners", "brine.py")
QUEUE_PATH = os.path.join(SOURCE_DIR, "contrib", "salt", "queues", "brine.py")

_counter = itertools.count()


def jid_now(n=0):
    """A jid of this second ending in n. Tests use jids of now because a fixed
    day falls out of keep_jobs (24 h) and retention would purge it."""
    return "{}{:06d}".format(time.strftime("%Y%m%d%H%M%S", time.gmtime()), n)


def stamp_now():
    """An event's _stamp of this second, for the same reason as jid_now."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000", time.gmtime())


def load_module(path, opts, context=None):
    """Imports `path` as a fresh module and injects Salt's loader dunders
    (__opts__, __context__, __salt__, __grains__, __pillar__) as module
    globals, which is what salt.loader.LazyLoader does."""
    name = "salt_loaded_brine_{}".format(next(_counter))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__opts__ = opts
    module.__context__ = context if context is not None else {}
    module.__salt__ = {}
    module.__grains__ = {}
    module.__pillar__ = {}
    return module


def brine_run(conf_dir, *args):
    """`brine-run -c CONF_DIR --out json ARGS...`, decoded; fails on a non-zero exit."""
    out = subprocess.run(
        [os.path.join(BIN_DIR, "brine-run"), "-c", conf_dir, "--out", "json"] + list(args),
        stdout=subprocess.PIPE,
        check=True,
    )
    return json.loads(out.stdout)


class BrineMaster:
    """brine-master on a config folder of its own."""

    def __init__(self, extra_config=""):
        self._tmp = tempfile.TemporaryDirectory(prefix="brine-salt-")
        self.dir = self._tmp.name
        self.conf_dir = os.path.join(self.dir, "conf")
        self.cachedir = os.path.join(self.dir, "cache")
        self.sock_dir = os.path.join(self.dir, "sock")
        self.database = os.path.join(self.cachedir, "brine.sqlite")
        self.spool_dir = os.path.join(self.cachedir, "brine-spool")
        self.log_file = os.path.join(self.dir, "log", "brine-master")
        os.makedirs(self.conf_dir)
        with open(os.path.join(self.conf_dir, "master"), "w") as f:
            f.write(
                "id: test_master\n"
                "cachedir: {}\n"
                "brine.bus: bind\n"
                "brine.sock_dir: {}\n"
                "brine.log_file: {}\n"
                "brine.log_level: debug\n".format(self.cachedir, self.sock_dir, self.log_file)
            )
            f.write(extra_config)
        self.proc = None

    @property
    def pull_endpoint(self):
        return "ipc://" + os.path.join(self.sock_dir, "master_event_pull.ipc")

    @property
    def pub_endpoint(self):
        return "ipc://" + os.path.join(self.sock_dir, "master_event_pub.ipc")

    def start(self):
        for name in ("master_event_pull.ipc", "master_event_pub.ipc", "brine_cache.ipc"):
            try:  # left by a killed brine-master; brine-master would remove them too
                os.unlink(os.path.join(self.sock_dir, name))
            except FileNotFoundError:
                pass
        self.proc = subprocess.Popen(
            [os.path.join(BIN_DIR, "brine-master"), "-c", self.conf_dir],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        sockets = [os.path.join(self.sock_dir, name) for name in ("master_event_pull.ipc", "master_event_pub.ipc", "brine_cache.ipc")]
        deadline = time.monotonic() + 20
        while not all(os.path.exists(path) for path in sockets):
            if self.proc.poll() is not None:
                raise RuntimeError("brine-master exited: " + self.proc.stderr.read().decode())
            if time.monotonic() > deadline:
                raise RuntimeError("brine-master did not bind its sockets")
            time.sleep(0.02)

    def stop(self):
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.proc = None
        return code

    def kill9(self):
        """SIGKILL: nothing brine-master holds in memory survives."""
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.proc = None

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None
        self._tmp.cleanup()

    def opts(self, **extra):
        """The Salt master's __opts__ as the plug-in sees them."""
        opts = {
            "__role": "master",
            "id": "test_master",
            "cachedir": self.cachedir,
            "sock_dir": os.path.join(self.dir, "salt-sock"),
            "conf_file": os.path.join(self.conf_dir, "master"),
            "brine.sock_dir": self.sock_dir,
            "brine.send_timeout_ms": 2000,
            "ipc_mode": "ipc",
            "unique_jid": False,
            "job_cache_store_endtime": False,
        }
        opts.update(extra)
        return opts

    def query(self, sql, params=()):
        conn = sqlite3.connect("file:{}?mode=ro".format(self.database), uri=True, timeout=10)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def counters(self):
        if not os.path.exists(self.database):
            return {}
        return dict(self.query("SELECT name, value FROM brine_counters"))

    def wait_for(self, predicate, timeout=30, what="the store"):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if predicate():
                    return
            except sqlite3.OperationalError:
                pass  # the store is being created
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for " + what + "; counters " + repr(self.counters()))
            time.sleep(0.05)

    def wait_received(self, n, timeout=30):
        self.wait_for(lambda: self.counters().get("received", 0) >= n, timeout, "{} frames".format(n))


class MasterTestCase(unittest.TestCase):
    """Starts a brine-master per test."""

    extra_config = ""

    def setUp(self):
        self.master = BrineMaster(self.extra_config)
        self.addCleanup(self.master.close)
        self.master.start()
