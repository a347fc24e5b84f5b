#!/usr/bin/env bash
# Watches the test process `swift test` starts: when it has used no CPU for $1 seconds (default
# 300), it is hung (every test waits on something that will not come), so this prints its threads'
# backtraces and the process tree, then kills it. CI then fails within minutes, with what the
# process was waiting on, instead of at its time limit with nothing to go on.
set -uo pipefail
limit="${1:-300}"
idle=0
last=""
while true; do
    sleep 10
    pid="$(pgrep -f 'PackageTests\.xctest' | head -1)"
    if [ -z "$pid" ]; then
        idle=0
        last=""
        continue
    fi
    ticks="$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null)"
    if [ -n "$ticks" ] && [ "$ticks" = "$last" ]; then idle=$((idle + 10)); else idle=0; fi
    last="$ticks"
    [ "$idle" -lt "$limit" ] && continue
    echo "== watchdog: the test process ($pid) used no CPU for $limit s; its threads, then the process tree"
    if ! command -v gdb >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gdb >/dev/null 2>&1 ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gdb >/dev/null 2>&1; }
    fi
    if command -v gdb >/dev/null; then
        gdb -p "$pid" -batch -ex "thread apply all bt 30" 2>&1 | grep -v "^\[New LWP"
    else
        for task in /proc/"$pid"/task/*; do echo "$(cat "$task/comm") $(cat "$task/wchan" 2>/dev/null)"; done
    fi
    ps -eo pid,ppid,stat,time,args --forest | grep -v -E "^ *[0-9]+ +2 "  # not the kernel's threads
    echo "== watchdog: killing the hung test process"
    kill -9 "$pid"
    idle=0
    last=""
done
