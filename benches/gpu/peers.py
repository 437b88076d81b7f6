"""PyTorch on CUDA, on the workloads of opforge's wgpu bench.

Prints `name seconds` per line (the median time of one call), the format
`OPFORGE_PEERS` gives `runtime/benches/wgpu.rs`, which prints the ratios.
Each sample queues `repeat` calls and synchronizes once, as that bench does.
Matmuls run in full f32 (TF32 off), as opforge's do.

    python3 benches/gpu/peers.py > peers.txt
    python3 benches/gpu/peers.py 0.5 --compile > peers.txt   # and W9 under torch.compile

W9's chains run op by op, as PyTorch eager runs them; with `--compile`,
also under `torch.compile` (Inductor writes one Triton kernel per chain),
as `*_compiled` lines, which the bench's table does not use (they are the
peer of opforge's fused rows, compiled ahead of time rather than traced).
"""

import os
import statistics
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
N = 1 << 24
BUDGET = float(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else 0.5
COMPILE = "--compile" in sys.argv
# Only the workloads whose names start with this (`PEERS_ONLY=w9`).
ONLY = os.environ.get("PEERS_ONLY", "")


def bench(name, repeat, f):
    if not name.startswith(ONLY):
        return

    def sample():
        start = time.perf_counter()
        for _ in range(repeat):
            f()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeat

    sample()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < BUDGET and len(times) < 2000):
        times.append(sample())
    print(f"{name} {statistics.median(times):.9g}", flush=True)


