#!/usr/bin/env python3
"""Reads the benchmarks' JSON lines (stdin) and prints issue 7's and issue 15's
figures (and issue 27's and 28's) beside their targets and Salt's reference figures. Prints; never fails on a figure."""
import json
import sys

rows = [json.loads(line) for line in sys.stdin if line.startswith("{")]


def find(bench, **match):
    for r in rows:
        if r.get("bench") == bench and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


table = []


def add(name, value, target, salt=""):
    table.append((name, value, target, salt))


r = find("store")
if r:
    add("store API events/s (batch %d)" % r["batch"], "%.0f" % r["events_per_s"], "", "")
r = find("ingest")
if r:
    add("ingest events/s (%d events)" % r["events"], "%.0f" % r["brine_events_per_s"], ">= 60,000",
        "returner 1,600 rows/s; eventsd 1,200 ev/s")
    add("ingest / baseline", "%.2f" % r["ratio"], ">= 0.7", "")
    w = r.get("window_events_per_s") or []
    if w:
        add("ingest per %d-event window (min..max)" % r["window"], "%.0f..%.0f" % (min(w), max(w)),
            "sustained", "")
        add("ingest last / first window", "%.2f" % (w[-1] / w[0]), ">= 0.8", "")
    add("master peak RSS MiB", "%.1f" % r["master_peak_rss_mib"], "<= 150", "")
    add("disk / JSON bytes", "%.2f" % r["disk_over_json"], "<= 1.3", "")
r = find("ingest_prefilled")
if r:
    add("ingest at %.1fM stored returns / empty" % (r["returns_before"] / 1e6), "%.2f (whole run: %.2f)" % (r["over_empty_first_window"], r["over_empty_run"]),
        ">= 0.8", "")
r = find("ingest_queries")
if r:
    add("ingest beside a brine-run loop / without (%d queries)" % r["queries"], "%.2f" % r["over_first_window"],
        "", "")
r = find("ingest_latency")
if r:
    add("send-to-visible p50 / p99 ms @ %d/s" % r["rate"], "%.1f / %.1f" % (r["p50_ms"], r["p99_ms"]), "p99 < 150", "")
r = find("ingest_latency_sql")
if r:
    add("send-to-visible p99 beside brine.sql (%d queries)" % r["queries"],
        "%.1f ms (%+.1f)" % (r["p99_ms"], r["p99_over_plain_ms"]), "< +100 ms", "")
r = find("ingest_latency_web")
if r:
    add("send-to-visible p99 beside %d browsers on brine-web" % r["browsers"],
        "%.1f ms (%+.1f)" % (r["p99_ms"], r["p99_over_plain_ms"]), "< +100 ms", "")
targets = {
    "brine.sql, one row": ("<= 0.015 s", ""),
    "list_jobs last 24h --out json": ("<= 0.2 s", "file cache 2.2 s; sqlite3 returner 1.0 s"),
    "list_jobs 1h window, search_function": ("<= 0.015 s", ""),
    "lookup_jid, 10,000 returns": ("<= 0.05 s", ""),
}
for r in rows:
    if r.get("bench") == "query":
        t, salt = targets.get(r["query"], ("", ""))
        add("brine-run " + r["query"], "%.3f s warm, %.3f cold" % (r["warm_s"], r["cold_s"]), t, salt)
for r in rows:
    if r.get("bench") == "bigret":
        add("lookup_jid " + r["return"], "%.2f s, RSS %.1f x" % (r["lookup_s"], r["rss_over_return"]),
            "< 1 s, <= 3 x", "")
forensic = [r for r in rows if r.get("bench") == "forensic" and "warm_s" in r]
if forensic:
    over = [r["query"] for r in forensic if r["warm_s"] > 0.1]
    scans = [r["query"] for r in forensic if r["scans"]]
    add("forensic SQL questions <= 100 ms warm (%d jobs)" % forensic[0]["jobs"],
        "%d of %d (slowest %.1f ms)" % (len(forensic) - len(over), len(forensic), 1000 * max(r["warm_s"] for r in forensic)),
        "all", "")
    add("forensic plans with a SCAN of ret/event", "%d (%s)" % (len(scans), "; ".join(scans) or "none"), "0", "")
r = find("forensic", query="refresh statistics")
if r:
    add("statistics refresh (ANALYZE, limit 2000)", "%.1f ms" % (1000 * r["s"]), "no ingest stall", "")
r = find("queue")
if r:
    add("queue insert 1 / pop 1 items/s", "%s / %s" % (r.get("insert_1_per_s", "?"), r.get("pop_1_per_s", "?")), "", "")
    add("queue insert list / pop batch items/s", "%s / %s" % (r.get("insert_list_per_s", "?"),
                                                               r.get("pop_batch_per_s", "?")), "", "")
r = find("pg")
if r:
    add("PostgreSQL ingest, 2 masters, events/s total", "%.0f" % r["ingest_two_masters_eps"], ">= 20,000", "")
    add("PostgreSQL ingest, 1 master, events/s", "%.0f" % r["ingest_one_master_eps"], "", "")
    add("PostgreSQL 2 masters / pgjsonb-style baseline", "%.1f" % (r["ingest_two_masters_eps"] / r["baseline_eps"]),
        ">= 10", "pgjsonb %.0f ev/s" % r["baseline_eps"])
    if "api_round_trips" in r:
        add("PostgreSQL store API, %d returns in one batch: returns/s, round trips" % r["lookup_returns"],
            "%.0f, %d" % (r["api_returns_per_s"], r["api_round_trips"]), "round trips << returns", "")
    # The targets are for a store of 1M jobs: pg_scale below.
    add("PostgreSQL list_jobs of %d jobs (ingest store), s warm" % r["list_jobs_jobs"], "%.3f" % r["list_jobs_s"], "", "")
    add("PostgreSQL lookup_jid of %d returns (ingest store), s warm" % r["lookup_returns"], "%.3f" % r["lookup_jid_s"],
        "", "")
r = find("pg_scale")
if r:
    add("PostgreSQL, %d-job store: list_jobs last 24 h (%d jobs), s warm" % (r["store_jobs"], r["window_jobs"]),
        "%.3f" % r["list_jobs_s"], "<= 0.5", "")
    add("PostgreSQL, %d-job store: lookup_jid of %d returns (on %d heap pages), s warm"
        % (r["store_jobs"], r["lookup_returns"], r["lookup_pages"]), "%.3f" % r["lookup_jid_s"], "<= 0.1", "")
    add("  same, test.ping returns (on %d heap pages), s warm" % r["lookup_small_pages"],
        "%.3f" % r["lookup_jid_small_s"], "<= 0.1", "")
    if "api_read_kept_s" in r:
        add("  cmd.run returns via the store API: a new connection / a kept one, s",
            "%.3f / %.3f" % (r["api_read_new_s"], r["api_read_kept_s"]), "", "")

if table:
    widths = [max(len(row[i]) for row in table + [("figure", "measured", "target", "Salt")]) for i in range(4)]
    fmt = "  %-{}s  %-{}s  %-{}s  %s".format(*widths[:3])
    print(fmt % ("figure", "measured", "target", "Salt"))
    for row in table:
        print(fmt % row)
