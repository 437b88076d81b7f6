#!/usr/bin/env bash
# One GPU lend's checks, in one call: the adapter's features, PyTorch's figures
# (f32 and the half types), the training steps beside PyTorch's, the wgpu
# bench with PyTorch's ratios, and the packed GPU tests. Packed by
# `../shared/gpu/pack` (examples it does not run may be left out to fit);
# on the GPU machine, from the checkout root, with `.gpu` carried:
#
#   bash benches/gpu/lend.sh
#
# Everything it prints is also written under $OUT (.gpu/out outside a
# lend); the binaries unpack into .gpu/bin.
set -uo pipefail
g=$(pwd)/.gpu
OUT=${OUT:-.gpu/out}; mkdir -p "$OUT"
for f in "$g"/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGPU_BACKEND=vulkan OPFORGE_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
bin=.gpu/bin
rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" -xJf "$g/bins.tar.xz"
orig=$(cat "$g/checkout-path")
[ -e "$orig" ] || { mkdir -p "$(dirname "$orig")" && ln -s "$(pwd)" "$orig"; }
t0=$(date +%s); stamp() { echo "## $1 at $(( $(date +%s) - t0 )) s"; }
nvidia-smi -L; nproc
stamp adapter; timeout 30 "$bin"/gpu_adapter 2>&1 | tee $OUT/adapter.txt
stamp peers; timeout 120 python3 benches/gpu/peers.py 0.3 > $OUT/peers.txt 2> $OUT/peers.err; cat $OUT/peers.txt; tail -3 $OUT/peers.err
stamp torch-transformer
for a in "" "--autocast bf16" "--autocast f16"; do timeout 60 python3 benches/gpu/transformer.py $a 2>&1 | tail -2; done | tee $OUT/torch_steps.txt
stamp train_transformer
# Captured and replayed (the default), op by op (`--eager`), unfused; a
# profile of 20 replayed steps for the kernels a step runs; bf16.
for u in "" --eager --unfused; do echo "# train_transformer $u"; timeout 60 "$bin"/train_transformer --backend wgpu --epochs 2 --steps 50 $u 2>&1 | grep -E "epoch|backend|trained|rror"; done | tee $OUT/steps.txt
for d in bf16 f16; do echo "# train_transformer --dtype $d"; timeout 30 "$bin"/train_transformer --backend wgpu --epochs 2 --steps 10 --dtype $d 2>&1 | grep -E "epoch|backend|trained|rror"; done | tee -a $OUT/steps.txt
timeout 60 "$bin"/train_transformer --backend wgpu --epochs 1 --steps 20 --profile .gpu/transformer.json 2>&1 | grep -E "kernel runs|^Attention|^MatMul|^BatchMatMul|peak" | tee -a $OUT/steps.txt
timeout 60 python3 benches/gpu/transformer.py 2>&1 | tail -1 | tee -a $OUT/steps.txt
stamp train_mlp
for a in "--backend wgpu" "--backend wgpu --eager" "--backend cpu" "--backend cpu --eager"; do echo "# train_mlp $a"; timeout 60 "$bin"/train_mlp $a --epochs 10 2>&1 | grep -E "epoch  ?1/|epoch 10|trained|accuracy|rror"; done | tee $OUT/mlp.txt
stamp bench; OPFORGE_PEERS=$OUT/peers.txt OPFORGE_BENCH_SECONDS=0.3 timeout 200 "$bin"/bench_wgpu --bench > $OUT/bench.txt 2>&1; tail -75 $OUT/bench.txt
stamp tests
for t in "$bin"/test_*; do
  echo "== $(basename "$t")"
  # trybuild's cases need cargo, which is not there.
  timeout 100 "$t" --skip ui:: 2>&1 | grep -vE '\.\.\. ok$|^stack backtrace:$|^note: Some details' | tail -150
done > $OUT/tests.txt 2>&1; cat $OUT/tests.txt | grep -E "^==|test result|FAILED|panicked" | head -60
stamp done
