"""Writes a Salt local_cache jobs tree as salt/returners/local_cache.py lays it
out (shared/spec/salt-jobs.md section 4.1, copied into this comment's rules):

  <jobs>/<h[0:2]>/<h[2:]>/   h = sha256(jid).hexdigest() (hash_type sha256)
    jid                      the jid, plain text, no newline
    nocache                  optional empty marker
    .load.p                  msgpack: the publish load
    .minions.p               msgpack: list of targeted minions
    .minions.<syndic>.p      msgpack: a syndic's list
    endtime                  optional text "2024, Jan 01 12:05:03.114477"
    <minion>/return.p        msgpack {"return", "retcode", "success"} (present keys only, that order),
                             or, very old, the bare return value
    <minion>/out.p           optional msgpack: outputter name

salt.payload packs with use_bin_type=False (every string in the str family),
datetimes as ExtType 78 holding "%Y%m%dT%H:%M:%S.%f", integers too big for
msgpack as decimal strings. Used by tests/operations_test.cpp:
    python3 write_local_cache.py JOBS_DIR
"""
import datetime
import hashlib
import os
import sys

import msgpack


def pack(obj):
    def default(o):
        if isinstance(o, (datetime.datetime, datetime.date)):
            return msgpack.ExtType(78, o.strftime("%Y%m%dT%H:%M:%S.%f").encode())
        raise TypeError(repr(o))

    def fix(o):
        if isinstance(o, int) and not isinstance(o, bool) and not (-(2**63) <= o < 2**64):
            return str(o)
        if isinstance(o, dict):
            return {k: fix(v) for k, v in o.items()}
        if isinstance(o, list):
            return [fix(v) for v in o]
        return o

    return msgpack.packb(fix(obj), use_bin_type=False, default=default)


def write(path, data):
    # Modern local_cache writes .p files atomically: a temp file, then rename.
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def jid_dir(jobs, jid):
    h = hashlib.sha256(jid.encode()).hexdigest()
    return os.path.join(jobs, h[:2], h[2:])


def job(jobs, jid, load, minions=None, syndics=None, endtime=None, nocache=False):
    d = jid_dir(jobs, jid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "jid"), "wb") as f:
        f.write(jid.encode())
    if nocache:
        open(os.path.join(d, "nocache"), "wb").close()
    write(os.path.join(d, ".load.p"), pack(load))
    if minions is not None:
        write(os.path.join(d, ".minions.p"), pack(minions))
    for syndic, names in (syndics or {}).items():
        write(os.path.join(d, ".minions.%s.p" % syndic), pack(names))
    if endtime:
        with open(os.path.join(d, "endtime"), "w") as f:
            f.write(endtime)
    return d


def ret(d, minion, load, out=None, bare=False):
    md = os.path.join(d, minion)
    os.makedirs(md, exist_ok=True)
    if bare:
        write(os.path.join(md, "return.p"), pack(load))
    else:
        write(os.path.join(md, "return.p"), pack({k: load[k] for k in ("return", "retcode", "success") if k in load}))
    if out:
        write(os.path.join(md, "out.p"), pack(out))


def publish(jid, fun, arg, tgt, tgt_type="glob", user="root", **extra):
    load = {"cmd": "publish", "tgt": tgt, "fun": fun, "arg": arg, "tgt_type": tgt_type, "ret": "", "jid": jid,
            "kwargs": {"show_timeout": True, "show_jid": False}, "user": user}
    load.update(extra)
    return load


def main(jobs):
    # 4.3's worked example: test.ping to two minions, one returned.
    d = job(jobs, "20240101120000123456", publish("20240101120000123456", "test.ping", [], "*"), ["web1", "web2"])
    ret(d, "web1", {"return": True, "retcode": 0, "success": True})
    # A state run: highstate outputter, a syndic's minion list, an endtime,
    # a datetime and a too-big integer inside the return.
    d = job(jobs, "20240101120500654321",
            publish("20240101120500654321", "state.apply", [], "web*", metadata={"ticket": 7}),
            ["web1"], syndics={"syndic1": ["db1"]}, endtime="2024, Jan 01 12:05:03.114477")
    ret(d, "web1", {"return": {"file_|-motd_|-/etc/motd_|-managed": {
        "result": True, "comment": "ok", "changes": {}, "__run_num__": 0,
        "when": datetime.datetime(2024, 1, 1, 12, 5, 1, 500), "inode": 2**70}},
        "retcode": 0, "success": True}, out="highstate")
    ret(d, "db1", {"return": "Minion did not run state", "retcode": 2, "success": False})
    # Very old: return.p holds the bare value.
    d = job(jobs, "20140101000000000001", publish("20140101000000000001", "cmd.run", ["uptime"], "old1"), ["old1"])
    ret(d, "old1", " 00:00:01 up 1 day", bare=True)
    # nocache: the load is kept, returns are not.
    d = job(jobs, "20240101130000000000", publish("20240101130000000000", "test.ping", [], "web1"), ["web1"],
            nocache=True)
    ret(d, "web1", {"return": True, "retcode": 0, "success": True})
    # Damaged: a truncated .load.p (a whole job skipped), and a good job with
    # one truncated return.p (that return skipped).
    d = job(jobs, "20240101140000000000", publish("20240101140000000000", "test.ping", [], "*"), ["web1"])
    with open(os.path.join(d, ".load.p"), "r+b") as f:
        f.truncate(5)
    d = job(jobs, "20240101150000000000", publish("20240101150000000000", "test.echo", ["hi"], "*"),
            ["web1", "web2"])
    ret(d, "web1", {"return": "hi", "retcode": 0, "success": True})
    ret(d, "web2", {"return": "hi", "retcode": 0, "success": True})
    with open(os.path.join(d, "web2", "return.p"), "r+b") as f:
        f.truncate(3)


if __name__ == "__main__":
    main(sys.argv[1])
