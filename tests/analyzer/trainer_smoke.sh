#!/usr/bin/env bash
# The simulated trainer on the simulated driver, without the shim: each
# lookup path runs, writes a ground truth whose allocation count matches what
# it reports, and a dataset past the capacity fails with the driver's OOM.
#   trainer_smoke.sh VT_TRAINER VT_TRAINER_LINKED SIMDRIVER_DIR
set -euo pipefail
trainer=$1 linked=$2 sim=$3
export LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VT_SIM_DEVICES=2 VT_SIM_CAPACITY=1G
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

check() { # NAME BINARY ARGS...
	local name=$1 bin=$2; shift 2
	local out; out=$("$bin" "$@" --truth "$work/$name.truth") || fail "$name exited $?"
	local said; said=$(sed -n 's/.* \([0-9]*\) driver allocations$/\1/p' <<<"$out")
	local lines; lines=$(grep -c '^alloc ' "$work/$name.truth")
	[[ -n $said && $said == "$lines" ]] || fail "$name: printed '$said' allocations, truth has $lines"
	grep -q '^config mode=' "$work/$name.truth" || fail "$name: no config line"
	echo "ok   $name ($lines allocations)"
}
check getproc "$trainer" --lookup getproc --dataset whole --devices 2
check dlsym "$trainer" --lookup dlsym --dataset sliced --flat-grads
check direct "$linked" --lookup direct --alloc pool --dataset whole
check pool "$trainer" --alloc pool --dataset stream --weights host
# categories in the truth are the seven a trainer can hold
bad=$(awk '$1=="alloc" && $5 !~ /^(dataset|prefetch|weights|optimizer|gradients|activations|pool)$/' "$work"/*.truth)
[[ -z $bad ]] || fail "unknown categories: $bad"
# whole dataset: exactly one dataset line per device
[[ $(grep -c '^dataset ' "$work/getproc.truth") == 2 ]] || fail "getproc: want 2 dataset lines"
# past the capacity: the driver's out-of-memory ends the job with an error
if VT_SIM_CAPACITY=64M "$trainer" --dataset whole --dataset-bytes 128M >"$work/oom.out" 2>&1; then
	fail "a 128 MiB dataset fit in 64 MiB"
fi
grep -q 'CUresult 2' "$work/oom.out" || fail "no out-of-memory message: $(cat "$work/oom.out")"
echo "ok   oom"
# bad options are refused with a one-line error and exit 2
set +e; "$trainer" --optimizer rmsprop >/dev/null 2>&1; rc=$?; set -e
[[ $rc == 2 ]] || fail "bad option exit $rc, want 2"
echo "ok   usage"
