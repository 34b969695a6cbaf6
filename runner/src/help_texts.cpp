// The long help text of every brine-run function, in one table: what -d
// prints after each signature and a usage error prints after "Usage:".
// AllFunctions (functions.cpp) gives each function its text and refuses a
// function without one, or a text naming no function.
#include "help_texts.h"

#include <algorithm>
#include <stdexcept>

namespace brine::runner {
namespace {

constexpr HelpText kHelpTexts[] = {
    {"brine.backup",
     "Write a consistent copy of the store to PATH (a new file) while brine-master goes on writing:\n"
     "SQLite's backup API under one read transaction, so the copy is the store as of one commit.\n"
     "Then runs PRAGMA integrity_check on the copy; exit 1 unless it says ok. Restore:\n"
     "stop brine-master, put the copy in place of brine.database (removing its -wal and -shm), start.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.backup /var/backups/brine-$(date +%F).sqlite"},
    {"brine.export",
     "Write the store's jobs (load, metadata, minions, nocache, endtime), their returns and the\n"
     "archived events to FILE as JSON Lines (docs/day-two.md has the format), for brine.import_export\n"
     "into another store, SQLite or PostgreSQL. since/until (UTC; the forms jobs.list_jobs reads)\n"
     "select jobs by jid time and events by arrival time, since inclusive, until exclusive.\n"
     "Quarantined frames, counters and queues are not exported.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.export /tmp/brine.jsonl\n"
     "    brine-run brine.export --since 2026-11-01 --until 2026-11-02 /tmp/nov1.jsonl"},
    {"brine.sql",
     "Run one SQL statement on the store, read-only, and print its rows: SQLite opened read-only\n"
     "(mode=ro, query_only) with an authorizer refusing every write, ATTACH, VACUUM and every\n"
     "state-changing PRAGMA; PostgreSQL in a READ ONLY transaction that is rolled back, on\n"
     "brine.read_database when it is set. timeout (seconds, default 30) stops the query (exit 1,\n"
     "saying it ran out of time); limit (default 10000) cuts the rows, and stderr says there were\n"
     "more. Other NAME=VALUE words bind :NAME in the text (values are never spliced into it).\n"
     "--out json/yaml/nested/txt: a list of row objects (a repeated column gets _2, _3); --out csv:\n"
     "RFC 4180 with a header row; on a terminal without --out, an aligned table. An SQL error exits\n"
     "1 with the database's message and its line and column. docs/day-two.md, \"brine.sql\".\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.sql \"SELECT jid, minion, retcode FROM failed_returns WHERE jid > :since\" since=20240101\n"
     "    brine-run --out csv brine.sql \"SELECT * FROM jids\" limit=100 timeout=5"},
    {"brine.sql_file",
     "Run the SQL statements of FILE one after another, each as brine.sql runs one, and print each\n"
     "statement's rows as its own result (--out json: one list per statement; csv: one table per\n"
     "statement, separated by an empty line). The time budget covers the whole file; the first\n"
     "error stops it, naming the file, line and column.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.sql_file forensics.sql jid=20240101120000123456"},
    {"brine.sql_views",
     "The documented views of the store (docs/schema.md) and their columns, as the database's\n"
     "catalog has them, on either backend: what brine.sql is meant to query.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.sql_views"},
    {"brine.health",
     "Exit 0 when brine-master runs and keeps up, 1 otherwise, with one line saying why: nothing\n"
     "listens on its bus; its brine.metrics_file is missing or older than 10 s; frames are pending\n"
     "and nothing committed for stall_factor x brine.flush_interval_ms; a spool file older than two\n"
     "loop_intervals; its queue over queue_percent of brine.max_queue_mb; the store's filesystem\n"
     "read-only or under 64 MiB free, or the store file not writable. For monitoring checks and\n"
     "systemd's ExecStartPost=.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.health\n"
     "    brine-run brine.health stall_factor=100"},
    {"brine.import_export",
     "Read a file brine.export wrote into this store (created when missing), through the returner\n"
     "calls brine-master makes: jobs, returns (first return wins) and events keep their times.\n"
     "Idempotent: what is there already is counted under *_present, not added again. Commits every\n"
     "1,000 records, so brine-master can ingest meanwhile.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.import_export /tmp/brine.jsonl"},
    {"brine.import_local_cache",
     "Import Salt's local_cache job tree (default <cachedir>/jobs) into the store: every job's load,\n"
     "minion lists (syndics' too), nocache mark, endtime, and each minion's return.p and out.p, as\n"
     "the Salt master would have stored them. Idempotent (a second run adds nothing), commits every\n"
     "200 jobs so brine-master can ingest meanwhile, shows progress on a terminal, and skips and lists\n"
     "damaged files instead of stopping.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.import_local_cache\n"
     "    brine-run brine.import_local_cache /var/cache/salt/master/jobs"},
    {"brine.stats",
     "brine-master's counters for each master id: whether it is running (something listens on its bus\n"
     "and its brine.metrics_file is fresh), where its job cache comes from (the Salt plug-in with\n"
     "master_job_cache: brine, else the bus), when it started, its last commit and the oldest archived\n"
     "event (Salt's time format; --out json adds the raw UTC microseconds as *_us), the counts since\n"
     "it started and since the store was created (received, stored, filtered, quarantined,\n"
     "cache_writes, duplicates, trimmed, returns, batches; received = stored + filtered + quarantined\n"
     "+ cache_writes; acked and acked_refused: the plug-in's requests answered stored or not taken),\n"
     "and while it runs the rates over the last minute, the frames pending and the\n"
     "commit lag. Then the store: its path, its bytes on disk (with the WAL) and the spool backlog.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.stats"},
    {"brine.web_url",
     "Print brine-web's login URL, http://HOST:PORT/login?token=..., from brine.web_token_file and\n"
     "the port file brine-web writes beside it (the port in use, even with brine.web_port 0). Open it\n"
     "in a browser on this host, or through an SSH tunnel (docs/web.md).\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run brine.web_url"},
    {"event.send",
     "Fire one event on the master's bus, with `_stamp` added as Salt adds it. Prints True once\n"
     "brine-master took it; fails (exit 1) when no brine-master answers within brine.send_timeout_ms.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run event.send my/custom/event '{\"foo\": \"bar\"}'"},
    {"jobs.active",
     "List the jobs still running, from the store, without contacting minions: a job is listed while an\n"
     "expected minion has not returned and either that minion's newest saltutil.find_job reply (within\n"
     "brine.active_window_s, default 300 s) carried a pid, or the job is younger than that window.\n"
     "Running lists {minion: pid}, pid None when no find_job reply came yet. timeout is accepted for\n"
     "salt-run's signature and ignored.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.active"},
    {"jobs.exit_success",
     "Say for each expected minion whether it returned a true value (Salt's rule: the return's\n"
     "truthiness, not its retcode).\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.exit_success 20240101120000123456"},
    {"jobs.last_run",
     "Show the newest job matching the filters (metadata: a dict; function, target: globs), as print_job\n"
     "does; False when none matches.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.last_run function='state.*' target='web*'"},
    {"jobs.list_job",
     "Show one job: its function, arguments, target, expected minions, start time and every return.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.list_job 20240101120000123456"},
    {"jobs.list_jobs",
     "List the jobs in the job cache, oldest first (by jid: the jid is the job's UTC start time).\n"
     "\n"
     "search_metadata   a dict; a job passes when any of its keys has the same value in the job's metadata\n"
     "search_function   globs (a list, or a comma-separated string) on the job's function\n"
     "search_target     globs on the job's target; a list target passes when any element matches\n"
     "start_time        only jobs started at or after this time (UTC; ISO 8601, 'YYYY-MM-DD HH:MM',\n"
     "                  'YYYY-MM-DD', or '2024, Jan 01 12:00:00.123456')\n"
     "end_time          only jobs started at or before this time\n"
     "outputter         render the result with this outputter\n"
     "limit             brine: only the newest N matching jobs\n"
     "returned          brine: True for jobs with at least one return, False for jobs with none\n"
     "failed            brine: True for jobs with a failed return (retcode not 0 or success False)\n"
     "ext_source, display_progress: accepted for salt-run's signature; brine has one job cache\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.list_jobs\n"
     "    brine-run jobs.list_jobs search_function='test.*' search_target='web*'\n"
     "    brine-run jobs.list_jobs start_time='2024-01-01 12:00' end_time='2024-01-01 13:00'\n"
     "    brine-run jobs.list_jobs search_metadata='{\"ticket\": \"OPS-1\"}'"},
    {"jobs.list_jobs_filter",
     "List the newest `count` jobs, oldest first, each with its JID; saltutil.find_job polls are left out\n"
     "unless filter_find_job=False.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.list_jobs_filter 50\n"
     "    brine-run jobs.list_jobs_filter 100 filter_find_job=False"},
    {"jobs.lookup_jid",
     "Show the return of each minion for a job. missing=True adds the expected minions that did not\n"
     "return. brine: a list of jids gives {jid: returns} for each.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.lookup_jid 20240101120000123456\n"
     "    brine-run jobs.lookup_jid 20240101120000123456 missing=True"},
    {"jobs.master",
     "List the runner calls in progress on this master (brine-run's long calls such as state.event,\n"
     "and Salt's own runners when they share the cachedir), from <cachedir>/proc.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.master"},
    {"jobs.print_job",
     "Show one job keyed by its jid, with its returns.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run jobs.print_job 20240101120000123456"},
    {"manage.down",
     "List the minions that are down, sorted, from the store, without pinging: every minion brine\n"
     "has seen (a return, a job's target list, a start or salt/auth event, a presence event) that is\n"
     "not up as manage.up counts it. A minion the store never heard of is in neither list.\n"
     "tgt/tgt_type filter the answer (glob and list only); timeout and gather_job_timeout are\n"
     "accepted and ignored; removekeys=True is refused (brine holds no keys). docs/day-two.md,\n"
     "\"Which minions are up\".\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run manage.down\n"
     "    brine-run manage.down tgt='web*'"},
    {"manage.not_present",
     "The minions that are not present, from the store: manage.down's list (Salt compares its\n"
     "accepted keys; brine the minions it has seen). subset (a list or comma-separated ids) keeps\n"
     "only those; show_ip is accepted and ignored (no event carries the address), so the answer\n"
     "stays a list.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run manage.not_present subset=web1,web2"},
    {"manage.present",
     "The minions that are present, from the store: manage.up's list. subset (a list or\n"
     "comma-separated ids) keeps only those; show_ip is accepted and ignored (no event carries the\n"
     "address), so the answer stays a list.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run manage.present"},
    {"manage.up",
     "List the minions that are up, sorted, from the store, without pinging. With presence_events\n"
     "on: the newest salt/presence/present event and the salt/presence/change events after it,\n"
     "while that event is within brine.presence_window_s (default max(300, 2 x loop_interval) s).\n"
     "Otherwise, or when it is older: the minions whose newest return (find_job replies included),\n"
     "salt/auth or salt/minion/<id>/start event arrived within that window. tgt/tgt_type filter the\n"
     "answer (glob and list only); timeout and gather_job_timeout are accepted and ignored.\n"
     "-l debug says which source answered. docs/day-two.md, \"Which minions are up\".\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run manage.up\n"
     "    brine-run --out json manage.up tgt=web1,web2 tgt_type=list"},
    {"queue.delete",
     "Delete an item or a list of items from a queue. Returns True, whether or not anything was there.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.delete myqueue myitem\n"
     "    brine-run queue.delete myqueue '[\"item1\", \"item2\"]'"},
    {"queue.insert",
     "Add an item or a list of items to a queue, at its tail. Returns True, or Salt's message when an item\n"
     "is already in the queue; then nothing was added (a list is added whole or not at all).\n"
     "Items keep their type: a dict, a number or a list element comes back as it went in.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.insert myqueue myitem\n"
     "    brine-run queue.insert myqueue '[\"item1\", \"item2\", \"item3\"]'\n"
     "    brine-run queue.insert myqueue '{\"name\": \"redis\", \"port\": 6379}'"},
    {"queue.insert_runner",
     "Queue a call to a runner function, to be run by queue.process_runner: the item\n"
     "{\"fun\": fun, \"args\": args, \"kwargs\": kwargs}. args is a list or a comma-separated string,\n"
     "kwargs a dict. queue and backend default to the master config's runner_queue: {queue, backend}\n"
     "(backend: sqlite when not set). Returns what queue.insert returns.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.insert_runner jobs.list_jobs queue=runners\n"
     "    brine-run queue.insert_runner queue.insert args='[\"other\", \"item\"]' queue=runners"},
    {"queue.list_items",
     "Every item in a queue, oldest first.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.list_items myqueue"},
    {"queue.list_length",
     "The number of items in a queue.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.list_length myqueue"},
    {"queue.list_queues",
     "List every queue any queue call has named (even an empty one), sorted.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.list_queues"},
    {"queue.pop",
     "Remove and return items from the head of a queue, oldest first: `quantity` of them, or all of them\n"
     "with quantity=all (or a negative quantity); 0 pops nothing. Concurrent pops never return an item\n"
     "twice. is_runner is accepted for Salt's signature: items already keep their type.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.pop myqueue\n"
     "    brine-run queue.pop myqueue 6\n"
     "    brine-run queue.pop myqueue all"},
    {"queue.process_queue",
     "Pop items from a queue and fire them on the master's event bus with the tag\n"
     "salt/queue/<queue>/process and the data {\"items\": [...], \"backend\": ..., \"queue\": ...} (for a\n"
     "reactor). Returns that data. The items leave the queue only once brine-master has taken the event;\n"
     "when it does not (not running, brine.send_timeout_ms passed) nothing is popped and brine-run exits 1.\n"
     "The event fires even when the queue is empty.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.process_queue myqueue\n"
     "    brine-run queue.process_queue myqueue 6\n"
     "    brine-run queue.process_queue myqueue all"},
    {"queue.process_runner",
     "Pop `quantity` runner calls queued by queue.insert_runner, fire them as queue.process_queue does, and\n"
     "run them. A call to a function brine-run does not have, or with arguments it does not take, is left\n"
     "in the queue (nothing is popped) and brine-run exits 1 naming it. queue and backend default as for\n"
     "queue.insert_runner.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run queue.process_runner queue=runners\n"
     "    brine-run queue.process_runner 2 queue=runners"},
    {"state.event",
     "Watch the master's event bus and print each event whose tag matches the tagmatch glob, one line\n"
     "each: the tag, a tab, and the data as JSON; pretty=True indents the JSON by 4 with sorted keys.\n"
     "Stops after count matching events (-1: never); quiet=True prints nothing and only waits.\n"
     "sock_dir overrides brine.sock_dir. Each event is flushed as it comes, so the output can be\n"
     "piped; the watch survives a restart of brine-master.\n"
     "\n"
     "CLI Example:\n"
     "\n"
     "    brine-run state.event 'salt/job/*/ret/*' count=10\n"
     "    brine-run state.event 'salt/minion/web1/start' count=1 quiet=True"},
};

}  // namespace

std::span<const HelpText> HelpTexts() { return kHelpTexts; }

void AttachHelpTexts(std::vector<FunctionSpec>& functions, std::span<const HelpText> help) {
  for (FunctionSpec& f : functions) {
    const auto it = std::find_if(help.begin(), help.end(), [&](const HelpText& t) { return t.function == f.name; });
    if (it == help.end()) throw std::logic_error("the function " + f.name + " has no help text");
    f.doc = it->text;
  }
  for (const HelpText& t : help) {
    const auto named = [&](const FunctionSpec& f) { return f.name == t.function; };
    if (std::none_of(functions.begin(), functions.end(), named)) {
      throw std::logic_error("the help text for " + std::string(t.function) + " names no function");
    }
  }
  if (help.size() != functions.size()) throw std::logic_error("a function has two help texts");
}

}  // namespace brine::runner
