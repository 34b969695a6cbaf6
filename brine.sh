#!/usr/bin/env bash
# brine.sh: one entry point for setting up, building, testing and showing brine.
#
#   ./brine.sh demo    install what is missing, build, run the live demo
#   ./brine.sh test    install what is missing, build, run every test (what CI runs)
#   ./brine.sh slow    the long soaks and the ThreadSanitizer run (not in CI)
#   ./brine.sh fuzz [S] build the libFuzzer targets (clang) and run each S seconds (30)
#   ./brine.sh bench   build in Release and run the benchmarks, printing figures
#   ./brine.sh build   install what is missing and build (Release) into build/
#   ./brine.sh deps    only install the Debian packages brine needs
#
# Needs Debian 12; installs packages with apt-get when run as root (or with sudo).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
jobs="$(nproc 2>/dev/null || echo 2)"

# Build tools, the libraries of CMakeLists.txt, and what the tests and the
# demo run: sqlite3 (forensic queries), python3 with yaml/zmq/msgpack (the
# outputter oracle and the Salt plug-in tests); clang and its runtime
# (libclang-rt-dev holds libFuzzer) for the fuzz targets; systemd for
# `systemd-analyze verify` of the unit and logrotate to run the snippet, in
# tests/operations_test.cpp.
packages=(
  g++ cmake ninja-build pkg-config
  libsqlite3-dev sqlite3 libsqlitecpp-dev
  libzmq3-dev cppzmq-dev zlib1g-dev
  libhowardhinnant-date-dev
  catch2
  libyaml-cpp-dev
  python3 python3-yaml python3-zmq python3-msgpack
  clang libclang-rt-dev
  postgresql libpq-dev python3-psycopg2
  libssl-dev
  systemd logrotate
  libmicrohttpd-dev libjs-chart.js
  chromium chromium-driver python3-selenium
)

log() { printf '==> %s\n' "$*"; }

deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  log "installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "brine.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure_build DIR [cmake args...]
configure_build() {
  local dir="$1"
  shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

build() {
  deps
  log "building (Release) into build/"
  # Keeps an earlier -DBRINE_WERROR=ON (./brine.sh test) unless BRINE_WERROR says otherwise.
  configure_build build -DCMAKE_BUILD_TYPE=Release ${BRINE_WERROR:+-DBRINE_WERROR=$BRINE_WERROR}
}

run_ctest() {
  local dir="$1"
  shift
  if ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"; then return 0; fi
  # Again at the very end, where a clipped CI log still shows them: each
  # failed assertion with its expansion and messages.
  local last="$dir/Testing/Temporary/LastTest.log"
  if [ -f "$last" ]; then
    log "the failed assertions (all output in $last):"
    grep -a -A 16 ': FAILED:$' "$last" | tail -n 150 || true
  fi
  return 1
}

test_all() {
  local t0=$SECONDS
  deps
  log "Release build with -Werror, all tests"
  configure_build build -DCMAKE_BUILD_TYPE=Release -DBRINE_WERROR=ON
  run_ctest build --label-exclude slow
  log "the demo, shortened (BRINE_DEMO_QUICK=1)"
  BRINE_DEMO_QUICK=1 demo >"$here/build/demo.log" 2>&1 || { cat "$here/build/demo.log"; exit 1; }
  log "demo ok ($(grep -c . "$here/build/demo.log") lines of output in build/demo.log)"
  log "ASan+UBSan build, store/master/runner tests"
  configure_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRINE_WERROR=ON -DBRINE_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan --label-exclude slow
  fuzz 30
  log "all tests passed in $((SECONDS - t0)) s"
}

# fuzz SECONDS: builds only the libFuzzer targets and what they link (core,
# wire, config) with clang, ASan and UBSan, then runs each for SECONDS on its
# checked-in corpus (fuzz/corpus/<target>, read only; new inputs go to
# build-fuzz/corpus/). A crash stops here with the input saved under
# build-fuzz/; make it a regression test (tests/reliability_test.cpp) and add it
# to the checked-in corpus.
fuzz() {
  local seconds="${1:-30}"
  log "libFuzzer targets (clang, ASan+UBSan): fuzz_frame, fuzz_arguments, ${seconds} s each"
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DBRINE_FUZZ=ON -DBRINE_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz_frame fuzz_arguments
  local t
  for t in frame arguments; do
    mkdir -p "build-fuzz/corpus/$t"
    # -timeout: one input running 10 s is a finding (yaml-cpp once looped forever).
    if ! timeout $((seconds + 300)) "./build-fuzz/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
      -print_final_stats=1 -rss_limit_mb=2048 \
      -artifact_prefix="build-fuzz/crash-$t-" "build-fuzz/corpus/$t" "fuzz/corpus/$t" >"build-fuzz/fuzz_$t.log" 2>&1; then
      tail -n 60 "build-fuzz/fuzz_$t.log"
      echo "brine.sh: fuzz_$t found a crash; the input is in build-fuzz/crash-$t-*" >&2
      exit 1
    fi
    log "fuzz_$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz_$t.log" | grep -o '[0-9]*$') runs, $(grep -o 'stat::average_exec_per_sec: *[0-9]*' "build-fuzz/fuzz_$t.log" | grep -o '[0-9]*$') execs/s, no crash"
  done
}

