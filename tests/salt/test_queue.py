"""The Salt queue backend (contrib/salt/queues/brine.py): it and brine-run's
queue.* see the same queues and items (spec salt-queue-and-tests.md 1)."""

import os
import time
import unittest

from harness import brine_run, BIN_DIR, QUEUE_PATH, BrineMaster, load_module


class QueueBackendTest(unittest.TestCase):
    def setUp(self):
        # No brine-master is needed: brine-run writes the queue tables itself.
        self.master = BrineMaster()
        self.addCleanup(self.master.close)
        os.makedirs(self.master.cachedir)
        path = os.environ.get("PATH", "")
        self.addCleanup(os.environ.__setitem__, "PATH", path)
        os.environ["PATH"] = BIN_DIR + os.pathsep + path  # where an install puts brine-run
        self.mod = load_module(QUEUE_PATH, self.master.opts())
        self.assertEqual(self.mod.__virtual__(), "brine")

    def brine_run(self, *args):
        return brine_run(self.master.conf_dir, *args)

    def test_the_backend_and_brine_run_see_the_same_queues_and_items(self):
        self.assertIs(self.mod.insert("myqueue", "item1"), True)
        self.assertIs(self.mod.insert("myqueue", ["item2", "item3"]), True)
        self.assertEqual(self.brine_run("queue.list_items", "myqueue"), ["item1", "item2", "item3"])
        self.assertIs(self.brine_run("queue.insert", "myqueue", "item4"), True)
        self.assertEqual(self.mod.list_items("myqueue"), ["item1", "item2", "item3", "item4"])
        self.assertEqual(self.mod.list_length("myqueue"), 4)
        self.assertEqual(self.mod.list_queues(), ["myqueue"])
        self.assertEqual(
            self.mod.insert("myqueue", "item1"),
            "Item already exists in this queue. sqlite error: UNIQUE constraint failed: myqueue.name",
        )
        self.assertEqual(self.mod.pop("myqueue"), ["item1"])
        self.assertEqual(self.brine_run("queue.pop", "myqueue", "2"), ["item2", "item3"])
        self.assertIs(self.mod.delete("myqueue", "item4"), True)
        self.assertEqual(self.brine_run("queue.list_length", "myqueue"), 0)
        self.assertEqual(self.mod.list_length("newq"), 0)
        self.assertEqual(sorted(self.brine_run("queue.list_queues")), ["myqueue", "newq"])

    def test_items_keep_their_type_through_the_command_line(self):
        items = [
            "5",
            5,
            1.5,
            True,
            "true",
            "it's",
            "a # comment-looking item",
            "key=value",
            "tab\there",
            "",
            "1_000",
            "[not a list",
            {"fun": "test.stdout_print", "args": [], "kwargs": {}},
            "ünïcode",
        ]
        for item in items:
            self.assertIs(self.mod.insert("typed", item), True, item)
        self.assertEqual(self.mod.list_items("typed"), items)
        runner_item = {"fun": "test.arg", "args": ["a"], "kwargs": {"k": 1}}
        self.mod.insert("runners", runner_item)
        self.assertEqual(self.mod.pop("runners", 1, is_runner=True), [runner_item])
        self.assertEqual(self.mod.pop("typed", "all"), items)

    def test_a_refused_call_raises_salt_invocation_error(self):
        with self.assertRaises(self.mod.SaltInvocationError) as caught:
            self.mod.pop("myqueue", "x")
        self.assertIn('Quantity must be an integer or "all".', str(caught.exception))

    def test_an_item_of_one_mebibyte_goes_in_and_comes_out_whole(self):
        # Linux caps one command-line word at 128 KiB: the backend passes its
        # arguments on standard input.
        item = "".join(chr(0x41 + i % 26) for i in range(1 << 20))
        self.assertIs(self.mod.insert("big", item), True)
        self.assertIs(self.mod.insert("big", {"blob": item[:300000], "n": 1}), True)
        self.assertEqual(self.mod.pop("big", 1), [item])
        self.assertEqual(self.mod.pop("big", 1), [{"blob": item[:300000], "n": 1}])

    def test_a_failing_call_raises_command_execution_error_with_brine_runs_message(self):
        os.makedirs(os.path.join(self.master.dir, "not-a-store.sqlite"))
        with open(os.path.join(self.master.conf_dir, "master"), "a") as f:
            f.write("brine.database: {}\n".format(os.path.join(self.master.dir, "not-a-store.sqlite")))
        with self.assertRaises(self.mod.CommandExecutionError) as caught:
            self.mod.list_queues()
        self.assertIn("exit 1", str(caught.exception))
        self.assertIn("not-a-store.sqlite", str(caught.exception))

    def test_a_call_that_hangs_is_stopped_after_queue_timeout_s(self):
        fake_bin = os.path.join(self.master.dir, "fake-bin")
        os.makedirs(fake_bin)
        with open(os.path.join(fake_bin, "brine-run"), "w") as f:
            f.write("#!/bin/sh\nexec sleep 30\n")
        os.chmod(os.path.join(fake_bin, "brine-run"), 0o755)
        os.environ["PATH"] = fake_bin + os.pathsep + os.environ["PATH"]
        mod = load_module(QUEUE_PATH, self.master.opts(**{"brine.queue_timeout_s": 1}))
        started = time.monotonic()
        with self.assertRaises(mod.CommandExecutionError) as caught:
            mod.list_queues()
        self.assertLess(time.monotonic() - started, 10)
        self.assertIn("brine.queue_timeout_s", str(caught.exception))

    def test_virtual_is_false_without_brine_run(self):
        os.environ["PATH"] = self.master.dir  # holds no brine-run
        mod = load_module(QUEUE_PATH, self.master.opts())
        result = mod.__virtual__()
        self.assertIs(result[0], False)
        self.assertIn("brine-run", result[1])


if __name__ == "__main__":
    unittest.main()
