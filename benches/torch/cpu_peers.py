"""PyTorch on the cpu, eager and under `torch.compile`: W1, W5, W8 and W9.

The PyTorch peer of `benches/peers` (see `../../BENCHMARKS.md`): the same
workloads, shapes, f32 data and layout as `benches/peers/benches/workloads.rs`
(W1, W5, W9) and `benches/peers/benches/w8_block.rs` (W8), on 2 threads.
The input data are the Rust benches' own numbers: `Rng` below is
`opforge_peers::Rng` (SplitMix64), vectorized with numpy, with the same seeds
and draw order.

    python3 benches/torch/cpu_peers.py                      # everything: about 2 minutes
    python3 benches/torch/cpu_peers.py --only w8            # a regex, as criterion's filter
    python3 benches/torch/cpu_peers.py --only 'w1_|w9_' --mode eager --repeat 15

Per workload, eager and compiled calls are warmed up and then timed in turn,
round after round (`--repeat` rounds of about `--batch` seconds each), as the
Rust benches' interleaved pass times opforge and candle: the machine's drift
then hits both modes alike. Every call allocates its output, as a user's op
call does. stdout gets one JSON line per (workload, mode); stderr gets the
progress and, at the end, a readable table.

`torch.compile`'s first call (tracing, Inductor's C++ code generation and
the compiler) is timed apart, as `first_call_s`; the timed rounds exclude
it. Inductor keeps compiled code in a cache across runs (in the system's
temporary folder), so a
second run's first call is quicker; `--fresh-cache` gives a cold compile.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

B, T, W, H = 16, 256, 256, 4  # W8: batch, sequence, width, heads
HD, M = W // H, 4 * W  # W8: head width, MLP width
N2 = 1 << 24  # W9: elements


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="regex over workload names (w1_add_1elem, w5_matmul_1024, ...)")
    p.add_argument("--mode", choices=("eager", "compile", "both"), default="both")
    p.add_argument("--repeat", type=int, default=9, help="interleaved rounds per workload (default 9)")
    p.add_argument("--batch", type=float, default=0.2, help="seconds per mode per round (default 0.2)")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2, as RAYON_NUM_THREADS)")
    p.add_argument("--compile-mode", default=None, help="torch.compile's mode (default: its default)")
    p.add_argument("--fresh-cache", action="store_true",
                   help="compile into a new, empty Inductor cache, so that first_call_s is a cold compile")
    p.add_argument("--list", action="store_true", help="print the workload names and exit")
    return p.parse_args()


ARGS = parse_args()
# Before torch starts its OpenMP pool, and reads where its caches are.
os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
if ARGS.fresh_cache:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="cpu_peers_inductor_")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Rng:
    """`opforge_peers::Rng`: SplitMix64, whose k-th output mixes `seed + k *
    0x9E3779B97F4A7C15`, so a run of draws is one vectorized expression."""

    GAMMA = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, seed):
        self.seed, self.drawn = np.uint64(seed), 0

    def uniform(self, n, low, high):
        """`n` f32 values uniform in [low, high), as the Rust `uniform` rounds them."""
        k = np.arange(self.drawn + 1, self.drawn + n + 1, dtype=np.uint64)
        self.drawn += n
        z = self.seed + k * self.GAMMA  # uint64 arrays wrap, as `wrapping_*` does
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        unit = (z >> np.uint64(40)).astype(np.float32) / np.float32(1 << 24)
        return np.float32(low) + (np.float32(high) - np.float32(low)) * unit


def data(n, low, high, seed, shape=None):
    """`workloads.rs`'s `data`: a fresh generator per input."""
    return torch.from_numpy(Rng(seed).uniform(n, low, high)).reshape(shape or (n,))


class Workload:
    """`fn(*args)` timed per call; `grad` runs it with autograd on;
    `work` is (amount per call, unit) for the rate column."""

    def __init__(self, name, title, fn, args, grad=False, work=None):
        self.name, self.title, self.fn, self.args, self.grad, self.work = name, title, fn, args, grad, work


# W9: opforge's `#[op(fuse)]` chains (`runtime/benches/shared/w9_chains.rs`),
# op for op. Eager runs them op by op, as candle does; Inductor fuses each
# into one loop, the peer of opforge's fused kernel.
def gelu_chain(x):
    t = x * 0.7071067811865476  # FRAC_1_SQRT_2
    p = torch.erf(t) + 1.0
    return torch.clamp_min((x * 0.5) * p, -0.25)


def hard_swish_chain(x):
    c = torch.clamp_max(torch.clamp_min(x + 3.0, 0.0), 6.0)
    return (x * c) * (1.0 / 6.0) + 0.1


# W8: `w8_block.rs`'s `opforge_block`; x is `[B * T, W]`, weights `[in, out]`.
def block(x, p):
    def split(t):
        return t.view(B, T, H, HD).transpose(1, 2)

    h = F.layer_norm(x, (W,), p[0], p[1], 1e-5)
    a = F.scaled_dot_product_attention(split(h @ p[2]), split(h @ p[3]), split(h @ p[4]), is_causal=True)
    x = x + a.transpose(1, 2).reshape(B * T, W) @ p[5]
    h = F.layer_norm(x, (W,), p[6], p[7], 1e-5)
    up = F.gelu(h @ p[8] + p[9])  # the erf form
    return x + (up @ p[10] + p[11])


