"""
brine as a Salt master's job cache and event returner.

Master config (docs/salt.md says more)::

    master_job_cache: brine
    event_return: brine
    brine.sock_dir: /var/run/salt/brine

Writes are acknowledged. Each call sends its frames as one request to
brine-master's job-cache socket (``<brine.sock_dir>/brine_cache.ipc``, or
``tcp://127.0.0.1:<brine.tcp_cache_port>`` with ``ipc_mode: tcp``; the grammar
heads master/src/cache_socket.h) and returns only once
brine-master answers that the commit holding them is done, or once the frames
are fsynced into the spool. So when a call returns, any process reads the
write, and a ``kill -9`` of brine-master cannot lose it. The job cache's own
writes travel under brine's private tags ``brine/cache/save_load``,
``save_minions``, ``return``, ``endtime`` and ``prep_jid`` (the last only for
``nocache``); ``event_return`` forwards Salt's events under their own tags.

With ``ipc_mode: tcp`` each connection first proves, both ways, that the two
ends hold brine's key (``<brine.sock_dir>/brine_cache.key``, or
``brine.cache_key_file``; brine-master makes it, 0600, at its first start):
a mutual challenge and response with HMAC-SHA256 over both sides' nonces.
No frame goes to a process that cannot prove it holds the key (another local
user who took the port while brine-master was down): the write is spooled.
The Unix socket needs no handshake: its file is 0600 in a folder of brine's
user.

When brine-master does not answer within ``brine.send_timeout_ms`` (default
2000), or answers that it cannot take the request (its store is failing), the
frames are appended to ``<cachedir>/brine-spool/<pid>.frames`` (fsynced, see
master/src/spool.h for the format) and brine-master files
them at its next maintenance pass. Spool files and their folder belong to the
Salt master's ``user``, whichever process (the master as ``salt``,
``salt-run`` as root) writes first. The folder is opened without following
links and must be that user's own, mode 0700; files are opened relative to it,
and root hands over only what it has just created (_open_spool_dir). A call
never raises for a failed or refused write: it is logged at critical level, as
Salt itself logs a failed returner.

Reads open the brine store read-only and select from the ``brine_api_v1_*``
views (migrations/0003_salt_api.sql; migrations/postgres/0002 on PostgreSQL),
which give local_cache's shapes, after reading the spool: a write that is
spooled but not yet filed is still seen. A SQLite store is read with Python's
sqlite3; when ``brine.database`` is a PostgreSQL URI, with psycopg2 (Debian's
python3-psycopg2; the password from ~/.pgpass, as for brine-master).

Salt re-executes this module's body for each loader in a process, calls it
from several threads (``enable_ssh_minions``) and forks after loading it. Its
per-process state (the socket, one lock around it, log-once flags) lives in a
private entry of ``sys.modules``, keyed by pid, so a re-execution keeps it and
a fork starts afresh.
"""

import datetime
import errno
import hashlib
import hmac
import json
import logging
import os
import pwd
import secrets
import socket
import sqlite3
import stat
import struct
import sys
import threading
import time
import types
import urllib.parse
import zlib

try:
    import msgpack

    HAS_DEPS = True
    _IMPORT_ERROR = ""
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    HAS_DEPS = False
    _IMPORT_ERROR = str(exc)

log = logging.getLogger(__name__)

__virtualname__ = "brine"

_CACHE_PREFIX = "brine/cache/"
_SPOOL_MAGIC = b"BRS1"
_REQUEST_MAGIC = b"BRQ1"
_REPLY_MAGIC = b"BRA1"
_DEFAULT_SEND_TIMEOUT_MS = 2000
_HELLO_MAGIC = b"BRH1"
_WELCOME_MAGIC = b"BRW1"
_PROOF_MAGIC = b"BRP1"
_SERVER_LABEL = b"brine cache server v1"
_CLIENT_LABEL = b"brine cache client v1"
_KEY_BYTES = 32
_NONCE_BYTES = 32
# Never a port a Salt master binds (4505, 4506, 4510-4515): brine-master refuses those.
_DEFAULT_TCP_CACHE_PORT = 4520
# While brine-master stays away or stalled, a call waits at most this long for it.
_UNREACHABLE_WAIT_MS = 200
_STATE_MODULE = "_brine_returner_process_state"


def __virtual__():
    # Only the imports are checked. A master_job_cache that fails to load makes
    # every publish fail, so the store and brine-master are checked per call.
    if not HAS_DEPS:
        return False, "the brine returner needs msgpack: " + _IMPORT_ERROR
    return __virtualname__


# --- per-process state -------------------------------------------------------


