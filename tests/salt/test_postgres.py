"""The Salt plug-ins against a PostgreSQL brine.database (issue 16): the
returner's reads (get_load, get_jid, get_jids, get_jids_filter, get_fun,
get_minions, get_endtime) must not assume a SQLite file, and must answer as
they do on SQLite, key order included; the queue backend goes through
brine-run, which opens the same database. The server is the tests' private
one (tests/support/pg_test_server.cpp: a Unix socket in a temp dir, stopped
when this test closes its standard input or dies)."""

import os
import subprocess
import unittest

from harness import QUEUE_PATH, RETURNER_PATH, SOURCE_DIR, BIN_DIR, BrineMaster, brine_run, load_module
from test_returner import jid_to_time, publish_load, return_load, store_job

TEST_BIN_DIR = os.environ.get("BRINE_TEST_BIN_DIR", os.path.join(SOURCE_DIR, "build", "tests"))

JID = "20240101120000000001"
JID2 = "20240101120500000002"


def scenario(mod):
    """The same writes on either backend: a publish with metadata, two returns
    (one failed, with a float), a return-only job, an end time."""
    load = publish_load(JID, fun="test.arg", tgt="web*", arg=["x", 1.25], user="alice")
    load["metadata"] = {"ticket": "T-1"}
    mod.save_load(JID, load, ["web1", "web2", "web3"])
    store_job(mod, return_load(JID, "web1", ret={"b": 1.5, "a": [1, 2]}, fun="test.arg"))
    store_job(mod, return_load(JID, "web2", ret="boom", fun="test.arg", retcode=1, success=False))
    store_job(mod, return_load(JID2, "web3", ret=True, fun="test.ping"))
    mod.update_endtime(JID, "2024-01-01 12:00:09.000000")


def answers(mod):
    """Every read, with its key order (list of items, recursively for dicts)."""

    def ordered(value):
        if isinstance(value, dict):
            return [(k, ordered(v)) for k, v in value.items()]
        if isinstance(value, list):
            return [ordered(v) for v in value]
        return value

    return {
        "get_load": ordered(mod.get_load(JID)),
        "get_load2": ordered(mod.get_load(JID2)),
        "get_jid": ordered(mod.get_jid(JID)),
        "get_jids": ordered(mod.get_jids()),
        "get_jids_filter": ordered(mod.get_jids_filter(10)),
        "get_jids_filter1": ordered(mod.get_jids_filter(1)),
        "get_fun": ordered(mod.get_fun("test.arg")),
        "get_minions": mod.get_minions(),
        "get_endtime": mod.get_endtime(JID),
        "unknown": (mod.get_load("20000101000000000000"), mod.get_jid("20000101000000000000")),
    }


class PostgresPluginsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = subprocess.Popen(
            [os.path.join(TEST_BIN_DIR, "pg_test_server")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        line = cls.server.stdout.readline().decode().strip()
        if not line.startswith("postgresql://"):
            cls.server.stdin.close()
            cls.server.wait(timeout=60)
            cls.server.stdout.close()
            raise unittest.SkipTest(line or "pg_test_server did not start")
        cls.uri = line

    @classmethod
    def tearDownClass(cls):
        cls.server.stdin.close()
        cls.server.wait(timeout=60)
        cls.server.stdout.close()

    def start_master(self, extra_config=""):
        master = BrineMaster(extra_config)
        self.addCleanup(master.close)
        master.start()
        return master

    def pg_counters(self):
        import psycopg2  # pylint: disable=import-outside-toplevel

        with psycopg2.connect(self.uri) as conn, conn.cursor() as cur:
            cur.execute("SELECT name, sum(value) FROM brine_counters GROUP BY name")
            return {name: int(value) for name, value in cur.fetchall()}

    def test_the_returners_reads_answer_on_postgresql_as_on_sqlite(self):
        pg = self.start_master("brine.database: '{}'\n".format(self.uri))
        pg_mod = load_module(RETURNER_PATH, pg.opts(**{"brine.database": self.uri}))
        self.assertEqual(pg_mod.__virtual__(), "brine")
        lite = self.start_master()
        lite_mod = load_module(RETURNER_PATH, lite.opts())
        scenario(pg_mod)
        scenario(lite_mod)
        lite.wait_for(lambda: lite.counters().get("returns") == 3)
        lite.wait_for(lambda: self.pg_counters().get("returns") == 3, what="the PostgreSQL store")
        # Acknowledged writes are committed: no spool file may stand in for the database.
        self.assertFalse(os.path.exists(os.path.join(pg.spool_dir, "spool")) and os.listdir(pg.spool_dir))

        got = answers(pg_mod)
        self.assertEqual(got, answers(lite_mod))
        # And what they are (the SQLite plug-in's own tests pin the rest).
        load = pg_mod.get_load(JID)
        self.assertEqual(load["Minions"], ["web1", "web2", "web3"])
        self.assertEqual(load["metadata"], {"ticket": "T-1"})
        self.assertEqual(
            pg_mod.get_jid(JID),
            {"web1": {"return": {"b": 1.5, "a": [1, 2]}, "retcode": 0, "success": True},
             "web2": {"return": "boom", "retcode": 1, "success": False}},
        )
        jobs = pg_mod.get_jids()
        self.assertEqual(
            list(jobs[JID].items()),
            [("Function", "test.arg"), ("Arguments", ["x", 1.25]), ("Target", "web*"), ("Target-type", "glob"),
             ("User", "alice"), ("Metadata", {"ticket": "T-1"}), ("StartTime", jid_to_time(JID))],
        )
        self.assertEqual(jobs[JID2]["Target"], "web3")  # the stub of a return-only job
        self.assertEqual([j["JID"] for j in pg_mod.get_jids_filter(10)], [JID, JID2])
        self.assertEqual(list(pg_mod.get_fun("test.arg")), ["web1", "web2"])
        self.assertEqual(pg_mod.get_minions(), ["web1", "web2", "web3"])
        self.assertEqual(pg_mod.get_endtime(JID), "2024-01-01 12:00:09.000000")

    def test_the_queue_backend_works_on_a_postgresql_store(self):
        master = BrineMaster("brine.database: '{}'\n".format(self.uri))  # only its config: brine-run writes
        self.addCleanup(master.close)
        os.makedirs(master.cachedir)
        path = os.environ.get("PATH", "")
        self.addCleanup(os.environ.__setitem__, "PATH", path)
        os.environ["PATH"] = BIN_DIR + os.pathsep + path
        mod = load_module(QUEUE_PATH, master.opts(**{"brine.database": self.uri}))
        self.assertEqual(mod.__virtual__(), "brine")
        self.assertIs(mod.insert("pgqueue", ["item1", "item2", {"k": 3}]), True)
        self.assertEqual(brine_run(master.conf_dir, "queue.list_items", "pgqueue"), ["item1", "item2", {"k": 3}])
        self.assertEqual(mod.list_length("pgqueue"), 3)
        self.assertIn("pgqueue", mod.list_queues())
        self.assertEqual(mod.pop("pgqueue"), ["item1"])
        self.assertIs(mod.delete("pgqueue", "item2"), True)
        self.assertEqual(mod.pop("pgqueue", "all"), [{"k": 3}])
        self.assertEqual(mod.list_length("pgqueue"), 0)
        # Nothing went to a SQLite file.
        self.assertFalse(os.path.exists(master.database))


if __name__ == "__main__":
    unittest.main()
