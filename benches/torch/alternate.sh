#!/usr/bin/env bash
# opforge's Rust peer bench and PyTorch's cpu peer (cpu_peers.py), run back
# to back for the same workloads, round after round, so that the machine's
# drift (30-50% between minutes here) hits both alike. After each round it
# prints that round's pairs and ratios (opforge's time over PyTorch's, eager
# and compiled); at the end, every round and the medians over rounds.
#
#   bash benches/torch/alternate.sh [-r ROUNDS] [-o DIR] WORKLOAD...
#
# WORKLOAD is w1, w5, w8 or w9. Each runs BENCHMARKS.md's command for it,
# with criterion's filter narrowed to that workload (from benches/peers):
#
#   w1  cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 3 'w1_'
#   w5  cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 3 'w5_'
#   w8  cargo bench --bench w8_block
#   w9  cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 3 'w9_'
#
# and then `cpu_peers.py --only <WORKLOAD>_ $TORCH_ARGS`. opforge's figure is
# the one BENCHMARKS.md quotes, the bench's closing interleaved table (see
# pairs.py). Rounds: 3 unless -r says more. Every log stays in DIR
# (default: a new temporary folder, from `mktemp -d`), as rN.rust.txt (the bench's stdout),
# rN.rust.err, rN.torch.jsonl and rN.torch.err; `python3
# benches/torch/pairs.py DIR` prints the pairs again.
#
# Environment: PYTHON, the interpreter that has torch (default python3);
# TORCH_ARGS, more arguments for cpu_peers.py (default `--repeat 9`);
# RAYON_NUM_THREADS (default 2, as the benches set it). The benches are
# built once before the first round (`cargo bench --no-run`), so that no
# round times a build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=3
out=""
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while getopts "r:o:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    o) out=$OPTARG ;;
    h) usage 0 ;;
    *) usage 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage 2
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 3 ] || { echo "at least 3 rounds (got $rounds)" >&2; exit 2; }

PYTHON=${PYTHON:-python3}
read -r -a torch_args <<< "${TORCH_ARGS:---repeat 9}"
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
out=${out:-$(mktemp -d -t opforge-vs-torch.XXXXXX)}
mkdir -p "$out"

# The cargo bench and its arguments for a workload (from benches/peers).
bench_for() {
  case $1 in
    w1 | w5 | w9) echo "workloads -- --warm-up-time 1 --measurement-time 3 ${1}_" ;;
    w8) echo "w8_block" ;;
    *) echo "unknown workload '$1' (w1, w5, w8 or w9)" >&2; return 2 ;;
  esac
}
for w in "$@"; do bench_for "$w" > /dev/null; done
"$PYTHON" -c "import torch, numpy" || { echo "$PYTHON lacks torch or numpy: see benches/torch/README.md" >&2; exit 2; }

echo "== logs in $out; $rounds rounds of: $*; RAYON_NUM_THREADS=$RAYON_NUM_THREADS; PyTorch: ${torch_args[*]}"
echo "== building the benches"
for b in $(for w in "$@"; do bench_for "$w" | cut -d' ' -f1; done | sort -u); do
  (cd "$root/benches/peers" && cargo bench --bench "$b" --no-run)
done

for ((r = 1; r <= rounds; r++)); do
  : > "$out/r$r.rust.txt"; : > "$out/r$r.rust.err"; : > "$out/r$r.torch.jsonl"; : > "$out/r$r.torch.err"
  for w in "$@"; do
    read -r -a bench <<< "$(bench_for "$w")"
    echo "== round $r/$rounds: $w, opforge: cargo bench --bench ${bench[*]}"
    # A failed run is reported and leaves its pair empty; the other rounds go on.
    (cd "$root/benches/peers" && cargo bench --bench "${bench[@]}") >> "$out/r$r.rust.txt" 2>> "$out/r$r.rust.err" ||
      echo "!! round $r: $w's cargo bench failed (exit $?); see $out/r$r.rust.err" >&2
    echo "== round $r/$rounds: $w, PyTorch: cpu_peers.py --only ${w}_ ${torch_args[*]}"
    "$PYTHON" "$here/cpu_peers.py" --only "${w}_" "${torch_args[@]}" >> "$out/r$r.torch.jsonl" 2>> "$out/r$r.torch.err" ||
      echo "!! round $r: $w's cpu_peers.py failed (exit $?); see $out/r$r.torch.err" >&2
  done
  "$PYTHON" "$here/pairs.py" "$out" --round "$r"
done

echo
echo "== all rounds ($out)"
"$PYTHON" "$here/pairs.py" "$out"
