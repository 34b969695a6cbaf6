"""Issue 13: the plug-in's writes are acknowledged. A call returns only once
brine-master committed its frames or they are fsynced into the spool, so a
read right after it (from any process) sees the write in every state of
brine-master, a kill -9 loses nothing acknowledged, and with
master_job_cache: brine the plug-in alone fills the job cache."""

import glob
import importlib.util
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
import unittest

import msgpack
import zmq

from harness import brine_run, jid_now, stamp_now, RETURNER_PATH, BrineMaster, MasterTestCase, load_module

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "plugin_worker.py")


def start_worker(opts, mode, name="-", log="-", user=None, stdin=None):
    """plugin_worker.py as a process of its own (a Salt MWorker, salt-run...)."""
    preexec = None
    if user is not None:
        pw = pwd.getpwnam(user)

        def preexec():  # pylint: disable=function-redefined
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)

    return subprocess.Popen(
        [sys.executable, WORKER, json.dumps(opts), mode, name, log],
        cwd=HERE,
        stdin=stdin,
        stdout=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=preexec,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )


def wait_spool_empty(master, timeout=60):
    deadline = time.monotonic() + timeout
    while glob.glob(os.path.join(master.spool_dir, "*.frames*")):
        if time.monotonic() > deadline:
            raise AssertionError("the spool was not filed: " + repr(os.listdir(master.spool_dir)))
        time.sleep(0.1)


