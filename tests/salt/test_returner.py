"""The Salt returner plug-in (contrib/salt/returners/brine.py) against a real
brine-master, called the way a Salt master calls it (spec salt-jobs.md 3.1,
5, 7.1 and 10)."""

import os
import subprocess
import sys
import time
import unittest

import msgpack
import zmq

from harness import RETURNER_PATH, BrineMaster, MasterTestCase, load_module

MONTHS = ["", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def jid_to_time(jid):
    """Salt's jid_to_time, written from the spec (2.4)."""
    return "{}, {} {} {}:{}:{}.{}".format(
        jid[:4], MONTHS[int(jid[4:6])], jid[6:8], jid[8:10], jid[10:12], jid[12:14], jid[14:20]
    )


def publish_load(jid, fun="test.ping", tgt="*", arg=None, user="root"):
    """The clear_load a Salt master hands to save_load at publish (spec 3.1)."""
    return {
        "cmd": "publish",
        "tgt": tgt,
        "fun": fun,
        "arg": arg if arg is not None else [],
        "tgt_type": "glob",
        "ret": "",
        "jid": jid,
        "kwargs": {"show_jid": False, "delimiter": ":"},
        "user": user,
    }


def return_load(jid, minion, ret=True, fun="test.ping", fun_args=None, retcode=0, success=True):
    return {
        "cmd": "_return",
        "id": minion,
        "jid": jid,
        "fun": fun,
        "fun_args": fun_args if fun_args is not None else [],
        "return": ret,
        "retcode": retcode,
        "success": success,
    }


def store_job(mod, load, event_return=None, stamp="2024-01-01T12:00:01.000001"):
    """What salt.utils.job.store_job does with a return when brine is the
    master_job_cache (spec 7.1): defaults, prep_jid, the ret event (whose
    _stamp the event layer writes into the load itself), save_load, returner."""
    load.setdefault("arg", load.get("fun_args", []))
    load.setdefault("tgt_type", "glob")
    load.setdefault("tgt", load["id"])
    mod.prep_jid(False, passed_jid=load["jid"])
    load["_stamp"] = stamp
    if event_return is not None:
        event_return.event_return([{"tag": "salt/job/{}/ret/{}".format(load["jid"], load["id"]), "data": load}])
    mod.save_load(load["jid"], load)
    mod.returner(load)


class ReturnerJobCacheTest(MasterTestCase):
    def setUp(self):
        super().setUp()
        self.mod = load_module(RETURNER_PATH, self.master.opts())
        self.assertEqual(self.mod.__virtual__(), "brine")

    def test_worked_example_comes_back_as_local_cache_gives_it(self):
        # Spec 4.3: test.ping to web1 and web2, web1 returned.
        jid = self.mod.prep_jid()
        self.assertRegex(jid, r"^\d{20}$")
        load = publish_load(jid)
        self.mod.save_load(jid, load, ["web1", "web2"])
        store_job(self.mod, return_load(jid, "web1"))
        self.master.wait_for(lambda: self.master.counters().get("returns") == 1)

        got = self.mod.get_load(jid)
        want = dict(load, Minions=["web1", "web2"])
        self.assertEqual(got, want)
        self.assertEqual(list(got), list(want))  # key order kept
        got_jid = self.mod.get_jid(jid)
        self.assertEqual(got_jid, {"web1": {"return": True, "retcode": 0, "success": True}})
        self.assertEqual(list(got_jid["web1"]), ["return", "retcode", "success"])
        jobs = self.mod.get_jids()
        want_instance = {
            "Function": "test.ping",
            "Arguments": [],
            "Target": "*",
            "Target-type": "glob",
            "User": "root",
            "StartTime": jid_to_time(jid),
        }
        self.assertEqual(jobs, {jid: want_instance})
        self.assertEqual(list(jobs[jid]), list(want_instance))
        ext = self.mod.get_jids_filter(10)
        self.assertEqual(
            [list(e.items()) for e in ext],
            [list(want_instance.items())[:5] + [("JID", jid), ("StartTime", jid_to_time(jid))]],
        )
        self.assertEqual(self.mod.get_minions(), ["web1"])
        fun = self.mod.get_fun("test.ping")
        self.assertEqual(list(fun), ["web1"])
        self.assertEqual(fun["web1"]["return"], True)
        self.assertEqual(fun["web1"]["id"], "web1")
        self.assertFalse(self.mod.get_endtime(jid))
        self.assertEqual(self.mod.get_load("20000101000000000000"), {})
        self.assertEqual(self.mod.get_jid("20000101000000000000"), {})
        self.assertIsNone(self.mod.clean_old_jobs())

    def test_return_load_never_replaces_the_publish_load(self):
        # Case C6: store_job hands the return to save_load too (spec 7.1 step 11).
        jid = self.mod.prep_jid()
        self.mod.save_load(jid, publish_load(jid, fun="test.echo", tgt="m1", arg=["target_info_test"]), ["m1"])
        store_job(self.mod, return_load(jid, "m1", ret="target_info_test", fun="test.echo", fun_args=["target_info_test"]))
        # And the publish load reaching brine after a return-derived one replaces it.
        jid2 = self.mod.prep_jid()
        store_job(self.mod, return_load(jid2, "m2", fun="test.echo", fun_args=["x"]))
        self.master.wait_for(lambda: self.master.counters().get("returns") == 2)
        self.assertEqual(self.mod.get_jids()[jid2]["Target"], "m2")  # store_job's stub meanwhile
        self.mod.save_load(jid2, publish_load(jid2, fun="test.echo", tgt="m*", arg=["x"]), ["m2"])
        self.master.wait_for(lambda: self.master.counters().get("cache_writes", 0) >= 6)

        jobs = self.mod.get_jids()
        self.assertEqual(jobs[jid]["Target"], "m1")
        self.assertEqual(jobs[jid]["Target-type"], "glob")
        self.assertEqual(jobs[jid]["Arguments"], ["target_info_test"])
        self.assertEqual(self.mod.get_load(jid)["cmd"], "publish")
        self.assertEqual(jobs[jid2]["Target"], "m*")
        self.assertEqual(self.mod.get_load(jid2)["Minions"], ["m2"])

    def test_an_event_copy_of_the_load_does_not_replace_the_masters_publish_load(self):
        jid = self.mod.prep_jid()
        self.mod.save_load(jid, publish_load(jid), ["web1"])
        self.mod.event_return(
            [
                {
                    "tag": "salt/job/{}/new".format(jid),
                    "data": {"jid": jid, "tgt_type": "glob", "tgt": "*", "user": "root", "fun": "test.ping",
                             "arg": [], "minions": ["web1", "web2"], "missing": [], "_stamp": "x"},
                }
            ]
        )
        self.master.wait_received(2)
        load = self.mod.get_load(jid)
        self.assertEqual(load["cmd"], "publish")
        self.assertEqual(load["kwargs"], {"show_jid": False, "delimiter": ":"})
        self.assertEqual(load["Minions"], ["web1", "web2"])

    def test_minion_lists_of_one_jid_merge(self):
        # Case D14: a batch job saves its load once, then each batch's minions.
        jid = self.mod.prep_jid()
        self.mod.save_load(jid, {"fun": "state.sls", "jid": jid, "tgt": "", "tgt_type": "list", "user": "root"})
        self.mod.save_minions(jid, ["m3", "m1"])
        self.mod.save_minions(jid, ["m4", "m2"], syndic_id="syndic1")
        self.master.wait_received(3)
        load = self.mod.get_load(jid)
        self.assertEqual(load["jid"], jid)
        self.assertEqual(load["Minions"], ["m1", "m2", "m3", "m4"])

    def test_an_event_under_a_private_tag_on_salts_bus_never_reaches_the_job_cache(self):
        # A minion can fire any tag on the Salt master's bus (event.fire_master).
        jid = self.mod.prep_jid()
        forged = return_load(jid, "victim", ret="forged")
        self.mod.event_return(
            [
                {"tag": "brine/cache/return", "data": forged},
                {"tag": "brine/cache/save_load", "data": {"jid": jid, "load": publish_load(jid), "minions": None}},
                {"tag": "salt/test/after", "data": {}},
            ]
        )
        self.master.wait_received(1)
        self.assertEqual(self.master.counters()["received"], 1)
        self.assertEqual(self.mod.get_jid(jid), {})
        self.assertEqual(self.mod.get_load(jid), {})
        self.assertEqual(self.master.query("SELECT tag FROM salt_events"), [("salt/test/after",)])

    def test_req_jid_nocache_and_endtime(self):
        ret = return_load("req", "callme", fun="test.echo", fun_args=["hi"])
        self.mod.returner(ret)
        self.assertRegex(ret["jid"], r"^\d{20}$")  # allocated here, as local_cache does
        nocache_jid = self.mod.prep_jid(nocache=True)
        self.mod.returner(return_load(nocache_jid, "web1"))
        self.mod.update_endtime(ret["jid"], "2024, Jan 01 12:05:03.114477")
        self.master.wait_received(4)
        self.assertEqual(self.mod.get_jid(ret["jid"])["callme"]["return"], True)
        self.assertEqual(self.mod.get_jids()[ret["jid"]]["Target"], "callme")
        self.assertEqual(self.mod.get_jid(nocache_jid), {})
        self.assertEqual(self.mod.get_endtime(ret["jid"]), "2024, Jan 01 12:05:03.114477")
        # EndTime shows in get_jids only with job_cache_store_endtime.
        self.assertNotIn("EndTime", self.mod.get_jids()[ret["jid"]])
        self.mod.__opts__["job_cache_store_endtime"] = True
        self.assertEqual(self.mod.get_jids()[ret["jid"]]["EndTime"], "2024, Jan 01 12:05:03.114477")

    def test_unique_jid_adds_the_pid_and_increases(self):
        self.mod.__opts__["unique_jid"] = True
        jids = [self.mod.prep_jid() for _ in range(50)]
        self.assertTrue(all(j.endswith("_{}".format(os.getpid())) for j in jids))
        self.assertEqual(jids, sorted(set(jids)))


class BothWaysTest(MasterTestCase):
    """master_job_cache: brine and event_return: brine at once."""

    def test_a_return_both_ways_is_stored_once_archived_once_and_no_duplicate(self):
        cache = load_module(RETURNER_PATH, self.master.opts())
        events = load_module(RETURNER_PATH, self.master.opts())  # Salt's EventReturn process has its own
        ctx = zmq.Context.instance()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(self.master.pub_endpoint)
        self.addCleanup(sub.close, 0)
        time.sleep(0.3)  # the subscription reaches brine-master

        jid = cache.prep_jid()
        cache.save_load(jid, publish_load(jid), ["web1", "web2"])
        # web1: the event first; web2: the job cache first.
        store_job(cache, return_load(jid, "web1"), event_return=events)
        load2 = return_load(jid, "web2", ret=False, retcode=1, success=False)
        load2.update(arg=[], tgt_type="glob", tgt="web2", _stamp="2024-01-01T12:00:02.000002")
        cache.save_load(jid, load2)
        cache.returner(load2)
        events.event_return([{"tag": "salt/job/{}/ret/web2".format(jid), "data": load2}])
        self.master.wait_received(7)

        rows = self.master.query("SELECT id, count(*) FROM salt_returns WHERE jid = ? GROUP BY id ORDER BY id", (jid,))
        self.assertEqual(rows, [("web1", 1), ("web2", 1)])
        archived = self.master.query("SELECT tag FROM salt_events ORDER BY id")
        self.assertEqual(archived, [("salt/job/{}/ret/web1".format(jid),), ("salt/job/{}/ret/web2".format(jid),)])
        counters = self.master.counters()
        self.assertEqual(counters["duplicates"], 0)
        self.assertEqual(counters["returns"], 2)
        self.assertEqual(counters["stored"], 2)
        self.assertEqual(counters["cache_writes"], 5)
        self.assertEqual(counters["received"], counters["stored"] + counters["filtered"]
                         + counters["quarantined"] + counters["cache_writes"])
        self.assertEqual(cache.get_jid(jid)["web2"], {"return": False, "retcode": 1, "success": False})

        # Only bus events are republished, never the private job-cache frames.
        seen = []
        while sub.poll(500):
            seen.append(sub.recv().split(b"\n\n", 1)[0])
        self.assertEqual(seen, [b"salt/job/" + jid.encode() + b"/ret/web1", b"salt/job/" + jid.encode() + b"/ret/web2"])


    def test_a_return_salt_trimmed_for_its_bus_is_kept_whole_from_the_returner(self):
        cache = load_module(RETURNER_PATH, self.master.opts())
        events = load_module(RETURNER_PATH, self.master.opts())
        jid = cache.prep_jid()
        cache.save_load(jid, publish_load(jid, fun="cmd.run"), ["web1"])
        whole = return_load(jid, "web1", ret={"big": "x" * 5000, "small": 1}, fun="cmd.run")
        whole.update(arg=[], tgt_type="glob", tgt="web1", _stamp="2024-01-01T12:00:01.000001")
        # Salt trims an oversized event (max_event_size) before its bus carries it.
        trimmed = dict(whole, **{"return": {"big": "VALUE_TRIMMED", "small": 1}})
        events.event_return([{"tag": "salt/job/{}/ret/web1".format(jid), "data": trimmed}])
        self.master.wait_received(2)
        cache.save_load(jid, whole)
        cache.returner(whole)
        self.master.wait_received(4)
        self.assertEqual(cache.get_jid(jid), {"web1": {"return": whole["return"], "retcode": 0, "success": True}})
        counters = self.master.counters()
        self.assertEqual((counters["duplicates"], counters["returns"], counters["trimmed"]), (0, 1, 1))
        self.assertEqual(
            self.master.query("SELECT json_extract(data, '$.return.big') FROM salt_events"), [("VALUE_TRIMMED",)]
        )


class EventReturnBatchTest(MasterTestCase):
    extra_config = "brine.flush_interval_ms: 50\n"

    def test_a_batch_of_10000_events_arrives_whole_and_in_order(self):
        mod = load_module(RETURNER_PATH, self.master.opts())
        batch = [
            {"tag": "salt/test/batch/{}".format(i), "data": {"i": i, "_stamp": "2024-01-01T00:00:00.000000"}}
            for i in range(10000)
        ]
        t0 = time.monotonic()
        mod.event_return(batch)
        sent = time.monotonic() - t0
        self.master.wait_for(lambda: self.master.counters().get("stored", 0) >= 10000, 60, "10000 events")
        stored = time.monotonic() - t0
        rows = self.master.query("SELECT tag, json_extract(data, '$.i') FROM salt_events ORDER BY id")
        self.assertEqual(rows, [("salt/test/batch/{}".format(i), i) for i in range(10000)])
        self.assertFalse(os.path.exists(self.master.spool_dir))
        sys.stderr.write("event_return of 10,000 events: sent in {:.3f} s, committed after {:.3f} s\n".format(sent, stored))


class SpoolTest(unittest.TestCase):
    """brine-master stopped during a run."""

    def setUp(self):
        self.master = BrineMaster("loop_interval: 1\n")
        self.addCleanup(self.master.close)

    def test_frames_sent_while_brine_master_is_down_are_filed_after_a_restart(self):
        self.master.start()
        mod = load_module(RETURNER_PATH, self.master.opts(**{"brine.send_timeout_ms": 300}))
        jid = mod.prep_jid()
        mod.save_load(jid, publish_load(jid), ["web1", "web2", "web3"])
        mod.event_return([{"tag": "salt/test/live/0", "data": {"n": 0}}])
        self.master.wait_received(2)
        self.assertEqual(self.master.stop(), 0)

        t0 = time.monotonic()
        store_job(mod, return_load(jid, "web1"), event_return=mod)
        first_call = time.monotonic() - t0
        self.assertLess(first_call, 0.3 + 0.5)  # no call waits much past the timeout
        store_job(mod, return_load(jid, "web2"))
        mod.event_return([{"tag": "salt/test/down/{}".format(i), "data": {"n": i}} for i in range(1, 101)])
        spool = os.path.join(self.master.spool_dir, "{}.frames".format(os.getpid()))
        self.assertTrue(os.path.exists(spool))
        # A writer killed mid-append leaves a torn last record; the records
        # before it must all be filed.
        with open(spool, "ab") as f:
            f.write(b"BRS1\x00\x00\x01\x00salt/test/torn\n\n\x81")

        self.master.start()
        self.master.wait_for(lambda: not os.path.exists(spool) and not os.listdir(self.master.spool_dir),
                             30, "the spool to be filed")
        self.assertEqual(sorted(mod.get_jid(jid)), ["web1", "web2"])
        tags = [t for (t,) in self.master.query("SELECT tag FROM salt_events ORDER BY id")]
        self.assertEqual(tags[0], "salt/test/live/0")
        self.assertEqual(tags[1], "salt/job/{}/ret/web1".format(jid))
        self.assertEqual(tags[2:], ["salt/test/down/{}".format(i) for i in range(1, 101)])
        self.assertEqual(self.master.query("SELECT count(*) FROM quarantine"), [(1,)])
        self.assertEqual(mod.get_load(jid)["Minions"], ["web1", "web2", "web3"])

        # Back to live sends at once: each call connects again.
        mod.event_return([{"tag": "salt/test/live/1", "data": {"n": 1}}])
        self.assertFalse(os.path.exists(spool))
        self.master.wait_for(
            lambda: self.master.query("SELECT count(*) FROM salt_events WHERE tag = 'salt/test/live/1'") == [(1,)],
            30, "the live event")


    def test_a_connection_from_before_a_restart_is_replaced_and_the_write_is_acknowledged(self):
        self.master.start()
        mod = load_module(RETURNER_PATH, self.master.opts())
        jid = mod.prep_jid()
        self.assertTrue(mod._write([mod._frame("salt/test/before", {"n": 0})]))
        self.assertEqual(self.master.stop(), 0)
        self.master.start()
        # The process still holds its connection to the stopped brine-master:
        # the send finds it closed, and one fresh connection carries the write.
        self.assertTrue(mod._write([mod._frame("salt/test/after", {"n": 1})]))
        store_job(mod, return_load(jid, "web1"))
        self.assertFalse(os.path.exists(os.path.join(self.master.spool_dir, "{}.frames".format(os.getpid()))))
        self.assertEqual(sorted(mod.get_jid(jid)), ["web1"])


class NoEndpointTest(unittest.TestCase):
    def test_inside_a_salt_master_without_brine_sock_dir_nothing_goes_to_salts_bus(self):
        master = BrineMaster()
        self.addCleanup(master.close)
        opts = master.opts()
        del opts["brine.sock_dir"]
        os.makedirs(opts["sock_dir"])
        ctx = zmq.Context.instance()
        salt_bus = ctx.socket(zmq.PULL)  # stands for the Salt master's own bus
        salt_bus.bind("ipc://" + os.path.join(opts["sock_dir"], "master_event_pull.ipc"))
        self.addCleanup(salt_bus.close, 0)
        mod = load_module(RETURNER_PATH, opts)
        jid = mod.prep_jid()
        mod.save_load(jid, publish_load(jid), ["web1"])
        self.assertFalse(salt_bus.poll(500))
        with open(os.path.join(master.spool_dir, "{}.frames".format(os.getpid())), "rb") as f:
            data = f.read()
        self.assertTrue(data.startswith(b"BRS1"))
        self.assertIn(b"brine/cache/save_load\n\n", data)
        # A socket path ZeroMQ refuses (too long for a unix socket) spools too.
        size = os.path.getsize(os.path.join(master.spool_dir, "{}.frames".format(os.getpid())))
        mod_long = load_module(RETURNER_PATH, dict(opts, **{"brine.sock_dir": "/tmp/" + "x" * 200,
                                                             "brine.send_timeout_ms": 100}))
        mod_long.save_load(jid, publish_load(jid), ["web1"])
        self.assertGreater(os.path.getsize(os.path.join(master.spool_dir, "{}.frames".format(os.getpid()))), size)
        # brine.sock_dir naming the Salt master's own folder counts as unset.
        mod_same = load_module(RETURNER_PATH, dict(opts, **{"brine.sock_dir": opts["sock_dir"]}))
        mod_same.save_load(jid, publish_load(jid), ["web1"])
        self.assertFalse(salt_bus.poll(500))
        # With ipc_mode tcp the job-cache socket has a port of its own, never Salt's.
        self.assertEqual(load_module(RETURNER_PATH, dict(opts, ipc_mode="tcp"))._cache_endpoint(), "tcp://127.0.0.1:4520")
        self.assertEqual(
            load_module(RETURNER_PATH, dict(opts, ipc_mode="tcp", **{"brine.tcp_cache_port": 4600}))._cache_endpoint(),
            "tcp://127.0.0.1:4600",
        )
        # The same module outside a Salt master falls back to sock_dir.
        opts["__role"] = "minion"
        self.assertEqual(load_module(RETURNER_PATH, opts)._cache_endpoint(),
                         "ipc://" + os.path.join(opts["sock_dir"], "brine_cache.ipc"))


class RootDirTest(unittest.TestCase):
    def test_brine_paths_take_root_dir_as_brine_master_gives_it(self):
        master = BrineMaster()
        self.addCleanup(master.close)
        root = os.path.join(master.dir, "root")
        opts = master.opts(root_dir=root, **{"brine.sock_dir": "/run/brine", "brine.database": "/db/b.sqlite"})
        mod = load_module(RETURNER_PATH, opts)
        self.assertEqual(mod._cache_endpoint(), "ipc://" + root + "/run/brine/brine_cache.ipc")
        self.assertEqual(mod._database(), root + "/db/b.sqlite")
        opts["brine.sock_dir"] = root + "/already"
        self.assertEqual(mod._cache_endpoint(), "ipc://" + root + "/already/brine_cache.ipc")
        opts["root_dir"] = "/"
        self.assertEqual(mod._database(), "/db/b.sqlite")


class VirtualTest(unittest.TestCase):
    def test_virtual_needs_no_store_and_no_brine_master(self):
        master = BrineMaster()  # never started: no store, no sockets
        self.addCleanup(master.close)
        mod = load_module(RETURNER_PATH, master.opts())
        self.assertEqual(mod.__virtual__(), "brine")
        self.assertEqual(mod.get_load("20240101120000123456"), {})
        self.assertEqual(mod.get_jids(), {})
        self.assertEqual(mod.get_jids_filter(5), [])
        self.assertEqual(mod.get_minions(), [])
        self.assertFalse(mod.get_endtime("20240101120000123456"))

    def test_virtual_is_false_with_a_reason_without_msgpack(self):
        code = (
            "import importlib.util, sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'msgpack' or name.startswith('msgpack.'):\n"
            "            raise ImportError('No module named ' + repr(name))\n"
            "sys.meta_path.insert(0, Block())\n"
            "spec = importlib.util.spec_from_file_location('brine_returner', sys.argv[1])\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print(repr(m.__virtual__()))\n"
        )
        out = subprocess.run([sys.executable, "-c", code, RETURNER_PATH], stdout=subprocess.PIPE, check=True)
        result = eval(out.stdout.decode())  # a repr of a tuple
        self.assertIsInstance(result, tuple)
        self.assertIs(result[0], False)
        self.assertIn("msgpack", result[1])


if __name__ == "__main__":
    unittest.main()
