"""
brine as a Salt master's job cache and event returner.

Master config (docs/salt.md says more)::

    master_job_cache: brine
    event_return: brine
    brine.sock_dir: /var/run/salt/brine

Writes go to brine-master as frames on its ZeroMQ pull socket (PUSH, one
socket per process). The job cache's own writes travel under brine's private
tags ``brine/cache/save_load``, ``brine/cache/save_minions``,
``brine/cache/return``, ``brine/cache/endtime`` and ``brine/cache/prep_jid``
(the last only for ``nocache``); brine-master applies them to the job cache
and neither archives nor republishes them. ``event_return`` forwards Salt's
events under their own tags.

When brine-master does not take a frame within ``brine.send_timeout_ms``
(default 2000), the frame is appended to ``<cachedir>/brine-spool/<pid>.frames``
(fsynced, see master/include/brine/master/spool.h for the format) and
brine-master files it at its next maintenance pass. Nothing is dropped and no
call blocks longer than the timeout.

Reads open the brine store read-only and select from the ``brine_api_v1_*``
views (migrations/0003_salt_api.sql), which give local_cache's shapes.
"""

import datetime
import json
import logging
import os
import sqlite3
import struct
import time
import urllib.parse
import zlib

try:
    import msgpack
    import zmq

    HAS_DEPS = True
    _IMPORT_ERROR = ""
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    HAS_DEPS = False
    _IMPORT_ERROR = str(exc)

log = logging.getLogger(__name__)

__virtualname__ = "brine"

_CACHE_PREFIX = "brine/cache/"
_SPOOL_MAGIC = b"BRS1"
_DEFAULT_SEND_TIMEOUT_MS = 2000

# Per-process state. Salt forks its workers after loading modules, so every
# socket and "logged once" flag is keyed by the pid that made it.
_PROCESS = {"pid": None}
# unique_jid: the last time used by this process (Salt's gen_jid keeps one).
_LAST_JID_TIME = {"pid": None, "time": None}


def __virtual__():
    # Only the imports are checked. A master_job_cache that fails to load makes
    # every publish fail, so the store and brine-master are checked per call.
    if not HAS_DEPS:
        return False, "the brine returner needs pyzmq and msgpack: " + _IMPORT_ERROR
    return __virtualname__


# --- configuration -----------------------------------------------------------


def _opt(name, default=None):
    """A brine.* option, flat (``brine.sock_dir``) or nested (``brine: {sock_dir:}``)."""
    value = __opts__.get("brine." + name)
    if value is not None:
        return value
    nested = __opts__.get("brine")
    if isinstance(nested, dict) and nested.get(name) is not None:
        return nested[name]
    return default


def _rooted(path):
    """A brine.* path with root_dir applied, as brine-master applies it (Salt
    has already applied it to its own keys such as cachedir and sock_dir)."""
    root_dir = __opts__.get("root_dir") or "/"
    path = str(path)
    if root_dir.rstrip("/") and os.path.isabs(path):
        root = root_dir.rstrip("/")
        if path != root and not path.startswith(root + "/"):
            return os.path.join(root, path.lstrip("/"))
    return path


def _cachedir():
    return __opts__.get("cachedir", "/var/cache/salt/master")


def _database():
    database = _opt("database")
    return _rooted(database) if database else os.path.join(_cachedir(), "brine.sqlite")


def _spool_path():
    return os.path.join(_cachedir(), "brine-spool", "{}.frames".format(os.getpid()))


def _process_state():
    pid = os.getpid()
    if _PROCESS.get("pid") != pid:
        # A fork: the parent's socket and context must not be used here.
        _PROCESS.clear()
        _PROCESS.update({"pid": pid, "socket": None, "endpoint": None, "logged": set(), "unreachable": False})
    return _PROCESS


def _log_once(key, level, msg, *args):
    state = _process_state()
    if key in state["logged"]:
        return
    state["logged"].add(key)
    log.log(level, msg, *args)