def flood(endpoint, stop):
    """Salt's own events at full speed onto brine-master's bus."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    frame = b"salt/flood/event\n\n" + msgpack.packb({"payload": "x" * 400, "_stamp": stamp_now()})
    sent = 0
    while not stop.is_set():
        try:
            sock.send(frame, zmq.NOBLOCK)
            sent += 1
        except zmq.Again:
            time.sleep(0.0005)
    sock.close()
    ctx.term()
    return sent


class ReadYourWritesTest(unittest.TestCase):
    """1,000 x (save_load in process A, then get_load in process B at once)."""

    N = 1000

    def setUp(self):
        self.master = BrineMaster("loop_interval: 1\n")
        self.addCleanup(self.master.close)
        self.master.start()
        # The idle case checks that every save went the acknowledged way
        # (acked_refused == 0), so a loaded machine must not expire one: it
        # waits 30 s. The others need a short wait to fall back to the spool.
        idle = self._testMethodName == "test_a_save_is_read_back_with_brine_master_idle"
        opts = self.master.opts(**{"brine.send_timeout_ms": 30000 if idle else 2000})
        self.writer = start_worker(opts, "save_load", stdin=subprocess.PIPE)
        self.reader = start_worker(opts, "get_load", stdin=subprocess.PIPE)
        for proc in (self.writer, self.reader):
            self.addCleanup(self.stop_worker, proc)
        self.seq = 0
        self.jid_prefix = jid_now()[:14]

    @staticmethod
    def stop_worker(proc):
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()

    def rounds(self, n):
        """Returns how many of n reads right after the save came back empty."""
        empty = 0
        for _ in range(n):
            self.seq += 1
            jid = "{}{:06d}".format(self.jid_prefix, self.seq)
            self.writer.stdin.write((jid + "\n").encode())
            self.writer.stdin.flush()
            self.assertEqual(self.writer.stdout.readline(), b"ok\n")
            self.reader.stdin.write((jid + "\n").encode())
            self.reader.stdin.flush()
            answer = self.reader.stdout.readline()
            self.assertIn(answer, (b"0\n", b"1\n"))
            empty += answer == b"0\n"
        return empty

    def assert_all_loads_stored(self):
        self.master.wait_for(
            lambda: self.master.query("SELECT count(*) FROM brine_api_v1_job")[0][0] == self.seq,
            what="{} loads in the store".format(self.seq),
        )

    def test_a_save_is_read_back_with_brine_master_idle(self):
        self.assertEqual(self.rounds(self.N), 0)
        self.assertEqual(self.master.counters()["acked_refused"], 0)
        self.assert_all_loads_stored()

    def test_a_save_is_read_back_under_a_bus_flood(self):
        stop = threading.Event()
        result = {}
        flooder = threading.Thread(target=lambda: result.update(sent=flood(self.master.pull_endpoint, stop)))
        flooder.start()
        try:
            time.sleep(0.5)  # the bus backlog builds up
            empty = self.rounds(self.N)
        finally:
            stop.set()
            flooder.join()
        self.assertEqual(empty, 0)
        self.assertGreater(result["sent"], 10000)
        self.assert_all_loads_stored()

    def test_a_save_is_read_back_with_brine_master_stopped_then_restarted(self):
        self.assertEqual(self.master.stop(), 0)
        self.assertEqual(self.rounds(self.N), 0)  # from the spool
        self.assertTrue(glob.glob(os.path.join(self.master.spool_dir, "*.frames")))
        self.master.start()
        self.assertEqual(self.rounds(self.N), 0)  # the spool being filed meanwhile
        self.assert_all_loads_stored()
        wait_spool_empty(self.master)

    def test_a_save_is_read_back_after_brine_master_was_killed(self):
        self.assertEqual(self.rounds(100), 0)
        self.master.kill9()
        self.assertEqual(self.rounds(self.N // 2), 0)
        self.master.start()
        self.assertEqual(self.rounds(self.N // 2), 0)
        self.assert_all_loads_stored()


class KillNineTest(unittest.TestCase):
    """Processes call the plug-in at full speed; brine-master is killed with
    SIGKILL and restarted. Everything a returned call wrote is in the store."""

    ROUNDS = int(os.environ.get("BRINE_KILL_ROUNDS", "10"))

    def setUp(self):
        self.master = BrineMaster("loop_interval: 1\n")
        self.addCleanup(self.master.close)
        self.master.start()
        self.opts = self.master.opts(**{"brine.send_timeout_ms": 500})
        self.logs = os.path.join(self.master.dir, "acked")
        os.makedirs(self.logs)

    def run_rounds(self, mode, workers, rounds):
        losses, acked = [], []
        for r in range(rounds):
            names = ["r{}w{}".format(r, i) for i in range(workers)]
            procs = [start_worker(self.opts, mode, n, os.path.join(self.logs, n)) for n in names]
            try:
                # Every worker is calling the plug-in (Python's start-up is slow
                # on a loaded machine), then they go on for a while.
                deadline = time.monotonic() + 60
                while not all(os.path.exists(os.path.join(self.logs, n)) and os.path.getsize(os.path.join(self.logs, n))
                              for n in names):
                    self.assertLess(time.monotonic(), deadline, "the workers did not start")
                    time.sleep(0.05)
                time.sleep(0.5)
                self.master.kill9()
                time.sleep(0.3)  # the workers spool meanwhile
                self.master.start()
                time.sleep(0.5)
            finally:
                for p in procs:
                    p.send_signal(signal.SIGTERM)
                for p in procs:
                    p.wait(timeout=60)
                    err = p.stderr.read().decode()
                    p.stderr.close()
                    self.assertNotIn("Traceback", err)
                    self.assertNotIn("lost", err)
            wait_spool_empty(self.master)
            logged = set()
            for n in names:
                with open(os.path.join(self.logs, n)) as f:
                    logged.update(line.rstrip("\n") for line in f)
            stored = set(self.stored(r))
            losses.append(len(logged - stored))
            acked.append(len(logged))
        print("\n{}: acknowledged per round {}, lost {}".format(mode, acked, losses), file=sys.stderr)
        self.assertTrue(all(a > 0 for a in acked))
        self.assertEqual(losses, [0] * rounds)
        self.assertEqual(self.master.counters().get("duplicates", 0), 0)

    def test_every_acknowledged_return_survives_kill_9(self):
        self.stored = lambda r: (
            "{} {}".format(jid, minion)
            for jid, minion in self.master.query("SELECT jid, id FROM salt_returns WHERE id LIKE ?", ("r{}w%".format(r),))
        )
        self.run_rounds("returner", 8, self.ROUNDS)

    def test_every_acknowledged_event_return_batch_survives_kill_9(self):
        self.stored = lambda r: (
            tag for (tag,) in self.master.query("SELECT tag FROM salt_events WHERE tag LIKE ?", ("brine-test/r{}w%".format(r),))
        )
        self.run_rounds("event_return", 4, 3)


class ModuleStateTest(MasterTestCase):
    def test_the_module_body_run_twice_and_two_threads_share_one_socket(self):
        opts = self.master.opts()
        mod = load_module(RETURNER_PATH, opts)
        mod.returner({"id": "t0", "jid": jid_now(1), "fun": "test.ping", "return": True})
        state = sys.modules["_brine_returner_process_state"].state
        fds = len(os.listdir("/proc/self/fd"))
        # Salt's second loader in this process re-executes the body in the same module object...
        importlib.util.spec_from_file_location(mod.__name__, RETURNER_PATH).loader.exec_module(mod)
        mod.__opts__ = opts
        # ...and another loader may hold a module object of its own.
        other = load_module(RETURNER_PATH, opts)
        errors = []

        def calls(module, minion):
            try:
                for i in range(300):
                    module.returner({"id": minion, "jid": jid_now(i), "fun": "test.ping",
                                     "return": i})
            except Exception as exc:  # pylint: disable=broad-except
                errors.append(exc)

        threads = [threading.Thread(target=calls, args=(m, n)) for m, n in ((mod, "t1"), (other, "t2"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertIs(sys.modules["_brine_returner_process_state"].state, state)
        self.assertEqual(len(os.listdir("/proc/self/fd")), fds)
        self.assertEqual(self.master.query("SELECT count(*) FROM salt_returns")[0][0], 601)
        self.assertFalse(glob.glob(os.path.join(self.master.spool_dir, "*")))
        self.assertEqual(self.master.counters()["acked"], 601)


def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
        return pwd.getpwnam(name)


@unittest.skipUnless(os.geteuid() == 0, "needs root to act as the Salt master's user and as root")
class SpoolOwnersTest(unittest.TestCase):
    USER = "brine-spooltest"

    def setUp(self):
        self.pw = ensure_user(self.USER)
        self.master = BrineMaster("user: {}\nloop_interval: 1\n".format(self.USER))
        self.addCleanup(self.master.close)
        os.chmod(self.master.dir, 0o755)  # the service user reaches its folders
        os.makedirs(self.master.cachedir)
        os.chown(self.master.cachedir, self.pw.pw_uid, self.pw.pw_gid)  # Salt gives it to `user`
        # brine-master is not running: every write goes to the spool.
        self.opts = self.master.opts(user=self.USER, **{"brine.send_timeout_ms": 200})

    def one_return(self, jid, minion, user):
        proc = start_worker(self.opts, "one_return", "{}:{}".format(jid, minion), user=user)
        proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("lost", err)

    def check_spool_and_filing(self, expected):
        st = os.stat(self.master.spool_dir)
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (self.pw.pw_uid, 0o700))
        files = glob.glob(os.path.join(self.master.spool_dir, "*.frames"))
        self.assertEqual(len(files), len(expected))
        for path in files:
            self.assertEqual(os.stat(path).st_uid, self.pw.pw_uid, path)
        self.master.start()
        wait_spool_empty(self.master)
        rows = set(self.master.query("SELECT jid, id FROM salt_returns"))
        self.assertEqual(rows, set(expected))

    def test_the_service_user_spools_first_then_root(self):
        a, b = jid_now(1), jid_now(2)
        self.one_return(a, "a", self.USER)
        self.one_return(b, "b", None)
        self.check_spool_and_filing([(a, "a"), (b, "b")])

    def test_root_spools_first_then_the_service_user(self):
        c, d = jid_now(3), jid_now(4)
        self.one_return(c, "c", None)
        self.one_return(d, "d", self.USER)
        self.check_spool_and_filing([(c, "c"), (d, "d")])


class OneAuthorityTest(MasterTestCase):
    """master_job_cache: brine: bus returns are archived as events only."""

    extra_config = "master_job_cache: brine\n"

    def brine_run(self, *args):
        return brine_run(self.master.conf_dir, *args)

    def test_a_forged_bus_return_before_the_real_one_does_not_win(self):
        mod = load_module(RETURNER_PATH, self.master.opts())
        jid = jid_now(1)
        mod.save_load(jid, {"cmd": "publish", "jid": jid, "fun": "cmd.run", "arg": ["df"], "tgt": "web1",
                            "tgt_type": "glob", "user": "root"}, ["web1"])
        forged = {"cmd": "_return", "id": "web1", "jid": jid, "fun": "cmd.run", "fun_args": ["df"],
                  "return": "all good", "retcode": 0, "success": True}
        # A minion fires it on Salt's bus; Salt's EventReturn hands it to event_return.
        mod.event_return([{"tag": "salt/job/{}/ret/web1".format(jid), "data": forged}])
        # exit_success reads the truth of each minion's return (salt/runners/jobs.py).
        real = dict(forged, **{"return": "", "retcode": 1, "success": False})
        mod.returner(real)
        mod.event_return([{"tag": "salt/job/{}/ret/web1".format(jid), "data": dict(real)}])
        self.assertEqual(self.brine_run("jobs.lookup_jid", jid), {"web1": ""})
        self.assertEqual(self.brine_run("jobs.exit_success", jid), {"web1": False})
        counters = self.master.counters()
        self.assertEqual((counters["returns"], counters["duplicates"], counters["plugin_is_job_cache"]), (1, 0, 1))
        stats = self.brine_run("brine.stats")["test_master"]
        self.assertEqual(stats["job_cache_source"], "the Salt plug-in (master_job_cache: brine)")
        self.assertEqual(stats["since_start"]["acked"], 4)
        # Both events are archived, the forged one with its own payload, the
        # real one sharing the stored return's.
        events = self.master.query("SELECT ret_id IS NOT NULL, data IS NULL FROM event ORDER BY id")
        self.assertEqual(events, [(0, 0), (1, 1)])

    def test_a_job_cache_frame_on_the_bus_is_quarantined(self):
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.PUSH)
        sock.connect(self.master.pull_endpoint)
        ret = {"cmd": "_return", "id": "web1", "jid": jid_now(2), "fun": "test.ping", "return": True}
        sock.send(b"brine/cache/return\n\n" + msgpack.packb(ret))
        sock.close(linger=2000)
        self.master.wait_for(lambda: self.master.counters().get("quarantined", 0) == 1, what="the quarantine")
        self.assertEqual(self.master.query("SELECT count(*) FROM salt_returns")[0][0], 0)
        reason = self.master.query("SELECT reason FROM quarantine")[0][0]
        self.assertIn("master_job_cache: brine", reason)


if __name__ == "__main__":
    unittest.main()
