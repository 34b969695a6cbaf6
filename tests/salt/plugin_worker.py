"""A Salt process calling the brine returner plug-in, for the acknowledged-write
tests: started as its own process, as Salt's MWorkers, salt-run and the
EventReturn process are.

    plugin_worker.py OPTS_JSON MODE NAME LOG

MODE is one of:
  returner     calls returner() in a loop with fresh (jid, minion) pairs
  event_return calls event_return() in a loop with batches of 20 events
  save_load    reads jids on stdin, one a line; for each calls save_load and
               answers "ok" on stdout once it returned
  get_load     reads jids on stdin; answers "1" when get_load gave a load, "0" if {}
  one_return   one returner() call for NAME = "jid:minion", then exits 0
After each call returns, what it wrote is appended to LOG ("jid minion" or
"tag"), flushed: the caller counts only what a returned call acknowledged.
Stops on SIGTERM between calls."""

import json
import os
import signal
import sys
import time

from harness import RETURNER_PATH, load_module, stamp_now

stop = False


def on_term(*_):
    global stop
    stop = True


def main():
    opts = json.loads(sys.argv[1])
    mode, name, log_path = sys.argv[2], sys.argv[3], sys.argv[4]
    signal.signal(signal.SIGTERM, on_term)
    mod = load_module(RETURNER_PATH, opts)
    log = open(log_path, "a", buffering=1) if log_path != "-" else None
    n = 0
    if mode == "one_return":
        jid, minion = name.split(":")
        mod.returner({"cmd": "_return", "id": minion, "jid": jid, "fun": "test.ping", "fun_args": [],
                      "return": True, "retcode": 0, "success": True})
        return
    if mode in ("save_load", "get_load"):
        for line in sys.stdin:
            jid = line.strip()
            if mode == "save_load":
                mod.save_load(jid, {"cmd": "publish", "jid": jid, "fun": "test.ping", "tgt": "*", "arg": [],
                                    "tgt_type": "glob", "user": "root"}, ["web1", "web2"])
                print("ok", flush=True)
            else:
                print("1" if mod.get_load(jid) else "0", flush=True)
        return
    # Jids and stamps of now: a fixed day falls out of keep_jobs and retention
    # (every loop_interval) would purge what the test then looks for.
    hour = time.strftime("%Y%m%d%H", time.gmtime())
    stamp = stamp_now()
    while not stop:
        n += 1
        if mode == "returner":
            jid = "{}{:04d}{:06d}".format(hour, os.getpid() % 10000, n)
            mod.returner({"cmd": "_return", "id": name, "jid": jid, "fun": "test.ping", "fun_args": [],
                          "return": True, "retcode": 0, "success": True})
            log.write("{} {}\n".format(jid, name))
        else:
            tags = ["brine-test/{}/{}/{}".format(name, n, i) for i in range(20)]
            mod.event_return([{"tag": t, "data": {"n": n, "_stamp": stamp}} for t in tags])
            log.write("".join(t + "\n" for t in tags))


if __name__ == "__main__":
    main()
