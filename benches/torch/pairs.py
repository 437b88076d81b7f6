"""Pairs opforge's figures with PyTorch's, for `alternate.sh`.

    python3 benches/torch/pairs.py DIR              # every round in DIR, then the medians over rounds
    python3 benches/torch/pairs.py DIR --round 2    # round 2 alone

DIR holds, per round N, `rN.rust.txt` (the stdout of a Rust peer bench) and
`rN.torch.jsonl` (the stdout of `cpu_peers.py`). opforge's time is the one
BENCHMARKS.md quotes: the median over rounds of the bench's closing
interleaved table (`| W1 add, 1 element | 103 ns | 210 ns | ...`, or W8's
`| forward | 40.4 ms | ...`). Where the table lacks a workload, criterion's
middle estimate (`<group>/opforge  time:   [low MID high]`) stands in for it;
`w8_block` prints no criterion figures. Standard library only.
"""

import argparse
import json
import pathlib
import re
import statistics
import sys

# The Rust benches' table titles (workloads.rs, w8_block.rs) -> cpu_peers.py's names.
TITLES = {
    "W1 add, 1 element": "w1_add_1elem",
    "W5 matmul 1024^3": "w5_matmul_1024",
    "W5 matmul 2048^3": "w5_matmul_2048",
    "W9 fused 6-op chain 2^24": "w9_fused_chain",
    "W9 fused 6-op cheap chain 2^24": "w9_fused_cheap_chain",
    "forward": "w8_forward",
    "forward + backward": "w8_forward_backward",
}
UNITS = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
TIME = r"([0-9.]+)\s*(ps|ns|µs|us|ms|s)\b"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def seconds(text):
    """`103 ns`, `40.4 ms`, `12.345 µs` -> seconds; None if it is no time."""
    m = re.fullmatch(TIME, text.strip())
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def rust_times(text):
    """{workload: (seconds, source)} for opforge, from one Rust bench's stdout."""
    lines = ANSI.sub("", text).replace("\r", "\n").splitlines()
    table, crit = {}, {}
    last_id = None
    for line in lines:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            # The first row of a title: the table beside candle comes first
            # (`w8_block` prints a second one, kernel against composite attention).
            if cells[0] in TITLES and len(cells) > 1 and seconds(cells[1]) is not None:
                table.setdefault(TITLES[cells[0]], seconds(cells[1]))
            continue
        # criterion: `id  time:   [a u b u c u]`, the id on the line before when longer than 23.
        m = re.match(r"^(\S*)\s+time:\s+\[" + TIME + r"\s+" + TIME + r"\s+" + TIME + r"\]", line)
        if m:
            bench_id = m.group(1) or last_id
            if bench_id and bench_id.endswith("/opforge"):
                crit[bench_id[: -len("/opforge")]] = float(m.group(4)) * UNITS[m.group(5)]
        elif re.fullmatch(r"\S+", line.strip()):
            last_id = line.strip()
    out = {w: (t, "table") for w, t in table.items()}
    for w, t in crit.items():
        out.setdefault(w, (t, "criterion"))
    return out


def torch_times(text):
    """{(workload, mode): median seconds}, from cpu_peers.py's JSON lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            out[(r["workload"], r["mode"])] = r["median_s"]
    return out


def fmt(t):
    return "-" if t is None else f"{t * 1e9:.0f} ns" if t < 1e-6 else f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def rounds_in(folder):
    return sorted(int(p.name[1:].split(".")[0]) for p in folder.glob("r*.rust.txt"))


def load(folder, n):
    rust = rust_times((folder / f"r{n}.rust.txt").read_text(encoding="utf-8", errors="replace"))
    path = folder / f"r{n}.torch.jsonl"
    torch = torch_times(path.read_text()) if path.exists() else {}
    return rust, torch


def rows(folder, n):
    """One row per workload of round n: (round, workload, opforge, source, eager, compile)."""
    rust, torch = load(folder, n)
    names = sorted({w for w in rust} | {w for w, _ in torch})
    return [(n, w, *rust.get(w, (None, "")), torch.get((w, "eager")), torch.get((w, "compile"))) for w in names]


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", type=pathlib.Path)
    p.add_argument("--round", type=int, help="only this round, without the medians")
    args = p.parse_args()
    numbers = [args.round] if args.round else rounds_in(args.dir)
    if not numbers:
        sys.exit(f"no rN.rust.txt in {args.dir}")
    all_rows = [r for n in numbers for r in rows(args.dir, n)]
    print("| round | workload | opforge | PyTorch eager | opforge / eager | PyTorch compile | opforge / compile |")
    print("|---|---|---|---|---|---|---|")
    for n, w, ours, source, eager, comp in all_rows:
        note = " (criterion)" if source == "criterion" else ""
        re_, rc = ratio(ours, eager), ratio(ours, comp)
        print(f"| {n} | {w} | {fmt(ours)}{note} | {fmt(eager)} | {'-' if re_ is None else f'{re_:.2f}x'} | "
              f"{fmt(comp)} | {'-' if rc is None else f'{rc:.2f}x'} |")
    if args.round:
        return
    print("\nMedians over rounds (of each time, and of each round's ratio):\n")
    print("| workload | rounds | opforge | PyTorch eager | opforge / eager | PyTorch compile | opforge / compile |")
    print("|---|---|---|---|---|---|---|")
    for w in sorted({r[1] for r in all_rows}):
        mine = [r for r in all_rows if r[1] == w]

        def med(values):
            values = [v for v in values if v is not None]
            return statistics.median(values) if values else None

        re_, rc = med(ratio(r[2], r[4]) for r in mine), med(ratio(r[2], r[5]) for r in mine)
        print(f"| {w} | {len(mine)} | {fmt(med(r[2] for r in mine))} | {fmt(med(r[4] for r in mine))} | "
              f"{'-' if re_ is None else f'{re_:.2f}x'} | {fmt(med(r[5] for r in mine))} | "
              f"{'-' if rc is None else f'{rc:.2f}x'} |")


if __name__ == "__main__":
    main()