def _process_state():
    """This process's state, made once per pid. It lives in sys.modules, not
    in this module's globals, which Salt's loader resets by re-executing the
    module body."""
    shared = sys.modules.get(_STATE_MODULE)
    if shared is None:
        shared = sys.modules.setdefault(_STATE_MODULE, types.ModuleType(_STATE_MODULE))
    creation = shared.__dict__.setdefault("creation_lock", threading.Lock())
    pid = os.getpid()
    state = shared.__dict__.get("state")
    if state is not None and state["pid"] == pid:
        return state
    with creation:
        state = shared.__dict__.get("state")
        if state is None or state["pid"] != pid:
            # A fork: the parent's socket must not be used (nor closed) here.
            state = {
                "pid": pid,
                "lock": threading.Lock(),  # guards the socket and the fields below
                "socket": None,
                "endpoint": None,
                "next_id": 0,
                "unreachable": None,  # the endpoint that did not answer last
                "logged": set(),
                "jid_time": None,
                "spool_cache": {},
                "endpoints": {},
            }
            shared.state = state
    return state


def _log_once(key, level, msg, *args):
    state = _process_state()
    if key in state["logged"]:
        return
    state["logged"].add(key)
    log.log(level, msg, *args)


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


def _is_server_uri(database):
    # As brine's store::IsServerDatabase: libpq's URI syntax names a PostgreSQL database.
    return database.startswith(("postgresql://", "postgres://"))


def _database():
    database = _opt("database")
    if database and _is_server_uri(str(database)):
        return str(database)  # a URI, no path: root_dir does not apply
    return _rooted(database) if database else os.path.join(_cachedir(), "brine.sqlite")


def _spool_dir():
    return os.path.join(_cachedir(), "brine-spool")


def _spool_path():
    return os.path.join(_spool_dir(), "{}.frames".format(os.getpid()))


def _cache_endpoint():
    """brine-master's job-cache socket, or None when none may be used.
    Worked out once per distinct setting (it resolves paths) per process."""
    key = (
        __opts__.get("__role"),
        __opts__.get("ipc_mode"),
        __opts__.get("root_dir"),
        __opts__.get("sock_dir"),
        _opt("sock_dir"),
        _opt("tcp_cache_port"),
    )
    known = _process_state()["endpoints"]
    if key not in known:
        known[key] = _work_out_cache_endpoint()
    return known[key]


def _work_out_cache_endpoint():
    in_master = __opts__.get("__role") == "master"
    if __opts__.get("ipc_mode") == "tcp":
        port = _opt("tcp_cache_port", _DEFAULT_TCP_CACHE_PORT)
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
            # Salt's own sockets live in <sock_dir>: brine-master must not.
            _log_once(
                "no-endpoint",
                logging.ERROR,
                "brine: set brine.sock_dir to brine-master's socket folder; sock_dir is this Salt "
                "master's own event bus; writes are spooled until it is set",
            )
            return None
        sock_dir = __opts__.get("sock_dir", "/var/run/salt/master")
    else:
        sock_dir = _rooted(sock_dir)
    return "ipc://" + os.path.join(sock_dir, "brine_cache.ipc")


def _send_timeout_ms():
    try:
        return max(1, int(_opt("send_timeout_ms", _DEFAULT_SEND_TIMEOUT_MS)))
    except (TypeError, ValueError):
        return _DEFAULT_SEND_TIMEOUT_MS


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


# --- the acknowledged write ----------------------------------------------------


class _NotBrineMaster(OSError):
    """The process at the job-cache port did not prove it holds brine's key,
    or the key cannot be read: nothing is sent to it."""


def _cache_key_file():
    """brine.cache_key_file, else <brine.sock_dir>/brine_cache.key, where
    brine-master makes it (brine.sock_dir defaults to Salt's sock_dir)."""
    path = _opt("cache_key_file")
    if path:
        return _rooted(path)
    sock_dir = _opt("sock_dir")
    sock_dir = _rooted(sock_dir) if sock_dir is not None else __opts__.get("sock_dir", "/var/run/salt/master")
    return os.path.join(sock_dir, "brine_cache.key")


