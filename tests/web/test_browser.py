"""brine-web in a real browser: Debian's chromium and chromedriver through
python3-selenium (./brine.sh deps installs them), headless, against a store
that brine-sim filled through a real brine-master.

Checks the DOM of /login, /queues and /jobs/<jid>, that the token left the
URL, that the time toggle (the ES module) runs, and that the browser console
has no error (a CSP violation would be one). Screenshots go to
$BRINE_SCREENSHOT_DIR (ctest: build/web-screenshots/*.png).

Run: cd tests/web && BRINE_BIN_DIR=$PWD/../../build/bin /usr/bin/python3 -m unittest -v test_browser
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get(
    "BRINE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
)
BIN_DIR = os.environ.get("BRINE_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
SCREENSHOT_DIR = os.environ.get("BRINE_SCREENSHOT_DIR", os.path.join(SOURCE_DIR, "build", "web-screenshots"))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
HOSTILE_ITEM = "<script>alert(1)</script>"

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - reported by the skip below
    webdriver = None


def missing_browser():
    if not os.path.exists(CHROMIUM):
        return CHROMIUM + " is not installed (./brine.sh deps installs chromium)"
    if not os.path.exists(CHROMEDRIVER):
        return CHROMEDRIVER + " is not installed (./brine.sh deps installs chromium-driver)"
    if webdriver is None:
        return "python3-selenium is not installed (./brine.sh deps installs it)"
    return None


def run(*argv, **kwargs):
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, timeout=120,
                          **kwargs)


def wait_for_file(path, process, what):
    """Waits (30 s at most) until `process` has created `path`; raises with its stderr if it died."""
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(what + " did not start: " + process.stderr.read().decode())
        time.sleep(0.05)


def stop(process):
    """SIGTERM, then SIGKILL after 60 s; closes its stderr pipe."""
    if process is None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stderr is not None:
        process.stderr.close()


def start_web(conf, sock_dir):
    """Starts brine-web on `conf`; returns (process, login URL, base URL)."""
    web = subprocess.Popen([os.path.join(BIN_DIR, "brine-web"), "-c", conf],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_file(os.path.join(sock_dir, "brine_web.token.port"), web, "brine-web")
    url = run(os.path.join(BIN_DIR, "brine-run"), "-c", conf, "brine.web_url").stdout.decode().strip()
    return web, url, url[: url.index("/login?")] + "/"


def start_chromium(profile_dir):
    """Headless chromium at 1280x900 that keeps the console log."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--window-size=1280,900",
                "--user-data-dir=" + profile_dir):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


