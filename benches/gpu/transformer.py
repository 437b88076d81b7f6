"""PyTorch eager on CUDA: one training step of `train_transformer`'s model.

The same model as `examples/src/transformer.rs` (`Config::small`): token
and position embeddings, two pre-norm blocks of causal 4-head attention and
a GELU (erf) MLP of width 4 x 128, a final layer norm and an untied output
layer; softmax cross-entropy on the next character; Adam; a batch of 32
windows of 64 characters of Moby-Dick, copied from the host every step as
the example does. Weights are initialised as the example initialises them
(normal, std 0.02, residual writers scaled by 1/sqrt(2 layers)).

Prints the median time of one step (`steps.median_step`), in the `name
seconds` format of `peers.py`:

    python3 benches/gpu/transformer.py [--compile] [--autocast bf16|f16]

`--autocast` runs the forward and the loss under `torch.autocast` in that
dtype (matmuls on the tensor cores, f32 master weights and Adam), with a
`GradScaler` for f16: PyTorch's mixed-precision recipe, the peer of
`train_transformer --dtype` (issue 51).
"""

import gzip
import math
import sys

import torch
import torch.nn.functional as F
from steps import median_step

torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
CONTEXT, WIDTH, HEADS, LAYERS, BATCH = 64, 128, 4, 2, 32


def main():
    with gzip.open("examples/data/moby-dick.txt.gz", "rt", encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text[: 200_000]], dtype=torch.long)
    v = len(vocab)
    g = torch.Generator(device=dev).manual_seed(7)
    std, residual = 0.02, 0.02 / math.sqrt(2 * LAYERS)

    def param(*shape, s=std):
        t = torch.randn(*shape, device=dev, generator=g) * s if s else torch.zeros(*shape, device=dev)
        return t.requires_grad_()

    def ones(n):
        return torch.ones(n, device=dev, requires_grad=True)

    blocks = [
        dict(
            n1=(ones(WIDTH), param(WIDTH, s=0)),
            q=param(WIDTH, WIDTH), k=param(WIDTH, WIDTH), v=param(WIDTH, WIDTH),
            proj=(param(WIDTH, WIDTH, s=residual), param(WIDTH, s=0)),
            n2=(ones(WIDTH), param(WIDTH, s=0)),
            up=(param(WIDTH, 4 * WIDTH), param(4 * WIDTH, s=0)),
            down=(param(4 * WIDTH, WIDTH, s=residual), param(WIDTH, s=0)),
        )
        for _ in range(LAYERS)
    ]
    token, position = param(v, WIDTH), param(CONTEXT, WIDTH)
    norm, output = (ones(WIDTH), param(WIDTH, s=0)), (param(WIDTH, v), param(v, s=0))
    params = [token, position, *norm, *output]
    for b in blocks:
        params += [*b["n1"], b["q"], b["k"], b["v"], *b["proj"], *b["n2"], *b["up"], *b["down"]]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: vocabulary {v}, "
          f"{sum(p.numel() for p in params)} parameters", file=sys.stderr)

    def ln(x, gb):
        return F.layer_norm(x, (WIDTH,), gb[0], gb[1], 1e-5)

    def forward(inp):
        batch, length = inp.shape
        x = token[inp] + position[:length]
        split = lambda t: t.view(batch, length, HEADS, WIDTH // HEADS).transpose(1, 2)
        for b in blocks:
            h = ln(x, b["n1"])
            a = F.scaled_dot_product_attention(split(h @ b["q"]), split(h @ b["k"]), split(h @ b["v"]), is_causal=True)
            x = x + a.transpose(1, 2).reshape(batch, length, WIDTH) @ b["proj"][0] + b["proj"][1]
            h = F.gelu(ln(x, b["n2"]) @ b["up"][0] + b["up"][1])
            x = x + h @ b["down"][0] + b["down"][1]
        return ln(x, norm) @ output[0] + output[1]

    adam = torch.optim.Adam(params, lr=0.003)
    starts = torch.randint(0, len(ids) - CONTEXT - 1, (4096,), generator=torch.Generator().manual_seed(1))
    windows = torch.stack([ids[s : s + CONTEXT + 1] for s in starts.tolist()])
    at = [0]

    autocast = sys.argv[sys.argv.index("--autocast") + 1] if "--autocast" in sys.argv else None
    half = {"bf16": torch.bfloat16, "f16": torch.float16, None: None}[autocast]
    scaler = torch.amp.GradScaler("cuda", enabled=half is torch.float16)

    def step():
        w = windows[at[0] % 4096 // BATCH * BATCH :][:BATCH].to(dev, non_blocking=True)
        at[0] += BATCH
        adam.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None):
            loss = F.cross_entropy(forward(w[:, :-1]).reshape(-1, v), w[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(adam)
        scaler.update()

    if "--compile" in sys.argv:
        forward = torch.compile(forward)  # `step` calls it through the closure

    name = "transformer_step_compiled" if "--compile" in sys.argv else "transformer_step"
    if autocast:
        name += f"_autocast_{autocast}"
    print(f"{name} {median_step(step, repeat=10, warmup=3):.9g}", flush=True)


if __name__ == "__main__":
    main()