def _read_cache_key():
    """brine's key: a regular file of 32 octets that brine's user (or this
    process's, or root) owns and no one else may read; never through a symlink."""
    path = _cache_key_file()
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _NotBrineMaster(
            "cannot read brine's key {} ({}); brine-master makes it at its first start with ipc_mode: tcp".format(
                path, exc.strerror or exc
            )
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotBrineMaster("brine's key {} is not a regular file".format(path))
        owners = {0, os.geteuid()}
        account = _service_account()
        if account is not None:
            owners.add(account[0])
        if st.st_uid not in owners:
            raise _NotBrineMaster("brine's key {} belongs to uid {}, not to brine's user".format(path, st.st_uid))
        if st.st_mode & 0o077:
            raise _NotBrineMaster("brine's key {} is one others may read (mode {:o}); it must be 0600".format(
                path, st.st_mode & 0o777))
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise _NotBrineMaster("brine's key {} holds {} octets, not {}".format(path, len(key), _KEY_BYTES))
    return key


def _handshake(sock, endpoint, deadline):
    """The caller's half of the key handshake (cache_socket.h's grammar):
    returns once the other end proved it holds brine's key and this process
    sent its own proof. Raises _NotBrineMaster before any frame is sent when
    it does not."""
    key = _read_cache_key()
    cnonce = secrets.token_bytes(_NONCE_BYTES)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(struct.pack(">I", len(_HELLO_MAGIC) + _NONCE_BYTES) + _HELLO_MAGIC + cnonce)
        (length,) = struct.unpack(">I", _recv_exact(sock, 4, deadline))
        welcome = _recv_exact(sock, length, deadline) if length == 4 + _NONCE_BYTES + 32 else b""
    except socket.timeout:
        raise _NotBrineMaster(
            "the process at {} did not finish brine's key handshake in time (a brine-master older than this "
            "plug-in, or a busy one)".format(endpoint)
        ) from None
    except ConnectionResetError as exc:
        raise _NotBrineMaster("the process at {} closed the connection during the key handshake: {}".format(
            endpoint, exc)) from None
    snonce = welcome[4:4 + _NONCE_BYTES]
    expected = hmac.new(key, _SERVER_LABEL + cnonce + snonce, hashlib.sha256).digest()
    if welcome[:4] != _WELCOME_MAGIC or not hmac.compare_digest(welcome[4 + _NONCE_BYTES:], expected):
        raise _NotBrineMaster(
            "the process at {} did not prove that it holds brine's key ({}): it is not brine-master, and "
            "nothing was sent to it".format(endpoint, _cache_key_file())
        )
    proof = hmac.new(key, _CLIENT_LABEL + cnonce + snonce, hashlib.sha256).digest()
    sock.sendall(struct.pack(">I", len(_PROOF_MAGIC) + len(proof)) + _PROOF_MAGIC + proof)


def _connect(endpoint, timeout_s):
    """A stream socket connected to brine-master's job-cache endpoint (a
    plain socket, not ZeroMQ: cache_socket.h says why), over tcp after the
    key handshake. Raises OSError (_NotBrineMaster for a failed handshake)."""
    deadline = time.monotonic() + timeout_s
    if endpoint.startswith("ipc://"):
        family, address = socket.AF_UNIX, endpoint[len("ipc://"):]
    else:
        host, _, port = endpoint[len("tcp://"):].rpartition(":")
        family, address = socket.AF_INET, (host, int(port))
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(address)
        if family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _handshake(sock, endpoint, deadline)
    except OSError:
        sock.close()
        raise
    return sock


def _closed_by_peer(sock):
    """Whether brine-master closed this kept connection (it closes idle ones,
    after 30 send timeouts): a request sent on it would be lost and spooled."""
    try:
        sock.settimeout(0)
        sock.recv(1, socket.MSG_PEEK)
        return True  # end of file, or octets no request asked for: start afresh
    except BlockingIOError:
        return False  # open, and nothing unread: the normal case
    except OSError:
        return True


def _socket(state, endpoint, timeout_s):
    if state["socket"] is not None and state["endpoint"] == endpoint and _closed_by_peer(state["socket"]):
        _drop_socket(state)
    if state["socket"] is None or state["endpoint"] != endpoint:
        _drop_socket(state)
        state["socket"] = _connect(endpoint, timeout_s)
        state["endpoint"] = endpoint
        state["fresh"] = True
    return state["socket"]


def _drop_socket(state):
    # Closing ends the connection: brine-master still files what it took, but
    # its answer has nowhere to go, so this process never reads a stale one.
    if state["socket"] is not None:
        state["socket"].close()
    state["socket"] = None
    state["endpoint"] = None


def _recv_exact(sock, n, deadline):
    chunks = []
    while n > 0:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout()
        sock.settimeout(remaining)
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionResetError("brine-master closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _request(state, endpoint, frames):
    """Sends `frames` as one request and waits for the answer. Returns None
    when brine-master committed them, else why they were not taken. The
    caller holds state["lock"]."""
    timeout_ms = _send_timeout_ms()
    if state["unreachable"] == endpoint:
        timeout_ms = min(timeout_ms, _UNREACHABLE_WAIT_MS)
    deadline = time.monotonic() + timeout_ms / 1000.0
    state["next_id"] += 1
    request_id = state["next_id"]
    parts = [_REQUEST_MAGIC, struct.pack(">Qq", request_id, int(time.time() * 1000000))]
    for frame in frames:
        parts.append(struct.pack(">I", len(frame)))
        parts.append(frame)
    body = b"".join(parts)
    message = struct.pack(">I", len(body)) + body
    for attempt in (1, 2):
        try:
            sock = _socket(state, endpoint, max(0.001, deadline - time.monotonic()))
        except (FileNotFoundError, ConnectionRefusedError):
            return "brine-master is not running at {}".format(endpoint)
        except socket.timeout:
            return "brine-master at {} did not accept a connection within {} ms".format(endpoint, timeout_ms)
        except _NotBrineMaster as exc:
            return str(exc)
        fresh = state.pop("fresh", False)
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(message)
            break
        except (BrokenPipeError, ConnectionResetError):
            # A connection kept from before brine-master restarted: nothing
            # was taken, so one fresh connection may try again.
            _drop_socket(state)
            if fresh or attempt == 2:
                return "brine-master at {} closed the connection".format(endpoint)
        except socket.timeout:
            _drop_socket(state)
            return "brine-master at {} did not take the request within {} ms".format(endpoint, timeout_ms)
    try:
        while True:
            (length,) = struct.unpack(">I", _recv_exact(sock, 4, deadline))
            head = _recv_exact(sock, length, deadline)
            if len(head) < 13 or head[:4] != _REPLY_MAGIC:
                raise ConnectionResetError("not a brine-master reply")
            (reply_id,) = struct.unpack(">Q", head[4:12])
            if reply_id != request_id:
                continue  # cannot happen on a connection used by one caller at a time
            if head[12] == 0:
                return None
            return head[13:].decode("utf-8", "replace") or "brine-master did not take the request"
    except socket.timeout:
        _drop_socket(state)
        return "brine-master at {} did not answer within {} ms".format(endpoint, timeout_ms)
    except OSError as exc:
        _drop_socket(state)
        return "brine-master at {} went away before it answered: {}".format(endpoint, exc)


def _write(frames):
    """Hands `frames` to brine-master and returns once they are committed or
    spooled. Returns True when committed. Never raises."""
    if not frames:
        return True
    state = _process_state()
    endpoint = _cache_endpoint()
    reason = "no endpoint"
    if endpoint is not None:
        with state["lock"]:
            try:
                reason = _request(state, endpoint, frames)
            except OSError as exc:
                _drop_socket(state)
                reason = "cannot reach {}: {}".format(endpoint, exc)
            if reason is None:
                if state["unreachable"] == endpoint:
                    log.info("brine: brine-master at %s takes writes again", endpoint)
                state["unreachable"] = None
                return True
            if state["unreachable"] != endpoint:
                log.warning("brine: %s; spooling to %s until it does", reason, _spool_path())
            state["unreachable"] = endpoint
    _spool(frames)
    return False


# --- the spool -----------------------------------------------------------------


def _service_account():
    """(uid, gid) of the Salt master's `user`, who owns the spool; None when
    this process need not (or cannot) hand files to it."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(str(__opts__.get("user") or "root"))
    except KeyError:
        return None
    if pw.pw_uid == 0:
        return None
    return pw.pw_uid, pw.pw_gid


def _spool_owner():
    """(uid, gid) the spool folder and its files must belong to: the Salt
    master's `user` when this process is root and that user is not (root
    spools for it, docs/salt.md), else this process's own user."""
    owner = _service_account()
    return owner if owner is not None else (os.geteuid(), os.getegid())


def _open_spool_dir(create):
    """A descriptor on <cachedir>/brine-spool, opened O_DIRECTORY|O_NOFOLLOW
    relative to the cachedir and checked on the descriptor: a directory of the
    spool's owner (_spool_owner) with mode 0700. With `create`, a missing
    folder is made so (root hands the folder it made to the owner with fchown
    on its own descriptor); without, a missing folder is None. Raises OSError
    naming the reason for anything else: a symlink, another owner, another
    mode. Whoever controls the cachedir can then only point the spool at a
    folder the owner owns already, never make root write elsewhere."""
    cachedir = _cachedir()
    if create:
        os.makedirs(cachedir, exist_ok=True)  # Salt's cachedir, as configured
    try:
        parent = os.open(cachedir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise
        return None
    path = os.path.join(cachedir, "brine-spool")
    uid, gid = _spool_owner()
    try:
        created = False
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open("brine-spool", flags, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            if uid != os.geteuid() and os.fstat(parent).st_uid != uid:
                # root makes a folder for `user` only in `user`'s own
                # cachedir (Salt chowns it so): a cachedir path someone
                # pointed at, say, /etc must not get a folder `user` owns.
                raise OSError(
                    errno.EPERM,
                    "will not create {} for uid {}: the cachedir belongs to uid {}".format(
                        path, uid, os.fstat(parent).st_uid
                    ),
                )
            try:
                os.mkdir("brine-spool", 0o700, dir_fd=parent)
                created = True
            except FileExistsError:
                pass
            fd = os.open("brine-spool", flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OSError(exc.errno, "the spool folder {} is a symlink or not a directory: refused".format(path))
        raise
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
        if created and st.st_uid == os.geteuid():
            # Only the folder this call made, through its own descriptor: a
            # folder someone swapped in meanwhile is checked, never handed over.
            os.fchmod(fd, 0o700)
            if st.st_uid != uid:
                os.fchown(fd, uid, gid)
            st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) != 0o700:
            raise OSError(
                errno.EPERM,
                "the spool folder {} must be a directory of uid {} with mode 0700, not of uid {} with mode {:o}: "
                "refused".format(path, uid, st.st_uid, stat.S_IMODE(st.st_mode)),
            )
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_spool_file(dir_fd, name, owner):
    """This process's spool file `name` in the checked folder `dir_fd`, open
    for appending: the existing one, or a new one made O_CREAT|O_EXCL (and,
    by root, handed to `owner` with fchown on its descriptor). None when
    another process made it in between (try again). Raises OSError for a file
    that is not a regular file of `owner` with one link and mode 0600 or less:
    a link planted there is refused, never written through."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    created = False
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
            created = True
        except FileExistsError:
            return None
    try:
        st = os.fstat(fd)
        if created and st.st_uid != owner[0]:
            # root writes for the Salt master's user, who must read, rename
            # and remove the file: only the file this call created.
            os.fchown(fd, *owner)
            st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != owner[0]
            or st.st_nlink != 1
            or stat.S_IMODE(st.st_mode) & 0o077
        ):
            raise OSError(
                errno.EPERM,
                "the spool file {} is not a regular file of uid {} with one link and mode 0600: refused".format(
                    name, owner[0]
                ),
            )
        return fd
    except BaseException:
        os.close(fd)
        raise


def _spool(frames):
    """Appends records for `frames` to this process's spool file, fsynced.
    Returns False (logged critical) when the spool cannot be written."""
    path = _spool_path()
    try:
        _append_spool(path, frames)
        return True
    except OSError as exc:
        log.critical(
            "brine: cannot spool %d job-cache frames to %s (%s) while brine-master is unreachable; "
            "they are lost",
            len(frames),
            path,
            exc,
        )
        return False


def _append_spool(path, frames):
    import fcntl  # not on Windows, where Salt masters do not run

    name = os.path.basename(path)
    owner = _spool_owner()
    data = b"".join(
        _SPOOL_MAGIC + struct.pack(">I", len(f)) + f + struct.pack(">I", zlib.crc32(f) & 0xFFFFFFFF)
        for f in frames
    )
    dir_fd = _open_spool_dir(create=True)
    try:
        while True:
            fd = _open_spool_file(dir_fd, name, owner)
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                # brine-master may have taken (renamed) the file between our open
                # and our lock: then write to a fresh one.
                mine = os.fstat(fd)
                try:
                    current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
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
                    os.fsync(dir_fd)  # the new file's name
                _log_once("spooled", logging.WARNING, "brine: writes are spooled in %s", path)
                return
            finally:
                os.close(fd)
    finally:
        os.close(dir_fd)


def _parse_spool(data):
    """The complete records' payloads of a spool file (spool.h's grammar);
    bytes that are not a complete record are skipped up to the next magic."""
    frames = []
    pos = 0
    while pos < len(data):
        if data[pos : pos + 4] == _SPOOL_MAGIC and pos + 8 <= len(data):
            (length,) = struct.unpack(">I", data[pos + 4 : pos + 8])
            end = pos + 8 + length
            if end + 4 <= len(data):
                payload = data[pos + 8 : end]
                (crc,) = struct.unpack(">I", data[end : end + 4])
                if zlib.crc32(payload) & 0xFFFFFFFF == crc:
                    frames.append(payload)
                    pos = end + 4
                    continue
        nxt = data.find(_SPOOL_MAGIC, pos + 1)
        if nxt < 0:
            break
        pos = nxt
    return frames


def _read_spool_file(dir_fd, name):
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return (st.st_ino, st.st_size, st.st_mtime_ns), b"".join(chunks)
    finally:
        os.close(fd)


def _spooled_writes():
    """The job-cache writes in the spool, as (operation, data), in file order.
    Read before the store: a file brine-master files and removes between the
    two reads is then seen in the store."""
    try:
        dir_fd = _open_spool_dir(create=False)
    except OSError as exc:
        _log_once("spool-dir", logging.WARNING, "brine: not reading the spool: %s", exc)
        return []
    if dir_fd is None:
        return []
    try:
        return _spooled_writes_in(dir_fd)
    finally:
        os.close(dir_fd)


def _spooled_writes_in(dir_fd):
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return []
    state = _process_state()
    cache = state["spool_cache"]
    seen = set()
    writes = []
    for name in names:
        if not (name.endswith(".frames") or name.endswith(".frames.taken")):
            continue
        path = os.path.join(_spool_dir(), name)
        try:
            key, data = _read_spool_file(dir_fd, name)
        except FileNotFoundError:
            if not name.endswith(".frames"):
                continue  # filed and removed meanwhile: the store has it
            try:  # taken (renamed) by brine-master meanwhile
                path += ".taken"
                key, data = _read_spool_file(dir_fd, name + ".taken")
            except OSError:
                continue
        except OSError as exc:
            _log_once("spool-read:" + name, logging.WARNING, "brine: cannot read the spool file %s: %s", path, exc)
            continue
        if key is None:
            continue
        seen.add(path)
        cached = cache.get(path)
        if cached is None or cached[0] != key:
            parsed = []
            for frame in _parse_spool(data):
                tag, sep, packed = frame.partition(b"\n\n")
                if not sep or not tag.startswith(_CACHE_PREFIX.encode()):
                    continue
                try:
                    payload = msgpack.unpackb(
                        packed, raw=False, strict_map_key=False, unicode_errors="surrogateescape"
                    )
                except Exception:  # pylint: disable=broad-except
                    continue
                if isinstance(payload, dict):
                    parsed.append((tag[len(_CACHE_PREFIX) :].decode("utf-8", "replace"), payload))
            cached = (key, parsed)
            cache[path] = cached
        writes.extend(cached[1])
    for path in list(cache):
        if path not in seen:
            del cache[path]
    return writes


class _Spooled:
    """What the spooled job-cache writes say, with the store's rules: a
    publish load wins over another load, a job with only returns gets the stub
    load a return makes, minion lists merge, the first return per minion wins."""

    def __init__(self, writes):
        self.loads = {}
        self.minions = {}
        self.returns = {}
        self.endtimes = {}
        for op, data in writes:
            jid = data.get("jid")
            if not isinstance(jid, str):
                continue
            if op == "save_load":
                load = data.get("load")
                if isinstance(load, dict):
                    old = self.loads.get(jid)
                    if old is None or old.get("brine_stub") or (
                        load.get("cmd") == "publish" and old.get("cmd") != "publish"
                    ):
                        self.loads[jid] = dict(load)
                self._merge(jid, data.get("minions"))
            elif op == "save_minions":
                self._merge(jid, data.get("minions"))
            elif op == "return":
                minion = data.get("id")
                if not isinstance(minion, str):
                    continue
                self.returns.setdefault(jid, {}).setdefault(minion, data)
                if jid not in self.loads:
                    self.loads[jid] = dict(self._stub(data), brine_stub=True)
                self._merge(jid, [minion])
            elif op == "endtime" and isinstance(data.get("endtime"), str):
                self.endtimes[jid] = data["endtime"]

    def _merge(self, jid, minions):
        if isinstance(minions, (list, tuple)):
            self.minions.setdefault(jid, set()).update(m for m in minions if isinstance(m, str))

    @staticmethod
    def _stub(ret):
        stub = {"jid": ret["jid"]}
        if "fun" in ret:
            stub["fun"] = ret["fun"]
        stub["arg"] = ret.get("arg") or ret.get("fun_args") or []
        stub["tgt"] = ret["id"]
        stub["tgt_type"] = "glob"
        if "user" in ret:
            stub["user"] = ret["user"]
        return stub

    def load(self, jid):
        load = self.loads.get(jid)
        if load is None:
            return None
        load = dict(load)
        load.pop("brine_stub", None)
        return load

    def jids(self):
        return sorted(self.loads)


def _spooled():
    return _Spooled(_spooled_writes())


# --- writes ------------------------------------------------------------------


def _write_cache(op, data):
    return _write([_frame(_CACHE_PREFIX + op, data)])


def _gen_jid():
    """Salt's gen_jid (spec 2.1): UTC %Y%m%d%H%M%S%f, with unique_jid
    strictly increasing per process and suffixed with _<pid>."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if not __opts__.get("unique_jid", False):
        return now.strftime("%Y%m%d%H%M%S%f")
    state = _process_state()
    with state["lock"]:
        last = state["jid_time"]
        if last is not None and now <= last:
            now = last + datetime.timedelta(microseconds=1)
        state["jid_time"] = now
    return "{}_{}".format(now.strftime("%Y%m%d%H%M%S%f"), os.getpid())


def prep_jid(nocache=False, passed_jid=None, recurse_count=0):  # pylint: disable=unused-argument
    """
    Returns `passed_jid` or a new jid. Salt calls this for every return, so
    nothing is sent unless `nocache` has to be recorded.
    """
    jid = passed_jid if passed_jid is not None else _gen_jid()
    if nocache:
        _write_cache("prep_jid", {"jid": jid, "nocache": True})
    return jid


def save_load(jid, load, minions=None):
    """
    Saves the job's load. brine-master keeps a publish load (``cmd: publish``)
    over an event's or a return's, never a return's over a publish (case C6);
    minion lists merge.
    """
    _write_cache(
        "save_load",
        {"jid": jid, "load": load, "minions": list(minions) if minions is not None else None},
    )


def save_minions(jid, minions, syndic_id=None):
    """Merges `minions` into the job's expected minions."""
    data = {"jid": jid, "minions": list(minions)}
    if syndic_id is not None:
        data["syndic_id"] = syndic_id
    _write_cache("save_minions", data)


def returner(ret):
    """Stores one minion return; the first return per minion and job wins."""
    if ret.get("jid") == "req":
        ret["jid"] = prep_jid(nocache=ret.get("nocache", False))
    _write_cache("return", ret)


def event_return(events):
    """Archives Salt's events (``{"tag": ..., "data": ...}``) in order, as one
    acknowledged batch."""
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
    _write(frames)


def update_endtime(jid, time):  # pylint: disable=redefined-outer-name
    """Records the job's end time text (job_cache_store_endtime)."""
    _write_cache("endtime", {"jid": jid, "endtime": time})


def clean_old_jobs():
    """
    Nothing to do here: brine-master's maintenance applies keep_jobs_seconds
    every loop_interval.
    """
    log.debug("brine: clean_old_jobs is brine-master's maintenance; nothing to do here")


# --- reads -------------------------------------------------------------------


def _parse_float(text):
    # The store keeps a NaN as 9e-999 (a spelling SQLite's json functions
    # accept; no finite float reads back as it) and infinities as +-9e999,
    # which float() already reads as infinities (docs/reliability.md).
    return float("nan") if text in ("9e-999", "-9e-999") else float(text)


def _loads(text):
    return json.loads(text, parse_float=_parse_float)


def _query_server(uri, sql, params):
    """_query on a PostgreSQL store: psycopg2 (Debian's python3-psycopg2), a
    read-only session. The views are the same as on SQLite
    (migrations/postgres/0002), so only the placeholders differ. The URI is
    never logged: it may hold a password (brine-master refuses one; .pgpass
    is the place)."""
    try:
        import psycopg2  # pylint: disable=import-outside-toplevel
    except ImportError:
        _log_once("no-psycopg2", logging.ERROR,
                  "brine: brine.database is a PostgreSQL URI, and reading it needs python3-psycopg2")
        return None
    try:
        conn = psycopg2.connect(uri, connect_timeout=10)
    except psycopg2.Error as exc:
        log.error("brine: cannot open the PostgreSQL store: %s", str(exc).strip())
        return None
    try:
        conn.set_session(readonly=True, autocommit=True)
        with conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)
            return cur.fetchall()
    except psycopg2.Error as exc:
        log.error("brine: cannot read the PostgreSQL store: %s", str(exc).strip())
        return None
    finally:
        conn.close()


def _query(sql, params=()):
    """Rows of `sql` from the store opened read-only; None when the store
    cannot be read (logged). `sql` is written for both SQLite and PostgreSQL,
    with ? placeholders."""
    path = _database()
    if _is_server_uri(path):
        return _query_server(path, sql, params)
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


_MONTHS = ["", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _jid_to_time(jid):
    """Salt's jid_to_time, as the brine_api_v1_job view computes it."""
    if not (len(jid) == 20 or (len(jid) > 21 and jid[20] == "_")) or not jid[:20].isdigit():
        return ""
    month = int(jid[4:6])
    name = _MONTHS[month] if 0 < month <= 12 else ""
    return "{}, {} {} {}:{}:{}.{}".format(jid[:4], name, jid[6:8], jid[8:10], jid[10:12], jid[12:14], jid[14:20])


def _instance(jid, load, ext):
    """format_jid_instance(_ext) of a spooled load, as the view builds it."""
    job = {
        "Function": load.get("fun", "unknown-function"),
        "Arguments": load.get("arg", []),
        "Target": load.get("tgt", "unknown-target"),
        "Target-type": load.get("tgt_type", "list"),
        "User": load.get("user", "root"),
    }
    metadata = load.get("metadata")
    if metadata is None and isinstance(load.get("kwargs"), dict):
        metadata = load["kwargs"].get("metadata")
    if metadata is not None:
        job["Metadata"] = metadata
    if ext:
        job["JID"] = jid
    job["StartTime"] = _jid_to_time(jid)
    return job


def _result(ret):
    """local_cache's get_jid entry of one return load."""
    out = {"return": ret.get("return")}
    for key in ("retcode", "success", "out"):
        if key in ret:
            out[key] = ret[key]
    return out


def get_load(jid):
    """The job's load plus ``Minions`` (sorted expected minions); {} if unknown."""
    spooled = _spooled()
    rows = _query("SELECT load FROM brine_api_v1_job WHERE jid = ?", (jid,))
    load = _loads(rows[0][0]) if rows else spooled.load(jid)
    if rows and rows[0] and (spooled.loads.get(jid) or {}).get("cmd") == "publish" and load.get("cmd") != "publish":
        load = spooled.load(jid)  # the publish load is still in the spool; the store has a stub
    if load is None:
        return {}
    minions = set(spooled.minions.get(jid, ()))
    for row in _query("SELECT minion FROM brine_api_v1_job_minion WHERE jid = ?", (jid,)) or ():
        minions.add(row[0])
    if minions:
        load["Minions"] = sorted(minions)
    return load


def get_jid(jid):
    """{minion: {"return", ["retcode"], ["success"], ["out"]}}; {} if unknown."""
    spooled = _spooled().returns.get(jid, {})
    rows = _query("SELECT minion, result FROM brine_api_v1_return WHERE jid = ? ORDER BY minion", (jid,))
    ret = {minion: _loads(result) for minion, result in rows or ()}
    if spooled:
        for minion, load in spooled.items():
            ret.setdefault(minion, _result(load))
        ret = dict(sorted(ret.items()))
    return ret


def get_jids():
    """{jid: {Function, Arguments, Target, Target-type, User, [Metadata], StartTime[, EndTime]}}."""
    spooled = _spooled()
    rows = _query("SELECT jid, instance, endtime FROM brine_api_v1_job ORDER BY jid")
    with_endtime = bool(__opts__.get("job_cache_store_endtime", False))
    ret = {}
    for jid, instance, endtime in rows or ():
        job = _loads(instance)
        endtime = endtime if endtime is not None else spooled.endtimes.get(jid)
        if with_endtime and endtime is not None:
            job["EndTime"] = endtime
        ret[jid] = job
    missing = [jid for jid in spooled.jids() if jid not in ret]
    for jid in missing:
        job = _instance(jid, spooled.load(jid), ext=False)
        if with_endtime and jid in spooled.endtimes:
            job["EndTime"] = spooled.endtimes[jid]
        ret[jid] = job
    if missing:
        ret = dict(sorted(ret.items()))
    return ret


def get_jids_filter(count, filter_find_job=True):
    """The newest `count` jobs, oldest first, as format_jid_instance_ext."""
    spooled = _spooled()
    rows = _query(
        "SELECT jid, instance_ext FROM (SELECT jid, instance_ext FROM brine_api_v1_job"
        " WHERE (? = 0 OR fun IS NULL OR fun <> 'saltutil.find_job') ORDER BY jid DESC LIMIT ?) AS newest"
        " ORDER BY jid",
        (1 if filter_find_job else 0, int(count)),
    )
    jobs = {jid: _loads(instance) for jid, instance in rows or ()}
    for jid in spooled.jids():
        load = spooled.load(jid)
        if jid not in jobs and not (filter_find_job and load.get("fun") == "saltutil.find_job"):
            jobs[jid] = _instance(jid, load, ext=True)
    return [jobs[jid] for jid in sorted(jobs)[-int(count) :]] if int(count) > 0 else []


def get_fun(fun):
    """{minion: full return load} from each minion's newest job running `fun`."""
    spooled = _spooled()
    rows = _query("SELECT minion, full_ret, jid FROM brine_api_v1_fun_latest WHERE fun = ? ORDER BY minion", (fun,))
    newest = {minion: (jid, _loads(full_ret)) for minion, full_ret, jid in rows or ()}
    for jid, returns in spooled.returns.items():
        for minion, ret in returns.items():
            if ret.get("fun") == fun and (minion not in newest or newest[minion][0] < jid):
                newest[minion] = (jid, ret)
    return {minion: newest[minion][1] for minion in sorted(newest)}


def get_minions():
    """Every minion that has returned, sorted."""
    spooled = _spooled()
    rows = _query("SELECT minion FROM brine_api_v1_returned_minion ORDER BY minion")
    minions = {r[0] for r in rows or ()}
    for returns in spooled.returns.values():
        minions.update(returns)
    return sorted(minions)


def get_endtime(jid):
    """The job's end time text, or False."""
    spooled = _spooled()
    rows = _query("SELECT endtime FROM brine_api_v1_endtime WHERE jid = ?", (jid,))
    if rows:
        return rows[0][0].rstrip("\n")
    if jid in spooled.endtimes:
        return spooled.endtimes[jid].rstrip("\n")
    return False