@unittest.skipIf(missing_browser() is not None, "SKIPPED: {}".format(missing_browser()))
class BrowserTest(unittest.TestCase):
    SIM_JOBS = 6  # jobs brine-sim publishes (test_browser_pages.py asks for a long list)

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="brine-web-")
        cls.dir = cls._tmp.name
        cls.conf = os.path.join(cls.dir, "conf")
        os.makedirs(cls.conf)
        with open(os.path.join(cls.conf, "master"), "w") as f:
            f.write("id: web_master\ncachedir: {d}/cache\nbrine.sock_dir: {d}/sock\n"
                    "brine.log_file: {d}/log/brine-master\nbrine.web_port: 0\nbrine.bus: bind\n".format(d=cls.dir))
        cls.web = None
        cls.driver = None
        master = subprocess.Popen([os.path.join(BIN_DIR, "brine-master"), "-c", cls.conf],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for_file(os.path.join(cls.dir, "sock", "master_event_pull.ipc"), master, "brine-master")
            run(os.path.join(BIN_DIR, "brine-sim"), "-c", cls.conf, "--minions", "8", "--jobs", str(cls.SIM_JOBS), "--rate",
                "unlimited", "--functions", "state.apply,cmd.run", "--seed", "7", "--return-size", "2000")
        finally:
            master.send_signal(signal.SIGTERM)
            master.wait(timeout=60)
            master.stderr.close()
        brine_run = [os.path.join(BIN_DIR, "brine-run"), "-c", cls.conf]
        run(*brine_run, "queue.insert", "web-demo", json.dumps([HOSTILE_ITEM, "=1+1"]))
        jobs = json.loads(run(*brine_run, "--out", "json", "jobs.list_jobs", "search_function=state.apply").stdout)
        cls.state_jid = sorted(jobs)[-1]

        cls.web, cls.url, cls.base = start_web(cls.conf, os.path.join(cls.dir, "sock"))
        cls.driver = start_chromium(os.path.join(cls.dir, "chromium-profile"))
        os.makedirs(SCREENSHOT_DIR, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        if cls.driver is not None:
            cls.driver.quit()
        stop(cls.web)
        cls._tmp.cleanup()

    def console_errors(self):
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(SCREENSHOT_DIR, name + ".png"))

    def test_1_login_form_without_a_session(self):
        self.driver.get(self.base + "queues")
        self.assertTrue(self.driver.current_url.endswith("/login"), self.driver.current_url)
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "form.login input[name=token]")), 1)
        self.shot("login")
        self.assertEqual(self.console_errors(), [])

    def test_2_queues_after_login_by_url(self):
        self.driver.get(self.url)
        self.assertEqual(self.driver.current_url, self.base)  # the overview is the landing page
        self.assertNotIn("token=", self.driver.current_url)
        self.driver.get(self.base + "queues")
        names = [td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#queues td.queue-name")]
        self.assertIn("web-demo", names)
        lengths = [td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#queues td.queue-length")]
        self.assertEqual(lengths[names.index("web-demo")], "2")
        self.driver.find_element(By.CSS_SELECTOR, "#queues details summary").click()
        items = [li.text for li in self.driver.find_elements(By.CSS_SELECTOR, "#queues details li")]
        self.assertIn(json.dumps(HOSTILE_ITEM), items)  # shown as text, never run
        self.shot("queues")
        self.assertEqual(self.console_errors(), [])

    def test_3_job_page_with_states_and_time_toggle(self):
        self.driver.get(self.url)
        self.driver.get(self.base + "jobs/" + self.state_jid)
        self.assertEqual(self.driver.find_element(By.ID, "jid").text, self.state_jid)
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#minions tbody tr")
        self.assertGreater(len(rows), 0)
        states = {r.find_elements(By.TAG_NAME, "td")[1].text for r in rows}
        self.assertTrue(states <= {"returned", "failed", "missing"}, states)
        if "returned" in states or "failed" in states:
            self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "table.states tbody tr")), 0)
            self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "details.salt-run pre")), 0)
        # The ES module ran: it shows the toggle and rewrites <time> on click.
        toggle = self.driver.find_element(By.ID, "tz-toggle")
        self.assertTrue(toggle.is_displayed())
        self.assertEqual(toggle.text, "Times: UTC")
        time_el = self.driver.find_element(By.CSS_SELECTOR, "time[datetime]")
        utc_text = time_el.text
        self.assertTrue(utc_text.endswith("Z"), utc_text)
        toggle.click()
        self.assertEqual(toggle.text, "Times: browser zone")
        self.assertRegex(time_el.text, r"[+-]\d\d:\d\d$")
        self.shot("job")
        toggle.click()
        self.assertEqual(time_el.text, utc_text)
        self.assertEqual(self.console_errors(), [])

    def test_4_logout(self):
        self.driver.get(self.url)
        self.driver.find_element(By.ID, "logout").click()
        # The click only starts the POST and its redirect: wait for the page to change.
        WebDriverWait(self.driver, 30).until(lambda d: d.current_url.endswith("/login"))
        self.assertTrue(self.driver.current_url.endswith("/login"), self.driver.current_url)
        self.driver.get(self.base + "queues")
        self.assertTrue(self.driver.current_url.endswith("/login"), self.driver.current_url)
        self.assertEqual(self.console_errors(), [])


if __name__ == "__main__":
    unittest.main()