def _pull_endpoint():
    """brine-master's pull endpoint, or None when none may be used."""
    in_master = __opts__.get("__role") == "master"
    if __opts__.get("ipc_mode") == "tcp":
        port = _opt("tcp_pull_port")
        if port is not None and in_master and int(port) == int(__opts__.get("tcp_master_pull_port", 4513)):
            port = None  # the Salt master's own bus port: the same as unset
        if port is None:
            if in_master:
                _log_once(
                    "no-endpoint",
                    logging.ERROR,
                    "brine: set brine.tcp_pull_port: with ipc_mode tcp, tcp_master_pull_port is this "
                    "Salt master's own event bus; frames are spooled until it is set",
                )
                return None
            port = __opts__.get("tcp_master_pull_port", 4513)
        return "tcp://127.0.0.1:{}".format(int(port))
    sock_dir = _opt("sock_dir")
    if (
        sock_dir is not None
        and in_master
        and os.path.realpath(_rooted(sock_dir)) == os.path.realpath(__opts__.get("sock_dir", "/var/run/salt/master"))
    ):
        sock_dir = None  # the Salt master's own folder: the same as unset
    if sock_dir is None:
        if in_master:
            # <sock_dir>/master_event_pull.ipc is Salt's own bus in a Salt master.
            _log_once(
                "no-endpoint",
                logging.ERROR,
                "brine: set brine.sock_dir to brine-master's socket folder; sock_dir is this Salt "
                "master's own event bus; frames are spooled until it is set",
            )
            return None
        sock_dir = __opts__.get("sock_dir", "/var/run/salt/master")
    else:
        sock_dir = _rooted(sock_dir)
    return "ipc://" + os.path.join(sock_dir, "master_event_pull.ipc")


# --- frames ------------------------------------------------------------------


def _msgpack_default(obj):
    if isinstance(obj, datetime.datetime):
        # Salt's payload packs datetimes as ext 78 with this text.
        return msgpack.ExtType(78, obj.strftime("%Y%m%dT%H:%M:%S.%f").encode())
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return dict(obj)
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return str(obj)


def _stringify_big_ints(obj):
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int) and not -(2**63) <= obj < 2**64:
        return str(obj)  # Salt's payload does the same
    if isinstance(obj, dict):
        return {k: _stringify_big_ints(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_stringify_big_ints(v) for v in obj]
    return obj


def _frame(tag, data):
    """Salt's event framing: tag, two newlines, msgpack of the data."""
    try:
        packed = msgpack.packb(data, use_bin_type=True, default=_msgpack_default)
    except OverflowError:
        packed = msgpack.packb(_stringify_big_ints(data), use_bin_type=True, default=_msgpack_default)
    return tag.encode("utf-8", "surrogateescape") + b"\n\n" + packed


def _socket(endpoint):
    state = _process_state()
    if state["socket"] is None or state["endpoint"] != endpoint:
        if state["socket"] is not None:
            state["socket"].close(linger=0)
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.PUSH)
        # Queue frames only on a live connection: with brine-master down a
        # send waits (up to the timeout) instead of parking frames in memory.
        sock.setsockopt(zmq.IMMEDIATE, 1)
        # An event_return batch (event_return_queue) goes out without waiting
        # for brine-master to read each frame.
        sock.setsockopt(zmq.SNDHWM, 100000)
        sock.setsockopt(zmq.LINGER, _send_timeout_ms())
        sock.connect(endpoint)
        state["socket"] = sock
        state["endpoint"] = endpoint
    return state["socket"]


def _send_timeout_ms():
    try:
        return max(0, int(_opt("send_timeout_ms", _DEFAULT_SEND_TIMEOUT_MS)))
    except (TypeError, ValueError):
        return _DEFAULT_SEND_TIMEOUT_MS