def block_loss(x, p, g):
    return (block(x, p) * g).sum()


def block_grads(loss_fn, x, p, g):
    """The gradients of `sum(block(x) * g)` for `x` and every parameter."""
    return torch.autograd.grad(loss_fn(x, p, g), [x, *p])


def w8_inputs():
    """`w8_block.rs`'s data: one generator, drawn x, g, then the weights."""
    rng = Rng(0x5EED0008)
    x = torch.from_numpy(rng.uniform(B * T * W, -1.0, 1.0)).reshape(B * T, W)
    g = torch.from_numpy(rng.uniform(B * T * W, -1.0, 1.0)).reshape(B * T, W)
    shapes = [(W,), (W,), (W, W), (W, W), (W, W), (W, W), (W,), (W,), (W, M), (M,), (M, W), (W,)]
    params = []
    for i, s in enumerate(shapes):
        if i in (0, 6):
            params.append(torch.ones(s))
        elif i in (1, 7, 9, 11):
            params.append(torch.zeros(s))
        else:
            params.append(torch.from_numpy(rng.uniform(int(np.prod(s)), -0.06, 0.06)).reshape(s))
    return x, params, g


# Attention alone (`peers/benches/attention.rs`): `[16, 4, 256, 64]`
# causal, PyTorch's fused `scaled_dot_product_attention` against opforge's
# `Attention` kernel; forward, and the gradients of `sum(y * g)`.
ATTENTION = (16, 4, 256, 64)


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def attention_loss(q, k, v, g):
    return (attention(q, k, v) * g).sum()


def attention_grads(loss_fn, q, k, v, g):
    return torch.autograd.grad(loss_fn(q, k, v, g), [q, k, v])


def attention_inputs():
    """`attention.rs`'s data: one generator, drawn q, k, v, then g."""
    rng = Rng(0x5EED0050)
    n = int(np.prod(ATTENTION))
    return [torch.from_numpy(rng.uniform(n, -1.0, 1.0)).reshape(ATTENTION) for _ in range(4)]


def workloads():
    """Each workload's inputs, built only when selected (W9's are 64 MiB each)."""
    yield "w1_add_1elem", lambda: Workload(
        "w1_add_1elem", "W1 add, 1 element", torch.add, (torch.tensor([1.5]), torch.tensor([2.5])))
    for n in (1024, 2048):
        yield f"w5_matmul_{n}", lambda n=n: Workload(
            f"w5_matmul_{n}", f"W5 matmul {n}^3", torch.matmul,
            (data(n * n, -1.0, 1.0, 6, (n, n)), data(n * n, -1.0, 1.0, 7, (n, n))),
            work=(2.0 * n**3, "GFLOP/s"))
    yield "w8_forward", lambda: Workload("w8_forward", "W8 block, forward", block, w8_inputs()[:2])

    def w8_backward():
        x, params, g = w8_inputs()
        leaves = [x.requires_grad_(), *(q.requires_grad_() for q in params)]
        return Workload("w8_forward_backward", "W8 block, forward + backward", block_grads,
                        (block_loss, leaves[0], leaves[1:], g), grad=True)

    yield "w8_forward_backward", w8_backward
    yield "attention_forward", lambda: Workload(
        "attention_forward", "attention [16, 4, 256, 64] causal, forward", attention, attention_inputs()[:3])

    def attention_backward():
        q, k, v, g = attention_inputs()
        return Workload("attention_forward_backward", "attention [16, 4, 256, 64] causal, forward + backward",
                        attention_grads, (attention_loss, q.requires_grad_(), k.requires_grad_(),
                                          v.requires_grad_(), g), grad=True)

    yield "attention_forward_backward", attention_backward
    yield "w9_fused_chain", lambda: Workload(
        "w9_fused_chain", "W9 GELU erf chain 2^24", gelu_chain, (data(N2, 0.0, 4.0, 1),), work=(8.0 * N2, "GB/s"))
    yield "w9_fused_cheap_chain", lambda: Workload(
        "w9_fused_cheap_chain", "W9 cheap chain 2^24", hard_swish_chain, (data(N2, -4.0, 4.0, 2),),
        work=(8.0 * N2, "GB/s"))


def compiled(w):
    """`w`'s call under torch.compile (static shapes: W5's two sizes each get
    their own graph rather than one dynamic one). For W8's backward the
    loss is compiled (AOTAutograd compiles its backward with it) and
    `autograd.grad` called on its result."""
    opts = dict(dynamic=False, mode=ARGS.compile_mode)
    if w.name == "w8_forward_backward":
        loss = torch.compile(block_loss, **opts)
        return lambda *a: block_grads(loss, *a[1:])
    if w.name == "attention_forward_backward":
        loss = torch.compile(attention_loss, **opts)
        return lambda *a: attention_grads(loss, *a[1:])
    return torch.compile(w.fn, **opts)


