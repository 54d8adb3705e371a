#!/bin/sh
# `vramtrace top`'s full screen in a terminal (tmux): it draws the header
# and a line per device, refreshes (the events figure changes while the job
# runs), switches device with Tab, and quits with q (exit 0) and on Ctrl-C
# (exit 130), leaving the terminal with echo and icanon on.
#   top_screen_check.sh VRAMTRACE TRAINER WORK_DIR
set -u
vt=$1 trainer=$2 work=$3
command -v tmux >/dev/null || { echo "SKIP: no tmux"; exit 77; }
"$vt" top --help | grep -q -- --once || exit 1
rm -rf "$work" && mkdir -p "$work"
sock="vt-top-check-$$"
tm() { tmux -L "$sock" "$@"; }
fail() { echo "FAIL: $*"; tm kill-server 2>/dev/null; exit 1; }
VT_SIM_CAPACITY=4G VT_SIM_DEVICES=2 "$vt" run --simulated-driver -o "$work/trace" -- "$trainer" \
	--steps 200 --step-sleep-ms 50 --markers --layers 3 --layer-bytes 64M --devices 2 \
	>"$work/job.out" 2>&1 &
job=$!
i=0
while [ ! -f "$work/trace/run.json" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 1

# start top in a pane; after it ends, its exit code and the terminal's modes
view() { # $1: name
	tm new-session -d -s "$1" -x 160 -y 40 \
		"trap : INT; $vt top -n 0.3 '$work/trace'; echo EXIT=\$? >'$work/$1.exit'; stty -a >'$work/$1.stty'; sleep 30"
	sleep 1.5
}
wait_exit() { # $1: name
	i=0
	while [ ! -s "$work/$1.stty" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$work/$1.stty" ] || fail "$1: top did not end"
	grep -Eq '(^| )-echo( |$)' "$work/$1.stty" && fail "$1: echo left off"
	grep -Eq '(^| )-icanon( |$)' "$work/$1.stty" && fail "$1: icanon left off"
}

view keys
first=$(tm capture-pane -p -t keys)
echo "$first" | grep -q "vramtrace top" || fail "no header: $first"
echo "$first" | grep -q ">GPU 0" || fail "no selected GPU 0 line: $first"
echo "$first" | grep -q " GPU 1" || fail "no GPU 1 line: $first"
sleep 1
second=$(tm capture-pane -p -t keys)
ev1=$(echo "$first" | grep -o 'events [0-9]*' | head -1)
ev2=$(echo "$second" | grep -o 'events [0-9]*' | head -1)
[ -n "$ev1" ] && [ "$ev1" != "$ev2" ] || fail "no refresh: '$ev1' then '$ev2'"
tm send-keys -t keys Tab
sleep 0.5
tm capture-pane -p -t keys | grep -q ">GPU 1" || fail "Tab did not select GPU 1"
tm send-keys -t keys q
wait_exit keys
grep -q "EXIT=0" "$work/keys.exit" || fail "q: $(cat "$work/keys.exit")"

view sig
tm send-keys -t sig C-c
wait_exit sig
grep -q "EXIT=130" "$work/sig.exit" || fail "Ctrl-C: $(cat "$work/sig.exit")"

tm kill-server 2>/dev/null
kill "$job" 2>/dev/null
wait "$job" 2>/dev/null
echo "ok"