def _send(frames):
    """Hands `frames` to brine-master in order, spooling what it does not take
    within the timeout. Returns True when all were sent, False when some
    were spooled."""
    if not frames:
        return True
    endpoint = _pull_endpoint()
    if endpoint is None:
        _spool(frames)
        return False
    state = _process_state()
    try:
        sock = _socket(endpoint)
    except zmq.ZMQError as exc:
        _log_once("connect", logging.ERROR, "brine: cannot connect to %s: %s; spooling", endpoint, exc)
        _spool(frames)
        return False
    # After a timeout, later calls do not wait again while brine-master stays
    # away; ZeroMQ reconnects in the background and the next send that finds
    # the connection back goes through.
    # The timeout bounds the wait for each frame: a big batch that brine-master
    # keeps taking is not cut short.
    timeout_s = 0 if state["unreachable"] else _send_timeout_ms() / 1000.0
    for i, frame in enumerate(frames):
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                sock.send(frame, zmq.NOBLOCK)
                break
            except zmq.Again:
                remaining_ms = int((deadline - time.monotonic()) * 1000)
                if remaining_ms <= 0 or not sock.poll(remaining_ms, zmq.POLLOUT):
                    if not state["unreachable"]:
                        log.warning(
                            "brine: brine-master at %s did not take a frame within %d ms; "
                            "spooling to %s until it does",
                            endpoint,
                            _send_timeout_ms(),
                            _spool_path(),
                        )
                    state["unreachable"] = True
                    _spool(frames[i:])
                    return False
    if state["unreachable"]:
        log.info("brine: brine-master at %s takes frames again", endpoint)
        state["unreachable"] = False
    return True


def _spool(frames):
    """Appends records for `frames` to this process's spool file, fsynced."""
    import fcntl  # not on Windows, where Salt masters do not run

    path = _spool_path()
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    data = b"".join(
        _SPOOL_MAGIC + struct.pack(">I", len(f)) + f + struct.pack(">I", zlib.crc32(f) & 0xFFFFFFFF)
        for f in frames
    )
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # brine-master may have taken (renamed) the file between our open
            # and our lock: then write to a fresh one.
            mine = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (current.st_dev, current.st_ino) != (mine.st_dev, mine.st_ino):
                continue
            size = mine.st_size
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError:
                # Leave no torn record behind for the next append.
                os.ftruncate(fd, size)
                raise
            if size == 0:
                dir_fd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            _log_once("spooled", logging.WARNING, "brine: frames are spooled in %s", path)
            return
        finally:
            os.close(fd)


def _send_cache(op, data):
    return _send([_frame(_CACHE_PREFIX + op, data)])


# --- writes ------------------------------------------------------------------


def _gen_jid():
    """Salt's gen_jid (spec 2.1): UTC %Y%m%d%H%M%S%f, with unique_jid
    strictly increasing per process and suffixed with _<pid>."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if not __opts__.get("unique_jid", False):
        return now.strftime("%Y%m%d%H%M%S%f")
    pid = os.getpid()
    last = _LAST_JID_TIME["time"] if _LAST_JID_TIME["pid"] == pid else None
    if last is not None and now <= last:
        now = last + datetime.timedelta(microseconds=1)
    _LAST_JID_TIME.update({"pid": pid, "time": now})
    return "{}_{}".format(now.strftime("%Y%m%d%H%M%S%f"), pid)


def prep_jid(nocache=False, passed_jid=None, recurse_count=0):  # pylint: disable=unused-argument
    """
    Returns `passed_jid` or a new jid. Salt calls this for every return, so
    nothing is sent unless `nocache` has to be recorded.
    """
    jid = passed_jid if passed_jid is not None else _gen_jid()
    if nocache:
        _send_cache("prep_jid", {"jid": jid, "nocache": True})
    return jid


def save_load(jid, load, minions=None):
    """
    Saves the job's load. brine-master keeps a publish load (``cmd: publish``)
    over an event's or a return's, never a return's over a publish (case C6);
    minion lists merge.
    """
    _send_cache(
        "save_load",
        {"jid": jid, "load": load, "minions": list(minions) if minions is not None else None},
    )


def save_minions(jid, minions, syndic_id=None):
    """Merges `minions` into the job's expected minions."""
    data = {"jid": jid, "minions": list(minions)}
    if syndic_id is not None:
        data["syndic_id"] = syndic_id
    _send_cache("save_minions", data)


def returner(ret):
    """Stores one minion return; the first return per minion and job wins."""
    if ret.get("jid") == "req":
        ret["jid"] = prep_jid(nocache=ret.get("nocache", False))
    _send_cache("return", ret)


