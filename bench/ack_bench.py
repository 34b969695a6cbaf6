#!/usr/bin/env python3
"""Issue 13's benchmark: the Salt plug-in's acknowledged job-cache writes
against Salt's local_cache doing the same work, side by side in one run.

    bench/ack_bench.py [--bin-dir build/bin] [--procs 8] [--seconds 10]
                       [--rate 1000] [--latency-seconds 10]

Figures (a table, then JSON lines):
  local_cache    what salt.utils.job.store_job does per return with local_cache
                 as the master_job_cache (spec salt-jobs.md 4.1, 4.2): prep_jid
                 with the passed jid (the jid dir, the `jid` file), then returner
                 (the minion's dir, return.p written atomically: temp file +
                 rename, msgpack without bin types). `procs` processes, each its
                 own jobs of 10 minions. Returns per second.
  brine          the plug-in's returner() from `procs` processes against a real
                 brine-master; each call returns once its return is committed.
                 Returns per second, and the ratio to local_cache.
  latency        one process calling returner() at a steady `rate` per second:
                 p50 / p99 / max of the call's wall time (send to acknowledgement).
Every process runs Debian's python3 with pyzmq and msgpack, as Salt would.
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import tempfile
import time

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
RETURNER = os.path.join(SOURCE, "contrib", "salt", "returners", "brine.py")


def return_load(jid, minion):
    return {"cmd": "_return", "id": minion, "jid": jid, "fun": "test.ping", "fun_args": [],
            "return": True, "retcode": 0, "success": True}


# --- local_cache, as salt/returners/local_cache.py writes it ----------------------


def local_cache_worker(cachedir, index, seconds, out):
    jobs = os.path.join(cachedir, "jobs")
    n = 0
    deadline = time.monotonic() + seconds
    job = 0
    while time.monotonic() < deadline:
        job += 1
        jid = "2026112312{:04d}{:06d}".format(index, job)
        jid_dir = os.path.join(jobs, *(lambda h: (h[:2], h[2:]))(hashlib.sha256(jid.encode()).hexdigest()))
        for m in range(10):
            load = return_load(jid, "minion{}".format(m))
            # prep_jid(nocache=False, passed_jid=jid)
            if not os.path.isdir(jid_dir):
                os.makedirs(jid_dir, exist_ok=True)
            with open(os.path.join(jid_dir, "jid"), "wb") as f:
                f.write(jid.encode())
            # returner(load)
            hn_dir = os.path.join(jid_dir, load["id"])
            os.makedirs(hn_dir)
            ret = {k: load[k] for k in ("return", "retcode", "success") if k in load}
            fd, tmp = tempfile.mkstemp(prefix=".__atomic-", dir=hn_dir)
            with os.fdopen(fd, "wb") as f:
                f.write(msgpack.packb(ret, use_bin_type=False))
            os.rename(tmp, os.path.join(hn_dir, "return.p"))
            n += 1
    out.put(n)


def run_local_cache(procs, seconds):
    cachedir = tempfile.mkdtemp(prefix="brine-ackbench-lc-", dir="/var/tmp")
    try:
        q = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=local_cache_worker, args=(cachedir, i, seconds, q)) for i in range(procs)]
        t0 = time.monotonic()
        for w in workers:
            w.start()
        total = sum(q.get() for _ in workers)
        for w in workers:
            w.join()
        return total / (time.monotonic() - t0)
    finally:
        shutil.rmtree(cachedir, ignore_errors=True)


# --- brine ---------------------------------------------------------------------------


def load_plugin(opts):
    import importlib.util

    spec = importlib.util.spec_from_file_location("salt_loaded_brine", RETURNER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.__opts__ = opts
    mod.__context__ = {}
    return mod


def brine_worker(opts, index, seconds, out):
    mod = load_plugin(opts)
    n = spooled = 0
    deadline = time.monotonic() + seconds
    job = 0
    while time.monotonic() < deadline:
        job += 1
        jid = "2026112312{:04d}{:06d}".format(index, job)
        for m in range(10):
            mod.returner(return_load(jid, "minion{}".format(m)))
            n += 1
    if os.path.exists(mod._spool_path()):
        spooled = 1
    out.put((n, spooled))


def latency_worker(opts, rate, seconds, out):
    mod = load_plugin(opts)
    lat = []
    interval = 1.0 / rate
    start = time.monotonic()
    i = 0
    while True:
        due = start + i * interval
        now = time.monotonic()
        if now - start > seconds:
            break
        if due > now:
            time.sleep(due - now)
        jid = "20261123130000{:06d}".format(i // 10)
        t0 = time.perf_counter()
        mod.returner(return_load(jid, "minion{}".format(i % 10)))
        lat.append(time.perf_counter() - t0)
        i += 1
    out.put(lat)


class Master:
    def __init__(self, bin_dir):
        self.dir = tempfile.mkdtemp(prefix="brine-ackbench-", dir="/var/tmp")
        self.conf = os.path.join(self.dir, "conf")
        os.makedirs(self.conf)
        self.cachedir = os.path.join(self.dir, "cache")
        self.sock = os.path.join(self.dir, "sock")
        with open(os.path.join(self.conf, "master"), "w") as f:
            f.write("id: bench\ncachedir: {}\nbrine.bus: bind\nbrine.sock_dir: {}\nbrine.log_file: {}\nkeep_jobs_seconds: 0\n"
                    "master_job_cache: brine\n".format(self.cachedir, self.sock, os.path.join(self.dir, "log")))
        self.proc = subprocess.Popen([os.path.join(bin_dir, "brine-master"), "-c", self.conf])
        path = os.path.join(self.sock, "brine_cache.ipc")
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("ack_bench: brine-master did not start")
            time.sleep(0.05)

    def opts(self):
        return {"__role": "master", "id": "bench", "cachedir": self.cachedir, "sock_dir": os.path.join(self.dir, "salt"),
                "brine.sock_dir": self.sock, "brine.send_timeout_ms": 2000, "ipc_mode": "ipc", "user": "root"}

    def count_returns(self):
        import sqlite3

        conn = sqlite3.connect("file:{}?mode=ro".format(os.path.join(self.cachedir, "brine.sqlite")), uri=True)
        try:
            return conn.execute("SELECT count(*) FROM ret").fetchone()[0]
        finally:
            conn.close()

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_brine(bin_dir, procs, seconds):
    master = Master(bin_dir)
    try:
        q = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=brine_worker, args=(master.opts(), i, seconds, q)) for i in range(procs)]
        t0 = time.monotonic()
        for w in workers:
            w.start()
        results = [q.get() for _ in workers]
        elapsed = time.monotonic() - t0
        for w in workers:
            w.join()
        acked = sum(r[0] for r in results)
        stored = master.count_returns()
        return acked / elapsed, acked, stored, sum(r[1] for r in results)
    finally:
        master.close()


def run_latency(bin_dir, rate, seconds):
    master = Master(bin_dir)
    try:
        q = multiprocessing.Queue()
        w = multiprocessing.Process(target=latency_worker, args=(master.opts(), rate, seconds, q))
        w.start()
        lat = sorted(q.get())
        w.join()
        pick = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
        return {"calls": len(lat), "p50_ms": pick(0.50), "p99_ms": pick(0.99), "max_ms": lat[-1] * 1000,
                "rate": len(lat) / seconds}
    finally:
        master.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(SOURCE, "build", "bin"))
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--latency-seconds", type=float, default=10)
    a = parser.parse_args()
    lc = run_local_cache(a.procs, a.seconds)
    rate, acked, stored, spooled = run_brine(a.bin_dir, a.procs, a.seconds)
    lat = run_latency(a.bin_dir, a.rate, a.latency_seconds)
    print("{:<44} {:>14}".format("figure", "value"))
    print("{:<44} {:>14,.0f}".format("local_cache store_job, returns/s ({} procs)".format(a.procs), lc))
    print("{:<44} {:>14,.0f}".format("brine acknowledged returner(), returns/s", rate))
    print("{:<44} {:>14.2f}".format("brine / local_cache", rate / lc))
    print("{:<44} {:>14}".format("acknowledged / stored / procs that spooled", "{} / {} / {}".format(acked, stored, spooled)))
    print("{:<44} {:>14}".format("ack latency at {}/s p50 / p99 / max (ms)".format(a.rate),
                                 "{:.2f} / {:.2f} / {:.1f}".format(lat["p50_ms"], lat["p99_ms"], lat["max_ms"])))
    print(json.dumps({"bench": "ack", "figure": "local_cache_returns_per_s", "value": round(lc), "procs": a.procs}))
    print(json.dumps({"bench": "ack", "figure": "acked_returns_per_s", "value": round(rate), "procs": a.procs,
                      "ratio_to_local_cache": round(rate / lc, 2), "acked": acked, "stored": stored,
                      "procs_spooled": spooled}))
    print(json.dumps({"bench": "ack", "figure": "ack_latency_ms", "rate": a.rate, **{k: round(v, 3) for k, v in lat.items()}}))


if __name__ == "__main__":
    main()
