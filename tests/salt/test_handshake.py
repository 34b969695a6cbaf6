"""Issue 25, item 4: with ipc_mode tcp the plug-in and brine-master prove to
each other that they hold brine's key (cache_socket.h's handshake) before a
frame moves. A process without the key that took the port gets no frame and
the write is spooled; a plug-in older than the handshake is refused with a
reason on both sides and spools; brine-master closes connections that sit
idle, and the plug-in notices before it sends."""

import logging
import os
import socket
import struct
import subprocess
import threading
import time
import unittest

from harness import BIN_DIR, RETURNER_PATH, BrineMaster, jid_now, load_module


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TcpBrineMaster(BrineMaster):
    """brine-master with ipc_mode: tcp on ports of its own."""

    def __init__(self, extra_config=""):
        self.pull_port, self.pub_port, self.cache_port = free_port(), free_port(), free_port()
        while len({self.pull_port, self.pub_port, self.cache_port}) < 3:
            self.pub_port, self.cache_port = free_port(), free_port()
        super().__init__(
            "ipc_mode: tcp\nbrine.tcp_pull_port: {}\nbrine.tcp_pub_port: {}\nbrine.tcp_cache_port: {}\n{}".format(
                self.pull_port, self.pub_port, self.cache_port, extra_config
            )
        )
        self.key_file = os.path.join(self.sock_dir, "brine_cache.key")

    def log_text(self):
        try:
            with open(self.log_file, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def start(self):
        before = self.log_text().count("started:")
        self.proc = subprocess.Popen(
            [os.path.join(BIN_DIR, "brine-master"), "-c", self.conf_dir],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while self.log_text().count("started:") <= before:
            if self.proc.poll() is not None:
                raise RuntimeError("brine-master exited: " + self.proc.stderr.read().decode())
            if time.monotonic() > deadline:
                raise RuntimeError("brine-master did not start")
            time.sleep(0.02)

    def opts(self, **extra):
        return super().opts(ipc_mode="tcp", **dict({"brine.tcp_cache_port": self.cache_port}, **extra))


def return_of(jid, minion):
    return {"cmd": "_return", "id": minion, "jid": jid, "fun": "test.ping", "return": True, "retcode": 0,
            "success": True}


class Squatter:
    """A process without the key listening on the job-cache port: it records
    what it receives and answers what a forger would (a welcome it cannot
    prove, and "stored" to anything)."""

    def __init__(self, port):
        self.received = b""
        self.connections = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(16)
        self._listener.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            self.connections += 1
            conn.settimeout(0.5)
            try:
                while not self._stop.is_set():
                    try:
                        data = conn.recv(65536)
                    except socket.timeout:
                        continue
                    if not data:
                        break
                    self.received += data
                    fake_welcome = b"BRW1" + os.urandom(64)
                    stored = b"BRA1" + struct.pack(">Q", 1) + b"\x00"
                    conn.sendall(struct.pack(">I", len(fake_welcome)) + fake_welcome +
                                 struct.pack(">I", len(stored)) + stored)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self._listener.close()


class HandshakeTest(unittest.TestCase):
    def setUp(self):
        self.master = TcpBrineMaster()
        self.addCleanup(self.master.close)

    def test_a_write_over_tcp_is_filed_after_the_handshake_and_the_key_is_brines_own(self):
        self.master.start()
        st = os.lstat(self.master.key_file)
        self.assertEqual(st.st_mode & 0o7777, 0o600)
        self.assertEqual(st.st_size, 32)
        module = load_module(RETURNER_PATH, self.master.opts())
        jid = jid_now(1)
        module.returner(return_of(jid, "web1"))
        # Acknowledged: in the store when the call returns, and nothing spooled.
        self.assertEqual(self.master.query("SELECT id FROM salt_returns WHERE jid = ?", (jid,)), [("web1",)])
        self.assertFalse(os.path.exists(os.path.join(self.master.spool_dir, "{}.frames".format(os.getpid()))))

    def test_a_process_without_the_key_on_the_port_gets_no_frame_and_the_write_is_spooled(self):
        # brine-master ran once (the key exists), and is down; another user takes the port.
        self.master.start()
        self.assertEqual(self.master.stop(), 0)
        squatter = Squatter(self.master.cache_port)
        self.addCleanup(squatter.close)
        module = load_module(RETURNER_PATH, self.master.opts())
        jid = jid_now(2)
        secret = "the-secret-of-" + jid
        with self.assertLogs(level="WARNING") as logs:
            stored = module._write([module._frame("brine/cache/return", dict(return_of(jid, "web1"), secret=secret))])
        self.assertFalse(stored)
        self.assertGreaterEqual(squatter.connections, 1)
        # Only the hello (length, magic, nonce) went out: no frame, no secret.
        self.assertNotIn(secret.encode(), squatter.received)
        self.assertNotIn(b"BRQ1", squatter.received)
        self.assertEqual(len(squatter.received) % 40, 0, squatter.received)
        self.assertIn("did not prove that it holds brine's key", "\n".join(logs.output))
        spool = os.path.join(self.master.spool_dir, "{}.frames".format(os.getpid()))
        with open(spool, "rb") as f:
            self.assertIn(secret.encode(), f.read())

    def test_a_plugin_older_than_the_handshake_is_refused_with_a_reason_on_both_sides_and_spools(self):
        self.master.start()
        module = load_module(RETURNER_PATH, self.master.opts())
        module._handshake = lambda sock, endpoint, deadline: None  # what an older plug-in does: none
        jid = jid_now(3)
        with self.assertLogs(level="WARNING") as logs:
            stored = module._write([module._frame("brine/cache/return", return_of(jid, "web1"))])
        self.assertFalse(stored)
        self.assertIn("needs the key handshake", "\n".join(logs.output))
        self.assertEqual(self.master.query("SELECT count(*) FROM salt_returns WHERE jid = ?", (jid,)), [(0,)])
        self.assertIn("a request without the key handshake", self.master.log_text())

    def test_a_key_others_may_read_is_not_used_and_the_write_is_spooled(self):
        self.master.start()
        os.chmod(self.master.key_file, 0o644)
        module = load_module(RETURNER_PATH, self.master.opts())
        with self.assertLogs(level="WARNING") as logs:
            stored = module._write([module._frame("brine/cache/return", return_of(jid_now(4), "web1"))])
        self.assertFalse(stored)
        self.assertIn("it must be 0600", "\n".join(logs.output))

    def test_a_connection_brine_master_closed_while_idle_is_replaced_before_the_next_write(self):
        # send_timeout_ms 400: brine-master closes connections idle for 12 s.
        self.master = TcpBrineMaster("brine.send_timeout_ms: 400\n")
        self.addCleanup(self.master.close)
        self.master.start()
        module = load_module(RETURNER_PATH, self.master.opts(**{"brine.send_timeout_ms": 2000}))
        self.assertTrue(module._write([module._frame("brine/cache/return", return_of(jid_now(5), "web1"))]))
        kept = module._process_state()["socket"]
        time.sleep(14)
        # The kept connection was closed by brine-master; the write goes through a new one.
        self.assertTrue(module._write([module._frame("brine/cache/return", return_of(jid_now(6), "web2"))]))
        self.assertIsNot(module._process_state()["socket"], kept)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    unittest.main()