slow() {
  build
  log "soak: brine-master fed at full speed with 4.8M events (ingest_bench --jobs 400000)"
  ./build/bin/ingest_bench --jobs 400000
  log "tests labelled slow"
  run_ctest build --label-regex slow --no-tests=ignore
  log "ThreadSanitizer build (-DBRINE_SANITIZE=thread): the master and reliability tests"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRINE_SANITIZE=thread >/dev/null
  cmake --build build-tsan -j "$jobs" --target master_test master_process_test master_retention_test \
    master_postgres_test master_ack_test master_overflow_test reliability_test hardening_test
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$here/tests/tsan.supp" \
    run_ctest build-tsan --label-exclude slow -R '^(master|reliability|hardening):'
}

# The query store (1M jobs, 10M returns, ~5 GB) is built once, which takes a
# while, and kept in $BRINE_QUERY_STORE; query_bench reuses it while its
# built.json matches. ingest_bench then copies it to measure ingest on a store
# that already holds 10M returns. BRINE_BENCH_EVENTS sets the sustained
# ingest run (default 5M events, ~2.7 GB of frames in memory).
bench() {
  build
  local store="${BRINE_QUERY_STORE:-/var/tmp/brine-qb-1m}"
  local events="${BRINE_BENCH_EVENTS:-5000000}"
  local out="$here/build/bench.log"
  : >"$out"
  # Each bench alone (2 cores): its figures and the load beside them.
  run_bench() {
    local name="$1"
    shift
    log "$name ($(date -u +%H:%M) UTC, $(uptime | sed 's/.*load/load/'))"
    "$@" | tee -a "$out"
  }
  run_bench "store_bench: the store API's write rate and bytes on disk" ./build/bin/store_bench
  run_bench "query_bench: brine-run on 1M jobs / 10M returns (store kept in $store)" \
    ./build/bin/query_bench --jobs 1000000 --store "$store"
  run_bench "forensic_bench: the forensic questions in SQL on the query store, warm and cold, with their plans" \
    ./build/bin/forensic_bench --store "$store"
  run_bench "ingest_bench: $events events at full speed beside a prepared-statement baseline, then on a copy of the query store, then latency at 10k events/s, alone, beside a brine.sql loop and beside 20 browsers on brine-web" \
    ./build/bin/ingest_bench --events "$events" --prefilled "$store" --latency 30 --latency-sql 1 --latency-web 20
  run_bench "bigret_bench: jobs.lookup_jid of a 50 MB string and of a 50 MB dict" ./build/bin/bigret_bench
  run_bench "queue_bench: queue insert and pop rates" ./build/bin/queue_bench
  # pg_bench's server lives in TMPDIR: /var/tmp, for the 1M-job store (~10 GB with its WAL).
  run_bench "pg_bench: PostgreSQL on this machine, 1 and 2 masters beside a pgjsonb-style baseline; list_jobs and lookup_jid on a store of 1M jobs" \
    env TMPDIR=/var/tmp ./build/bin/pg_bench --jobs 100000 --baseline-events 50000 --lookup-returns 10000 --store-jobs 1000000
  run_bench "ack_bench: the Salt plug-in's acknowledged returner() beside local_cache, and its latency" \
    /usr/bin/python3 bench/ack_bench.py --bin-dir ./build/bin
  # web_bench writes live events into its store: a copy of the query store.
  local web_copy=/var/tmp/brine-web-bench-$$
  mkdir -p "$web_copy" && cp "$store/cache/brine.sqlite" "$web_copy/brine.sqlite"
  run_bench "web_bench: brine-web's pages at depth on a copy of the query store (migrated first), 200 open streams, the live tail at 10k events/s" \
    env TMPDIR=/var/tmp ./build/bin/web_bench --store "$web_copy/brine.sqlite" --built "$store/built.json" \
      --seconds 20 --streams 200 --rate 10000
  rm -rf "$web_copy"
  log "JSON lines (also in build/bench.log)"
  grep '^{' "$out"
  log "issue 7's figures beside their targets"
  python3 bench/summary.py <"$out"
}

