"""PyTorch eager on CUDA: one training step of `train_cnn`'s model.

The same model as `opforge_examples::cnn` (in `examples/src/lib.rs`): the
8x8 digits, a 3x3 convolution to 32 channels (same padding), bias, relu,
2x2 max pooling, a 3x3 convolution to 64 channels, bias, relu, 2x2 max
pooling, a dense layer to 10 classes; softmax cross-entropy; Adam; a batch
of 32 images copied from the host every step and shifted by up to one
pixel (a pad and a slice on the device), as the example does. He-normal
weights, zero biases.

Prints the median time of one step (`steps.median_step`), in the `name
seconds` format of `peers.py`:

    python3 benches/gpu/cnn.py
"""

import sys

import torch
import torch.nn.functional as F
from steps import median_step

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
BATCH, C1, C2 = 32, 32, 64


def main():
    g = torch.Generator(device=dev).manual_seed(7)

    def he(*shape, fan_in):
        return (torch.randn(*shape, device=dev, generator=g) * (2.0 / fan_in) ** 0.5).requires_grad_()

    def zeros(n):
        return torch.zeros(n, device=dev, requires_grad=True)

    w1, b1 = he(C1, 1, 3, 3, fan_in=9), zeros(C1)
    w2, b2 = he(C2, C1, 3, 3, fan_in=9 * C1), zeros(C2)
    w3, b3 = he(4 * C2, 10, fan_in=4 * C2), zeros(10)
    adam = torch.optim.Adam([w1, b1, w2, b2, w3, b3], lr=0.003)
    host = torch.Generator().manual_seed(1)
    images = torch.rand(1437, 64, generator=host)
    labels = torch.randint(0, 10, (1437,), generator=host)
    at = [0]

    def step():
        i = at[0] % (1437 // BATCH) * BATCH
        at[0] += 1
        x = images[i : i + BATCH].to(dev, non_blocking=True).view(BATCH, 1, 8, 8)
        y = labels[i : i + BATCH].to(dev, non_blocking=True)
        dy, dx = at[0] % 3, at[0] // 3 % 3
        x = F.pad(x, (1, 1, 1, 1))[:, :, dy : dy + 8, dx : dx + 8]
        h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
        logits = h.permute(0, 2, 3, 1).reshape(BATCH, -1) @ w3 + b3
        adam.zero_grad(set_to_none=True)
        F.cross_entropy(logits, y).backward()
        adam.step()

    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", file=sys.stderr)
    print(f"cnn_step {median_step(step, repeat=20, warmup=5):.9g}", flush=True)


if __name__ == "__main__":
    main()