def check(name, got, want):
    """Compiled and eager must agree, as the Rust benches check opforge against candle."""
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    for a, b in zip(got, want):
        scale = max(b.abs().max().item(), 1.0)
        worst = (a - b).abs().max().item()
        if worst > 2e-3 * scale:
            sys.exit(f"{name}: compiled and eager differ by {worst} (scale {scale})")


def warm(f, args, seconds=0.3, least=3):
    """Calls `f` at least `least` times and for about `seconds`; returns the time taken."""
    start, calls = time.perf_counter(), 0
    while calls < least or time.perf_counter() - start < seconds:
        f(*args)
        calls += 1
    return time.perf_counter() - start


def interleaved(jobs, args, rounds, batch):
    """`opforge_peers::interleaved`: `jobs` ({mode: f}) in turn, `rounds`
    times, each for about `batch` seconds a round. Returns per mode the
    per-call times of every round."""
    iters = {}
    for mode, f in jobs.items():
        # The time of one call, from enough calls to fill a tenth of a batch.
        calls, start = 0, time.perf_counter()
        while calls == 0 or time.perf_counter() - start < batch / 10:
            f(*args)
            calls += 1
        once = max((time.perf_counter() - start) / calls, 1e-9)
        iters[mode] = int(min(max(batch / once, 1), 1e7))
    times = {mode: [] for mode in jobs}
    for _ in range(rounds):
        for mode, f in jobs.items():
            start = time.perf_counter()
            for _ in range(iters[mode]):
                f(*args)
            times[mode].append((time.perf_counter() - start) / iters[mode])
    return times, iters


def fmt(t):
    return f"{t * 1e9:.0f} ns" if t < 1e-6 else f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def main():
    torch.set_num_threads(ARGS.threads)
    names = [name for name, _ in workloads()]
    if ARGS.list:
        print("\n".join(names))
        return
    chosen = [(n, make) for n, make in workloads() if re.search(ARGS.only, n)]
    if not chosen:
        sys.exit(f"no workload matches {ARGS.only!r}; the workloads: {', '.join(names)}")
    modes = ("eager", "compile") if ARGS.mode == "both" else (ARGS.mode,)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}, {ARGS.repeat} rounds of about {ARGS.batch} s "
          "per mode", file=sys.stderr, flush=True)
    table = []
    for name, make in chosen:
        w = make()
        torch.set_grad_enabled(w.grad)  # set once: a context manager per call would cost W1 a microsecond
        jobs, first, warmup = {}, {}, {}
        want = w.fn(*w.args)
        if "eager" in modes:
            jobs["eager"] = w.fn
            warmup["eager"] = warm(w.fn, w.args)
        if "compile" in modes:
            f = compiled(w)
            start = time.perf_counter()
            got = f(*w.args)
            first["compile"] = time.perf_counter() - start
            check(name, got, want)
            jobs["compile"] = f
            warmup["compile"] = warm(f, w.args)
            print(f"# {name}: torch.compile's first call {first['compile']:.1f} s", file=sys.stderr, flush=True)
        del want
        times, iters = interleaved(jobs, w.args, ARGS.repeat, ARGS.batch)
        torch.set_grad_enabled(True)
        row = {"title": w.title}
        for mode, ts in times.items():
            med = statistics.median(ts)
            record = {
                "workload": name, "mode": mode, "median_s": med, "min_s": min(ts), "max_s": max(ts),
                "rounds": len(ts), "calls_per_round": iters[mode], "warmup_s": round(warmup[mode], 3),
                "threads": torch.get_num_threads(), "torch": torch.__version__,
                # The 1-minute load average after the rounds: above the thread count,
                # something else shared the cores and the figures are suspect.
                "loadavg": round(os.getloadavg()[0], 2),
            }
            if mode in first:
                record["first_call_s"] = round(first[mode], 3)
            if w.work:
                record["rate"] = f"{w.work[0] / med / 1e9:.1f} {w.work[1]}"
            if mode == "compile" and "eager" in times:
                ratios = [c / e for c, e in zip(ts, times["eager"])]
                record["compile_over_eager"] = round(statistics.median(ratios), 3)
            print(json.dumps(record), flush=True)
            row[mode] = record
        table.append(row)
        del w, jobs

    print("\n| workload | mode | median | min - max | rate | compile / eager | first call |", file=sys.stderr)
    print("|---|---|---|---|---|---|---|", file=sys.stderr)
    for row in table:
        for mode in modes:
            r = row[mode]
            ratio = f"{r['compile_over_eager']:.2f}x" if "compile_over_eager" in r else "-"
            first_call = f"{r['first_call_s']:.1f} s" if "first_call_s" in r else "-"
            print(f"| {row['title']} | {mode} | {fmt(r['median_s'])} | {fmt(r['min_s'])} - {fmt(r['max_s'])} | "
                  f"{r.get('rate', '-')} | {ratio} | {first_call} |", file=sys.stderr)


if __name__ == "__main__":
    main()
