"""How `transformer.py` and `cnn.py` time a training step on CUDA."""

import statistics
import time

import torch


def median_step(step, repeat, warmup, samples=15):
    """The median time of one `step()`, over `samples` samples that each
    run `repeat` steps and synchronize once, after `warmup` steps."""

    def sample(n):
        start = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n

    sample(warmup)
    return statistics.median(sample(repeat) for _ in range(samples))
