"""brine-web's pages in a real browser (web/src/*_page.cpp): the overview's
Chart.js charts, /jobs with a long list, its filters, paging and hidden-function
toggle, /minions, /active and /failures, the time toggle, dark mode; the console has no
error on any of them (a CSP violation would be one). The fixture is
test_browser.py's (brine-sim through a real brine-master), with more jobs.
Screenshots go to $BRINE_SCREENSHOT_DIR (ctest: build/web-screenshots/pages-*.png).

Run: cd tests/web && BRINE_BIN_DIR=$PWD/../../build/bin /usr/bin/python3 -m unittest -v test_browser_pages
"""

import json
import unittest
import urllib.parse

import test_browser  # imported as a module, so its own TestCase is not run again here

if test_browser.webdriver is not None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait


@unittest.skipIf(test_browser.missing_browser() is not None, "SKIPPED: {}".format(test_browser.missing_browser()))
class PagesBrowserTest(unittest.TestCase):
    SIM_JOBS = 150
    setUpClass = classmethod(test_browser.BrowserTest.setUpClass.__func__)
    tearDownClass = classmethod(test_browser.BrowserTest.tearDownClass.__func__)
    console_errors = test_browser.BrowserTest.console_errors

    def shot(self, name):
        test_browser.BrowserTest.shot(self, "pages-" + name)

    def setUp(self):
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        self.driver.get(self.url)  # a fresh session; lands on the overview
        self.assertEqual(self.driver.current_url, self.base)

    def json_of(self, path):
        self.driver.get(self.base + path)
        return json.loads(self.driver.find_element(By.TAG_NAME, "pre").text
                          if self.driver.find_elements(By.TAG_NAME, "pre") else self.driver.page_source)

    def wait_for_charts(self):
        WebDriverWait(self.driver, 30).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "canvas[data-drawn=true]")) == 2)
        return self.driver.execute_script(
            "return [...document.querySelectorAll('canvas')].map(c => window.Chart.getChart(c).data.datasets.length)")

    def test_1_overview_draws_both_charts(self):
        self.assertEqual(self.wait_for_charts(), [4, 4])
        self.assertEqual(self.driver.find_elements(By.CSS_SELECTOR, "#masters td.master-id")[0].text, "web_master")
        self.assertTrue(self.driver.find_element(By.ID, "store-size").text.endswith("B"))
        failures = self.driver.find_elements(By.CSS_SELECTOR, "#latest-failures tbody tr, #no-failures")
        self.assertGreater(len(failures), 0)
        jobs_24h = self.driver.execute_script(
            "return window.Chart.getChart(document.getElementById('chart-24h')).data.datasets[0].data"
            ".reduce((a, b) => a + b, 0)")
        self.assertGreater(jobs_24h, 0)  # brine-master's rollups counted the simulated jobs
        self.shot("overview")
        self.assertEqual(self.console_errors(), [])

    def test_2_overview_in_dark_mode(self):
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                    {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        self.driver.get(self.base)
        self.wait_for_charts()
        background = self.driver.execute_script(
            "return getComputedStyle(document.body).backgroundColor")
        self.assertNotEqual(background, "rgb(255, 255, 255)")
        self.shot("overview-dark")
        self.driver.get(self.base + "jobs")
        self.shot("jobs-dark")
        self.assertEqual(self.console_errors(), [])

    def test_3_jobs_long_list_pages_and_filters(self):
        self.driver.get(self.base + "jobs?hidden=show")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
        self.assertEqual(len(rows), 100)  # a full page
        jids = [r.find_element(By.CSS_SELECTOR, "td.jid a").text for r in rows]
        self.assertEqual(jids, sorted(jids, reverse=True))
        self.shot("jobs-long")
        self.driver.find_element(By.ID, "older").click()
        WebDriverWait(self.driver, 30).until(lambda d: "before=" in d.current_url)
        older = [a.text for a in self.driver.find_elements(By.CSS_SELECTOR, "#jobs td.jid a")]
        self.assertGreater(len(older), 0)
        self.assertLess(older[0], jids[-1])
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.driver.current_url).query)
        self.assertEqual(query["before"], [jids[-1]])
        self.assertEqual(query["hidden"], ["show"])
        # A filter through the form; the view goes into the URL.
        self.driver.get(self.base + "jobs")
        box = self.driver.find_element(By.CSS_SELECTOR, "#filters input[name=search_function]")
        box.send_keys("state.*")
        self.driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        WebDriverWait(self.driver, 30).until(lambda d: "search_function=state.*" in urllib.parse.unquote(d.current_url))
        funs = {td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#jobs td.fun")}
        self.assertEqual(funs, {"state.apply"})
        self.shot("jobs-filtered")
        # The jump box opens a job's page.
        self.driver.find_element(By.CSS_SELECTOR, "#jump input[name=jid]").send_keys(jids[0])
        self.driver.find_element(By.CSS_SELECTOR, "#jump button").click()
        WebDriverWait(self.driver, 30).until(lambda d: d.current_url.endswith("/jobs/" + jids[0]))
        self.assertEqual(self.driver.find_element(By.ID, "jid").text, jids[0])
        self.assertEqual(self.console_errors(), [])

    def test_4_hidden_functions_toggle(self):
        self.driver.get(self.base + "jobs")
        toggle = self.driver.find_element(By.ID, "hidden-toggle")
        self.assertEqual(toggle.text, "Show hidden functions")
        hidden = {td.text for td in self.driver.find_elements(By.CSS_SELECTOR, "#jobs td.fun")}
        self.assertNotIn("saltutil.find_job", hidden)
        toggle.click()
        WebDriverWait(self.driver, 30).until(lambda d: "hidden=show" in d.current_url)
        self.assertEqual(self.driver.find_element(By.ID, "hidden-toggle").text, "Hide noisy functions")
        self.assertEqual(self.console_errors(), [])

    def test_5_failures_and_active(self):
        self.driver.get(self.base + "failures?since=2000-01-01")
        self.assertGreater(len(self.driver.find_elements(By.CSS_SELECTOR, "#by-minion tbody tr")), 0)
        self.shot("failures")
        self.driver.get(self.base + "active")
        self.assertEqual(self.driver.find_element(By.TAG_NAME, "h1").text, "Active jobs")
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#active, #no-active")), 1)
        self.shot("active")
        self.assertEqual(self.console_errors(), [])

    def test_6_minions_and_one_minion(self):
        self.driver.get(self.base + "minions?since=2000-01-01")
        rows = self.driver.find_elements(By.CSS_SELECTOR, "#minions tbody tr")
        self.assertEqual(len(rows), 8)  # brine-sim's fleet of 8
        names = [r.find_element(By.CSS_SELECTOR, "td.minion-id a").text for r in rows]
        self.assertEqual(names, sorted(names))
        targeted = [int(r.find_elements(By.TAG_NAME, "td")[1].text) for r in rows]
        self.assertGreater(sum(targeted), 0)
        self.shot("minions")
        rows[0].find_element(By.CSS_SELECTOR, "td.minion-id a").click()
        WebDriverWait(self.driver, 30).until(lambda d: "/minions/" in d.current_url)
        self.assertEqual(self.driver.find_element(By.ID, "minion").text, names[0])
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#record tr")), 6)
        self.shot("minion")
        self.assertEqual(self.console_errors(), [])

    def test_7_time_toggle_rewrites_job_times(self):
        self.driver.get(self.base + "jobs")
        toggle = self.driver.find_element(By.ID, "tz-toggle")
        first = self.driver.find_element(By.CSS_SELECTOR, "#jobs time[datetime]")
        utc = first.text
        self.assertTrue(utc.endswith("Z"), utc)
        toggle.click()
        self.assertRegex(first.text, r"[+-]\d\d:\d\d$")
        toggle.click()
        self.assertEqual(first.text, utc)
        self.assertEqual(self.console_errors(), [])


if __name__ == "__main__":
    unittest.main()
