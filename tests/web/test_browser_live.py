"""brine-web's live pages in a real browser (Debian's chromium, chromium-driver
and python3-selenium, as test_browser.py), against a store that brine-sim
fills through a real brine-master, which keeps running so that events can
arrive while a page is open.

Checks that /events renders its history and opens the live tail, that an
event pushed after the page loaded shows up in the tail (and Pause stops it),
that /sql runs a query and lists the documented views, and that the console
has no error (a CSP violation would be one). Screenshots go to
$BRINE_SCREENSHOT_DIR (ctest: build/web-screenshots/events.png, sql.png).

Run: cd tests/web && BRINE_BIN_DIR=$PWD/../../build/bin /usr/bin/python3 -m unittest -v test_browser_live
"""

import os
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from test_browser import (BIN_DIR, SCREENSHOT_DIR, missing_browser, run, start_chromium, start_web, stop,
                          wait_for_file)

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - reported by the skip below
    By = WebDriverWait = None


@unittest.skipIf(missing_browser() is not None, "SKIPPED: {}".format(missing_browser()))
class LiveBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="brine-web-live-")
        cls.dir = cls._tmp.name
        cls.conf = os.path.join(cls.dir, "conf")
        os.makedirs(cls.conf)
        with open(os.path.join(cls.conf, "master"), "w") as f:
            f.write("id: web_master\ncachedir: {d}/cache\nbrine.sock_dir: {d}/sock\n"
                    "brine.log_file: {d}/log/brine-master\nbrine.web_port: 0\n"
                    "brine.flush_interval_ms: 50\nbrine.bus: bind\n".format(d=cls.dir))
        cls.master = cls.web = cls.driver = None
        try:
            cls.master = subprocess.Popen([os.path.join(BIN_DIR, "brine-master"), "-c", cls.conf],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            wait_for_file(os.path.join(cls.dir, "sock", "master_event_pull.ipc"), cls.master, "brine-master")
            cls.sim(jobs=4, seed=7)
            cls.brine_run = [os.path.join(BIN_DIR, "brine-run"), "-c", cls.conf]
            cls.web, cls.url, cls.base = start_web(cls.conf, os.path.join(cls.dir, "sock"))
            cls.driver = start_chromium(os.path.join(cls.dir, "chromium-profile"))
            cls.driver.get(cls.url)  # logs in; the session cookie stays for the tests
            os.makedirs(SCREENSHOT_DIR, exist_ok=True)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def sim(cls, jobs, seed):
        run(os.path.join(BIN_DIR, "brine-sim"), "-c", cls.conf, "--minions", "4", "--jobs", str(jobs), "--rate",
            "unlimited", "--functions", "cmd.run", "--seed", str(seed))

    @classmethod
    def tearDownClass(cls):
        if cls.driver is not None:
            cls.driver.quit()
        stop(cls.web)
        stop(cls.master)
        cls._tmp.cleanup()

    def console_errors(self):
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(SCREENSHOT_DIR, name + ".png"))

    def test_1_events_page_shows_history_and_opens_the_tail(self):
        self.driver.get(self.base + "events")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#events tbody tr")
        self.assertGreater(len(rows), 0)
        tags = [td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#events td.event-tag")]
        self.assertTrue(any(t.startswith("salt/job/") for t in tags), tags[:5])
        WebDriverWait(self.driver, 30).until(
            lambda d: d.find_element(By.ID, "tail-status").text.startswith("live"))
        # A filter is a URL: the glob is in the form and in the stream's address.
        self.driver.get(self.base + "events?tag=" + urllib.parse.quote("salt/job/*/ret/*"))
        tags = [td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#events td.event-tag")]
        self.assertGreater(len(tags), 0)
        self.assertTrue(all("/ret/" in t for t in tags), tags[:5])
        self.assertEqual(self.driver.find_element(By.ID, "tag").get_attribute("value"), "salt/job/*/ret/*")
        self.assertEqual(self.console_errors(), [])

    def test_2_the_live_tail_shows_an_event_pushed_after_the_page_loaded(self):
        self.driver.get(self.base + "events")
        WebDriverWait(self.driver, 30).until(
            lambda d: d.find_element(By.ID, "tail-status").text.startswith("live"))
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#live-events tbody tr")), 0)
        self.sim(jobs=1, seed=11)
        WebDriverWait(self.driver, 30).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live-events tbody tr.live-event")) > 0)
        tags = [td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#live-events td.event-tag")]
        self.assertTrue(any(t.startswith("salt/job/") for t in tags), tags)
        self.shot("events")
        pause = self.driver.find_element(By.ID, "tail-pause")
        pause.click()
        self.assertEqual(pause.text, "Resume")
        self.assertTrue(self.driver.find_element(By.ID, "tail-status").text.startswith("paused"))
        shown = len(self.driver.find_elements(By.CSS_SELECTOR, "#live-events tbody tr.live-event"))
        self.sim(jobs=1, seed=12)
        time.sleep(1)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#live-events tbody tr.live-event")), shown)
        # Resume replays what came while paused, from the cursor.
        pause.click()
        WebDriverWait(self.driver, 30).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live-events tbody tr.live-event")) > shown)
        self.assertEqual(self.console_errors(), [])

    def test_3_sql_console_runs_a_query_beside_the_views(self):
        query = "SELECT jid, fun FROM jids ORDER BY jid DESC LIMIT 5"
        self.driver.get(self.base + "sql?q=" + urllib.parse.quote(query))
        self.assertEqual(self.driver.find_element(By.ID, "q").get_attribute("value"), query)
        headers = [th.text for th in self.driver.find_elements(By.CSS_SELECTOR, "#result thead th")]
        self.assertEqual(headers, ["jid", "fun"])
        self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "#result tbody tr")), 0)
        views = [s.get_attribute("textContent") for s in
                 self.driver.find_elements(By.CSS_SELECTOR, "#views summary.view-name")]
        self.assertIn("jids", views)
        self.assertIn("salt_events", views)
        self.shot("sql")
        self.driver.get(self.base + "sql?q=" + urllib.parse.quote("DELETE FROM event"))
        self.assertTrue(self.driver.find_element(By.ID, "sql-error").text)
        self.assertEqual(self.console_errors(), [])


if __name__ == "__main__":
    unittest.main()