# Shows a step; on a terminal with a spinner while it runs, else as plain lines.
step() {
  local what="$1"
  shift
  if [ -t 1 ]; then
    "$@" >"$demo_dir/step.log" 2>&1 &
    local pid=$! spin='|/-\' i=0
    while kill -0 "$pid" 2>/dev/null; do
      printf '\r  %s %s' "${spin:i++%4:1}" "$what"
      sleep 0.1
    done
    wait "$pid" && local rc=0 || local rc=$?
    printf '\r  %s %s\n' "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "$what"
    [ $rc -eq 0 ] || { cat "$demo_dir/step.log"; return $rc; }
    cat "$demo_dir/step.log"
  else
    echo "  ... $what"
    "$@"
  fi
}

# first_lines N CMD...: the first N lines of a command's output (without the
# SIGPIPE that `| head` would send it).
first_lines() {
  local n="$1"
  shift
  "$@" >"$demo_dir/cmd.out"
  head -n "$n" "$demo_dir/cmd.out"
}

demo() {
  build
  demo_dir="$here/demo"
  local quick="${BRINE_DEMO_QUICK:-}"
  local minions=300 jobs=400
  if [ -n "$quick" ]; then minions=50; jobs=60; fi
  local pidfile
  for pidfile in "$demo_dir/master.pid" "$demo_dir/web.pid"; do
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
  done
  rm -rf "$demo_dir"
  mkdir -p "$demo_dir/conf"
  # Everything lives under demo/: nothing under /etc or /var.
  cat >"$demo_dir/conf/master" <<CONF
id: demo_master
cachedir: $demo_dir/cache
keep_jobs_seconds: 0
brine.bus: bind
brine.sock_dir: $demo_dir/sock
brine.log_file: $demo_dir/log/brine-master
brine.log_level: info
brine.active_window_s: 86400
brine.web_port: 0
CONF
  local run="./build/bin/brine-run -c $demo_dir/conf"
  log "starting brine-master on demo/conf (store: demo/cache/brine.sqlite)"
  ./build/bin/brine-master -c "$demo_dir/conf" >"$demo_dir/master.out" 2>&1 &
  echo $! >"$demo_dir/master.pid"
  trap 'kill "$(cat "$demo_dir/master.pid")" 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    grep -q "started:" "$demo_dir/log/brine-master" 2>/dev/null && break
    sleep 0.1
  done
  log "a simulated fleet of $minions minions runs $jobs jobs (test.ping, cmd.run, grains.items, state.apply)"
  step "brine-sim pushing Salt's events onto the bus" \
    ./build/bin/brine-sim -c "$demo_dir/conf" --minions "$minions" --jobs "$jobs" --seed 42 --rate 20000 \
      --missing-rate 0.02 --fail-rate 0.03 --clock now
  # The writer commits within brine.flush_interval_ms; wait until the counters show every frame.
  sleep 0.5

  log "brine-run jobs.list_jobs limit=2 search_function=state.*,cmd.*   (salt-run's output, from an index)"
  $run jobs.list_jobs limit=2 'search_function=state.*,cmd.*'
  local jid
  jid=$(sqlite3 "$demo_dir/cache/brine.sqlite" \
    "SELECT jid FROM jids WHERE fun = 'state.apply' AND jid IN (SELECT jid FROM jid_missing) ORDER BY jid DESC LIMIT 1;")
  [ -n "$jid" ] || jid=$(sqlite3 "$demo_dir/cache/brine.sqlite" "SELECT jid FROM jids WHERE fun = 'state.apply' ORDER BY jid DESC LIMIT 1;")
  log "brine-run jobs.lookup_jid $jid missing=True --out yaml   (a state run, with who did not return; first lines)"
  first_lines 24 $run jobs.lookup_jid "$jid" missing=True --out yaml
  log "brine-run jobs.active   (from the store: expected minions still out, with find_job pids; first lines)"
  first_lines 20 $run jobs.active
  log "a queue round trip: brine-run queue.insert demo '[\"a\", \"b\"]', queue.pop demo"
  $run queue.insert demo '["a", "b"]' || true
  $run queue.pop demo || true
  log "forensic SQL in the sqlite3 shell: failed returns per function"
  sqlite3 -header -column "$demo_dir/cache/brine.sqlite" \
    "SELECT fun, count(*) AS failed FROM salt_returns WHERE retcode <> 0 OR success = 0 GROUP BY fun ORDER BY failed DESC;"
  log "brine-run brine.stats   (the master's counters)"
  $run brine.stats
  log "stopping brine-master (SIGTERM: it drains the bus and commits everything)"
  kill -TERM "$(cat "$demo_dir/master.pid")"
  wait "$(cat "$demo_dir/master.pid")" 2>/dev/null || true
  trap - EXIT
  # brine-web on the demo store (read-only, loopback, a free port), left
  # running for the browser; the URL logs in once and leaves the address bar.
  log "starting brine-web on the demo store (read-only, on loopback)"
  ./build/bin/brine-web -c "$demo_dir/conf" >"$demo_dir/web.out" 2>&1 &
  echo $! >"$demo_dir/web.pid"
  local url=""
  for _ in $(seq 100); do
    url=$($run brine.web_url 2>/dev/null) && break
    sleep 0.1
  done
  if [ -n "$url" ]; then
    log "open $url   (brine-web: the overview, /jobs, /minions, /failures, /active, /events with its live tail, /sql, /queues; stop it: kill \$(cat demo/web.pid))"
  else
    log "brine-web did not start: see demo/web.out"
    [ -z "$quick" ] || exit 1
  fi
  # The shortened demo (in ./brine.sh test) checks that the URL came and
  # leaves nothing running.
  if [ -n "$quick" ]; then
    kill -TERM "$(cat "$demo_dir/web.pid")" 2>/dev/null || true
    wait "$(cat "$demo_dir/web.pid")" 2>/dev/null || true
  fi
  cat <<NEXT

==> next, for real
  (This demo set brine.bus: bind, playing a 2014 master's bus for brine-sim.) On a host that runs
  a Salt master (2016.3 or later), brine-master attaches to the master's own event bus, with
  nothing to change in the master and no restart; run it as the master's user (salt) or root:
      ./build/bin/brine-master -c /etc/salt
  Then: ./build/bin/brine-run -c /etc/salt jobs.list_jobs   (and brine.health: attached?)
  Optional, for Salt's own salt-run jobs.* and whole, untrimmed returns: the job-cache plug-in
  (master_job_cache: brine, brine.sock_dir: /var/run/salt/brine; docs/salt.md says which to choose).
  How it works: docs/master.md ("Attach"); the store and forensic queries: docs/schema.md.
NEXT
}

case "${1:-}" in
  demo) shift; demo "$@" ;;
  test) shift; test_all "$@" ;;
  slow) shift; slow "$@" ;;
  fuzz) shift; deps; fuzz "$@" ;;
  bench) shift; bench "$@" ;;
  build) shift; build "$@" ;;
  deps) shift; deps ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
