#!/usr/bin/env bash
# brine.sh: one entry point for setting up, building, testing and showing brine.
#
#   ./brine.sh demo    install what is missing, build, run the live demo
#   ./brine.sh test    install what is missing, build, run every test (what CI runs)
#   ./brine.sh slow    the long soaks and the ThreadSanitizer run (not in CI)
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
# outputter oracle and the Salt plug-in tests).
packages=(
  g++ cmake ninja-build pkg-config
  libsqlite3-dev sqlite3 libsqlitecpp-dev
  libzmq3-dev cppzmq-dev
  libhowardhinnant-date-dev
  catch2
  libyaml-cpp-dev
  python3 python3-yaml python3-zmq python3-msgpack
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
  configure_build build -DCMAKE_BUILD_TYPE=Release -DBRINE_WERROR="${BRINE_WERROR:-OFF}"
}

run_ctest() {
  local dir="$1"
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
}

test_all() {
  local t0=$SECONDS
  deps
  log "Release build with -Werror, all tests"
  configure_build build -DCMAKE_BUILD_TYPE=Release -DBRINE_WERROR=ON
  run_ctest build --label-exclude slow
  log "ASan+UBSan build, store/master/runner tests"
  configure_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRINE_WERROR=ON -DBRINE_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan --label-exclude slow
  log "all tests passed in $((SECONDS - t0)) s"
}

slow() {
  deps
  log "long soaks (label slow)"
  configure_build build -DCMAKE_BUILD_TYPE=Release
  run_ctest build --label-regex slow
}

bench() {
  build
  log "store_bench"
  ./build/bin/store_bench "$@"
}

demo() {
  build
  local dir="$here/demo"
  rm -rf "$dir"
  mkdir -p "$dir"
  log "store smoke run: 2,000 jobs of 10 returns from 1,000 minions into $dir/brine.sqlite"
  ./build/bin/store_bench --jobs 2000 --db "$dir/brine.sqlite"
  log "a forensic query in the sqlite3 shell: the newest jobs and who did not return"
  sqlite3 -header -column "$dir/brine.sqlite" \
    "SELECT jid, fun, (SELECT count(*) FROM jid_minions AS m WHERE m.jid = j.jid) AS expected,
            (SELECT count(*) FROM salt_returns AS r WHERE r.jid = j.jid) AS returned
     FROM jids AS j ORDER BY jid DESC LIMIT 5;"
}

case "${1:-}" in
  demo) shift; demo "$@" ;;
  test) shift; test_all "$@" ;;
  slow) shift; slow "$@" ;;
  bench) shift; bench "$@" ;;
  build) shift; build "$@" ;;
  deps) shift; deps ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
