#!/usr/bin/env bash
# Data-parallel training and a 2-group sweep across two "hosts": two network namespaces made
# here, joined by a veth pair, each with its own address. mpirun runs in the first and starts
# the second host's processes through `ip netns exec` as its remote agent (where it would use
# ssh), with TCP only between processes (no shared memory). Checks:
#   1. `mpirun -np 2` with one process per host trains to the same checkpoint, bit for bit, as
#      `mpirun -np 2` on one host, and prints both runs' all-reduce time per step;
#   2. `mpirun -np 4 sweep --groups=2` over the two hosts (2 processes each) trains each of two
#      variants to the checkpoint the same variant gets from `mpirun -np 2 inception_v3` alone.
# The file system is shared (one machine); only the network is split.
#   tests/tools/two_hosts_test.sh BIN_DIR
# Exits 77 (CTest's skip code), saying why, where namespaces cannot be made (not root, no
# `ip`, no permission).
set -euo pipefail
bin=${1:?usage: two_hosts_test.sh BIN_DIR}
skip() {
  echo "two_hosts_test: skipped: $*"
  exit 77
}
((EUID == 0)) || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip(8) (Debian: iproute2)"
command -v mpirun >/dev/null || skip "no mpirun"

work=$(mktemp -d)
id=$$
host_a=ica$id host_b=icb$id
made=()
cleanup() {
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$host_a" 2>"$work/netns.err" || skip "cannot make a network namespace: $(cat "$work/netns.err")"
made+=("$host_a")
ip netns add "$host_b"
made+=("$host_b")
ip link add "va$id" type veth peer name "vb$id" 2>"$work/veth.err" ||
  skip "cannot make a veth pair: $(cat "$work/veth.err")"
ip link set "va$id" netns "$host_a"
ip link set "vb$id" netns "$host_b"
ip -n "$host_a" addr add 10.231.0.1/24 dev "va$id"
ip -n "$host_b" addr add 10.231.0.2/24 dev "vb$id"
for ns in "$host_a" "$host_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$host_a" link set "va$id" up
ip -n "$host_b" link set "vb$id" up

# The remote agent mpirun calls as it would call ssh: agent HOST COMMAND...
cat >"$work/agent" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  10.231.0.1) ns=$host_a ;;
  10.231.0.2) ns=$host_b ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$work/agent"
printf '10.231.0.1 slots=2\n10.231.0.2 slots=2\n' >"$work/hosts"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
# mpirun over the two hosts, TCP only, its own processes in host a.
two_hosts() {
  local np=$1
  shift
  ip netns exec "$host_a" timeout 300 mpirun --allow-run-as-root --hostfile "$work/hosts" \
    --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/24 --mca oob_tcp_if_include 10.231.0.0/24 \
    -np "$np" --map-by ppr:$((np / 2)):node "$@"
}
one_host() {
  local np=$1
  shift
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" "$@"
}
fail() {
  echo "two_hosts_test: FAILED: $*"
  exit 1
}
# same_checkpoint DIR1 DIR2 STEP: the two model_dirs' checkpoints of STEP hold the same tensors,
# bit for bit (their metadata, which names the model_dir and the run, aside).
same_checkpoint() {
  "$bin/inspect_checkpoint" --file_name="$1/model.ckpt-$3" --write_safetensors="$work/first.safetensors" >/dev/null &&
    "$bin/inspect_checkpoint" --file_name="$2/model.ckpt-$3" --write_safetensors="$work/second.safetensors" >/dev/null &&
    python3 - "$work/first.safetensors" "$work/second.safetensors" <<'PY'
import json, struct, sys
def tensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    return {name: body[t["data_offsets"][0]:t["data_offsets"][1]]
            for name, t in header.items() if name != "__metadata__"}
sys.exit(0 if tensors(sys.argv[1]) == tensors(sys.argv[2]) else 1)
PY
}
# The mean of the "all-reduce ms/step" lines of a log.
all_reduce_ms() { awk '/^all-reduce ms\/step:/ { s += $3; n++ } END { if (n) printf "%.3f", s / n; else print "none" }' "$1"; }

flags=(--use_data=fake --use_tpu=false --iterations=2 --train_batch_size=4 --eval_batch_size=2
       --eval_total_size=4 --width=75 --height=75 --num_classes=10 --save_checkpoints_secs=0
       --train_steps_per_eval=2 --seed=3 --depth_multiplier=0.1 --num_threads=1)

echo "two_hosts_test: 1. data parallel, one process on each host, against one host"
two_hosts 2 "$bin/inception_v3" "${flags[@]}" --mode=train --train_steps=6 \
  --model_dir="$work/two/model" >"$work/two.log" 2>&1 || { tail -30 "$work/two.log"; fail "mpirun over two hosts"; }
one_host 2 "$bin/inception_v3" "${flags[@]}" --mode=train --train_steps=6 \
  --model_dir="$work/one/model" >"$work/one.log" 2>&1 || { tail -30 "$work/one.log"; fail "mpirun on one host"; }
same_checkpoint "$work/two/model" "$work/one/model" 6 || fail "two hosts trained other weights than one host"
echo "two_hosts_test: same weights; all-reduce ms/step: two hosts (TCP over veth) $(all_reduce_ms "$work/two.log"), one host (shared memory) $(all_reduce_ms "$work/one.log")"

echo "two_hosts_test: 2. a sweep of two variants in two groups of two processes, one group per host"
cat >"$work/sweep.json" <<'JSON'
{"trainer": "inception_v3",
 "flags": {"use_data": "fake", "use_tpu": false, "iterations": 2, "train_batch_size": 4,
           "eval_batch_size": 2, "eval_total_size": 4, "width": 75, "height": 75,
           "num_classes": 10, "save_checkpoints_secs": 0, "train_steps_per_eval": 2, "seed": 3,
           "depth_multiplier": 0.1, "num_threads": 1},
 "grid": {"learning_rate": [0.1, 0.02]}, "metric": "loss", "budget": {"train_steps": 4}}
JSON
two_hosts 4 "$bin/sweep" --sweep_dir="$work/sweep" --config="$work/sweep.json" --groups=2 \
  >"$work/sweep.log" 2>&1 || { tail -30 "$work/sweep.log"; fail "the sweep over two hosts"; }
grep -q "sweep: 2 of 2 variants finished" "$work/sweep.log" || { cat "$work/sweep.log"; fail "the sweep did not finish"; }
for lr in 0.1 0.02; do
  name=$([[ $lr == 0.1 ]] && echo 00 || echo 01)_learning_rate=$lr
  one_host 2 "$bin/inception_v3" "${flags[@]}" --learning_rate=$lr --mode=train_and_eval \
    --train_steps=4 --model_dir="$work/alone-$lr/model" >"$work/alone-$lr.log" 2>&1 ||
    { tail -30 "$work/alone-$lr.log"; fail "the variant alone"; }
  same_checkpoint "$work/sweep/$name/model" "$work/alone-$lr/model" 4 ||
    fail "$name: its group on the two hosts trained other weights than mpirun -np 2 alone"
  echo "two_hosts_test: $name: same weights as alone; all-reduce ms/step in its group $(all_reduce_ms "$work/sweep/$name/train.log"), alone $(all_reduce_ms "$work/alone-$lr.log")"
done
echo "two_hosts_test: passed"