def main():
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}", file=sys.stderr)
    g = torch.Generator(device=dev).manual_seed(1)
    u = lambda *s: torch.rand(*s, device=dev, generator=g) * 2 - 1

    a1, b1 = torch.ones(1, device=dev), torch.full((1,), 2.0, device=dev)
    bench("w1_add_1", 16, lambda: a1 + b1)

    x, z, row = u(N), u(N), u(4096)
    square = x.view(4096, 4096)
    bench("w2_copy", 16, lambda: x.clone())  # contiguous: cudaMemcpyAsync, no kernel
    tall = u(4097, 4096)
    bench("w2_slice_rows", 16, lambda: tall[1:].clone())
    bench("w2_exp", 16, lambda: torch.exp(x))
    bench("w2_add", 16, lambda: x + z)
    bench("w2_add_row", 16, lambda: square + row)
    bench("w2_cast", 16, lambda: x.to(torch.int32))
    bench("w2_sgd", 16, lambda: torch.add(x, z, alpha=-0.01))

    for n in (4096, 2048):
        p, q = u(n, n), u(n, n)
        for suffix, ta, tb in (("", False, False), ("_nt", False, True), ("_tn", True, False), ("_tt", True, True)):
            if n != 4096 and suffix:
                continue
            pa, qb = (p.t() if ta else p), (q.t() if tb else q)
            bench(f"w5_matmul_{n}{suffix}", 4, lambda pa=pa, qb=qb: pa @ qb)
    p, q = u(64, 512, 512), u(64, 512, 512)
    bench("w5_bmm_64x512", 4, lambda: torch.bmm(p, q))

    bench("r_sum_all", 16, lambda: x.sum())
    bench("r_sum_rows", 16, lambda: square.sum(dim=1))
    bench("r_softmax", 16, lambda: torch.softmax(square, dim=-1))

    # W9: the six-op chains of opforge's `#[op(fuse)]` composites.
    def gelu_chain(v):
        return torch.maximum((v * 0.5) * (torch.erf(v * 0.7071067811865476) + 1.0), torch.tensor(-0.25, device=dev))

    def hswish_chain(v):
        return v * torch.clamp(v + 3.0, 0.0, 6.0) * (1.0 / 6.0) + 0.1

    x9 = (torch.rand(N, device=dev, generator=g) * 6 - 3).requires_grad_()
    chains = [("w9_gelu_chain", gelu_chain), ("w9_hswish_chain", hswish_chain)]
    if COMPILE:
        chains += [(f"{n}_compiled", torch.compile(f)) for n, f in chains]
    for name, f in chains:
        with torch.no_grad():
            bench(name, 16, lambda f=f: f(x9))
        if name.startswith("w9_gelu_chain"):
            grad = name.replace("w9_gelu_chain", "w9_gelu_chain_grad")
            bench(grad, 8, lambda f=f: torch.autograd.grad(f(x9).sum(), x9))

    # W6: 784 -> 512 relu -> 10, softmax cross-entropy, SGD, batch 256.
    xs = torch.rand(256, 784, device=dev, generator=g)
    labels = torch.tensor([i * 7 % 10 for i in range(256)], device=dev)
    w1 = ((torch.rand(784, 512, device=dev, generator=g) * 2 - 1) / 28).requires_grad_()
    bb1 = torch.zeros(512, device=dev, requires_grad=True)
    w2 = ((torch.rand(512, 10, device=dev, generator=g) * 2 - 1) / 512**0.5).requires_grad_()
    bb2 = torch.zeros(10, device=dev, requires_grad=True)
    opt = torch.optim.SGD([w1, bb1, w2, bb2], lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        h = torch.relu(xs @ w1 + bb1)
        loss = torch.nn.functional.cross_entropy(h @ w2 + bb2, labels)
        loss.backward()
        opt.step()

    bench("w6_mlp_step_wgpu", 8, step)

    # train_mlp's step: 64 -> 128 relu -> 10, Adam, batch 32, the batch
    # copied from the host each step.
    xs_host = torch.rand(32, 64, generator=torch.Generator().manual_seed(10))
    ys_host = torch.tensor([i * 3 % 10 for i in range(32)])
    v1 = (torch.randn(64, 128, device=dev, generator=g) * 0.1).requires_grad_()
    c1 = (torch.randn(128, device=dev, generator=g) * 0.1).requires_grad_()
    v2 = (torch.randn(128, 10, device=dev, generator=g) * 0.1).requires_grad_()
    c2 = (torch.randn(10, device=dev, generator=g) * 0.1).requires_grad_()
    adam = torch.optim.Adam([v1, c1, v2, c2], lr=0.003)

    def small_step():
        xb, yb = xs_host.to(dev, non_blocking=True), ys_host.to(dev, non_blocking=True)
        adam.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(torch.relu(xb @ v1 + c1) @ v2 + c2, yb)
        loss.backward()
        adam.step()

    bench("w6_small_step_wgpu", 16, small_step)

    # Attention (issue 50): causal, f32, forward and forward + backward
    # (the gradients of q, k and v of the output's sum), at [16, 4, 256, 64]
    # and [1, 4, 4096, 64]; PyTorch picks its fused kernel (memory-efficient
    # attention in f32). The bf16 rows are FlashAttention's, for scale.
    for b_, t in ((16, 256), (1, 4096)):
        for dtype, tag in ((torch.float32, ""), (torch.bfloat16, "_bf16")):
            q, k, v = (torch.randn(b_, 4, t, 64, device=dev, generator=g).to(dtype).requires_grad_() for _ in range(3))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            with torch.no_grad():
                bench(f"attn_{t}_fwd{tag}", 4, lambda q=q, k=k, v=v: sdpa(q, k, v, is_causal=True))
            bench(f"attn_{t}_grad{tag}", 2,
                  lambda q=q, k=k, v=v: torch.autograd.grad(sdpa(q, k, v, is_causal=True).sum(), (q, k, v)))

    # H: the half types of issue 51's targets (2^24 elements, 4096^3
    # matmuls), cuBLAS accumulating in f32 as opforge's tiled and
    # cooperative-matrix matmuls are to.
    for dtype, tag in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        hx, hz = x.to(dtype), z.to(dtype)
        bench(f"h_copy_{tag}", 16, lambda hx=hx: hx.clone())
        bench(f"h_exp_{tag}", 16, lambda hx=hx: torch.exp(hx))
        bench(f"h_add_{tag}", 16, lambda hx=hx, hz=hz: hx + hz)
        hg = (hx * 3).requires_grad_()
        with torch.no_grad():
            bench(f"h_gelu_chain_{tag}", 16, lambda hg=hg: gelu_chain(hg))
            if COMPILE:
                compiled = torch.compile(gelu_chain)
                bench(f"h_gelu_chain_{tag}_compiled", 16, lambda hg=hg, c=compiled: c(hg))
        p, q = u(4096, 4096).to(dtype), u(4096, 4096).to(dtype)
        bench(f"h_matmul_4096_{tag}", 4, lambda p=p, q=q: p @ q)


if __name__ == "__main__":
    main()
