"""Issue 25, item 1: the returner plug-in's spool folder is opened, never
followed. The plug-in opens <cachedir>/brine-spool O_DIRECTORY|O_NOFOLLOW,
requires a folder of the spool's owner (the Salt master's `user`) with mode
0700, and creates its files relative to that descriptor; anything else is
refused, logged at critical level, and never raised to Salt."""

import glob
import os
import stat
import unittest

from harness import RETURNER_PATH, BrineMaster, jid_now, load_module
from test_acknowledged import ensure_user, start_worker


def _return(jid, minion):
    return {"cmd": "_return", "id": minion, "jid": jid, "fun": "test.ping", "fun_args": [],
            "return": True, "retcode": 0, "success": True}


@unittest.skipUnless(os.geteuid() == 0, "needs root to act as the Salt master's user and as root")
class SpoolFolderTest(unittest.TestCase):
    USER = "brine-spooltest"

    def setUp(self):
        self.pw = ensure_user(self.USER)
        self.master = BrineMaster("user: {}\nloop_interval: 1\n".format(self.USER))
        self.addCleanup(self.master.close)
        os.chmod(self.master.dir, 0o755)  # the service user reaches its folders
        os.makedirs(self.master.cachedir)
        os.chown(self.master.cachedir, self.pw.pw_uid, self.pw.pw_gid)  # Salt gives it to `user`
        # A folder only root may write, as /etc/apt/apt.conf.d is.
        self.target = os.path.join(self.master.dir, "root-only")
        os.mkdir(self.target, 0o700)
        # brine-master is not running: every write goes to the spool.
        self.opts = self.master.opts(user=self.USER, **{"brine.send_timeout_ms": 200})

    def one_return(self, minion, user):
        """One returner() call in a process of its own (root's salt-run, or the
        master as `user`); its stderr. The call must not raise."""
        proc = start_worker(self.opts, "one_return", "{}:{}".format(jid_now(1), minion), user=user)
        proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        self.assertEqual(proc.returncode, 0, err)
        return err

    def plant_symlink(self):
        os.symlink(self.target, self.master.spool_dir)
        os.lchown(self.master.spool_dir, self.pw.pw_uid, self.pw.pw_gid)  # the service user made it

    def test_a_symlinked_spool_folder_to_a_root_only_folder_is_refused_and_nothing_is_created_there(self):
        self.plant_symlink()
        err = self.one_return("a", None)  # root's salt-run
        self.assertEqual(os.listdir(self.target), [], err)
        self.assertEqual(os.stat(self.target).st_uid, 0)
        self.assertIn("symlink", err)
        self.assertIn("lost", err)
        err = self.one_return("b", self.USER)  # the master itself
        self.assertIn("lost", err)
        self.assertEqual(os.listdir(self.target), [])
        self.assertTrue(os.path.islink(self.master.spool_dir))

    def test_a_spool_folder_of_another_owner_or_mode_is_refused(self):
        os.mkdir(self.master.spool_dir, 0o700)  # root's, not the service user's
        err = self.one_return("a", None)
        self.assertIn("must be a directory of uid {}".format(self.pw.pw_uid), err)
        self.assertEqual(os.listdir(self.master.spool_dir), [])
        os.chown(self.master.spool_dir, self.pw.pw_uid, self.pw.pw_gid)
        os.chmod(self.master.spool_dir, 0o755)  # readable by every account
        err = self.one_return("b", None)
        self.assertIn("mode 755", err)
        self.assertEqual(os.listdir(self.master.spool_dir), [])

    def test_root_creates_a_missing_spool_folder_for_the_service_user_and_its_file_through_the_folder(self):
        err = self.one_return("a", None)
        self.assertNotIn("lost", err)
        st = os.lstat(self.master.spool_dir)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (self.pw.pw_uid, 0o700))
        files = glob.glob(os.path.join(self.master.spool_dir, "*.frames"))
        self.assertEqual(len(files), 1)
        fst = os.lstat(files[0])
        self.assertEqual((fst.st_uid, stat.S_IMODE(fst.st_mode)), (self.pw.pw_uid, 0o600))

    def test_root_creates_no_folder_for_the_service_user_in_a_cachedir_it_does_not_own(self):
        # As when the cachedir path leads somewhere else, such as /etc.
        os.chown(self.master.cachedir, 0, 0)
        err = self.one_return("a", None)
        self.assertFalse(os.path.lexists(self.master.spool_dir), err)
        self.assertIn("will not create", err)
        self.assertIn("lost", err)

    def test_a_link_planted_as_the_spool_file_is_refused_and_its_target_untouched(self):
        os.mkdir(self.master.spool_dir, 0o700)
        os.chown(self.master.spool_dir, self.pw.pw_uid, self.pw.pw_gid)
        victim = os.path.join(self.target, "victim")
        with open(victim, "w") as f:
            f.write("root's\n")
        # This process (root, as salt-run) spools to <pid>.frames.
        mod = load_module(RETURNER_PATH, self.opts)
        name = os.path.join(self.master.spool_dir, "{}.frames".format(os.getpid()))
        os.symlink(victim, name)
        mod.returner(_return(jid_now(2), "a"))  # refused, not raised
        os.unlink(name)
        os.link(victim, name)  # a hard link: root's file, two links
        mod.returner(_return(jid_now(3), "b"))
        with open(victim) as f:
            self.assertEqual(f.read(), "root's\n")
        st = os.stat(victim)
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o644))


if __name__ == "__main__":
    unittest.main()