def event_return(events):
    """Forwards Salt's events (``{"tag": ..., "data": ...}``) in order."""
    frames = []
    for event in events:
        tag = event.get("tag", "")
        data = event.get("data", {})
        if str(tag).startswith(_CACHE_PREFIX):
            # Only this module writes the job cache under these tags. One on
            # Salt's bus was fired by someone else (a minion can fire any tag
            # with event.fire_master) and must not reach the job cache.
            log.warning("brine: not forwarding an event tagged %s: the brine/cache/ tags are brine's own", tag)
            continue
        frames.append(_frame(tag, data))
    _send(frames)


def update_endtime(jid, time):  # pylint: disable=redefined-outer-name
    """Records the job's end time text (job_cache_store_endtime)."""
    _send_cache("endtime", {"jid": jid, "endtime": time})


def clean_old_jobs():
    """
    Nothing to do here: brine-master's maintenance applies keep_jobs_seconds
    every loop_interval.
    """
    log.debug("brine: clean_old_jobs is brine-master's maintenance; nothing to do here")


# --- reads -------------------------------------------------------------------


def _query(sql, params=()):
    """Rows of `sql` from the store opened read-only; None when the store
    cannot be read (logged)."""
    path = _database()
    if not os.path.exists(path):
        _log_once("no-store", logging.WARNING, "brine: the store %s does not exist yet", path)
        return None
    uri = "file:{}?mode=ro".format(urllib.parse.quote(os.path.abspath(path)))
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=10)
    except sqlite3.Error as exc:
        log.error("brine: cannot open the store %s: %s", path, exc)
        return None
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        log.error("brine: cannot read the store %s: %s", path, exc)
        return None
    finally:
        conn.close()


def get_load(jid):
    """The job's load plus ``Minions`` (sorted expected minions); {} if unknown."""
    rows = _query("SELECT load FROM brine_api_v1_job WHERE jid = ?", (jid,))
    if not rows:
        return {}
    load = json.loads(rows[0][0])
    minions = _query("SELECT minion FROM brine_api_v1_job_minion WHERE jid = ? ORDER BY minion", (jid,))
    if minions:
        load["Minions"] = [m[0] for m in minions]
    return load


def get_jid(jid):
    """{minion: {"return", ["retcode"], ["success"], ["out"]}}; {} if unknown."""
    rows = _query("SELECT minion, result FROM brine_api_v1_return WHERE jid = ? ORDER BY minion", (jid,))
    return {minion: json.loads(result) for minion, result in rows or ()}


def get_jids():
    """{jid: {Function, Arguments, Target, Target-type, User, [Metadata], StartTime[, EndTime]}}."""
    rows = _query("SELECT jid, instance, endtime FROM brine_api_v1_job ORDER BY jid")
    with_endtime = bool(__opts__.get("job_cache_store_endtime", False))
    ret = {}
    for jid, instance, endtime in rows or ():
        job = json.loads(instance)
        if with_endtime and endtime is not None:
            job["EndTime"] = endtime
        ret[jid] = job
    return ret


def get_jids_filter(count, filter_find_job=True):
    """The newest `count` jobs, oldest first, as format_jid_instance_ext."""
    rows = _query(
        "SELECT instance_ext FROM (SELECT jid, instance_ext FROM brine_api_v1_job"
        " WHERE (? = 0 OR fun IS NOT 'saltutil.find_job') ORDER BY jid DESC LIMIT ?) ORDER BY jid",
        (1 if filter_find_job else 0, int(count)),
    )
    return [json.loads(r[0]) for r in rows or ()]


def get_fun(fun):
    """{minion: full return load} from each minion's newest job running `fun`."""
    rows = _query("SELECT minion, full_ret FROM brine_api_v1_fun_latest WHERE fun = ? ORDER BY minion", (fun,))
    return {minion: json.loads(full_ret) for minion, full_ret in rows or ()}


def get_minions():
    """Every minion that has returned, sorted."""
    rows = _query("SELECT minion FROM brine_api_v1_returned_minion ORDER BY minion")
    return [r[0] for r in rows or ()]


def get_endtime(jid):
    """The job's end time text, or False."""
    rows = _query("SELECT endtime FROM brine_api_v1_endtime WHERE jid = ?", (jid,))
    if not rows:
        return False
    return rows[0][0].rstrip("\n")
