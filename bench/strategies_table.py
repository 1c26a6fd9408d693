#!/usr/bin/env python3
"""MCTS vs greedy vs random at equal wall time: bench/strategies_gpu.sh's raw folder
(RAW/STRATEGY/NAME.json, one `kernelpro optimize --json` outcome per run) as the markdown table
for docs/benchmarks.md: per kernel each strategy's speedup over the naive kernel with its
evaluations, and which strategy won (by more than 2% over the next; else a tie); then each
strategy's geomean over the kernels every strategy finished, its mean evaluations, and the winner's
margin over the runner-up in geomean speedup.

Usage: python3 bench/strategies_table.py RAW [--time SECONDS]

A hand-made folder (mcts wins `a`, greedy `b`, `c` a tie; random has no result for `d`):

>>> import json, os, tempfile
>>> raw = tempfile.mkdtemp()
>>> runs = {"mcts": {"a": (2.0, 12), "b": (1.5, 10), "c": (1.0, 9), "d": (3.0, 8)},
...         "greedy": {"a": (1.2, 14), "b": (1.8, 11), "c": (1.01, 9), "d": (2.0, 8)},
...         "random": {"a": (1.1, 13), "b": (1.2, 12), "c": (1.0, 10)}}
>>> for s, kernels in runs.items():
...     os.makedirs(os.path.join(raw, s))
...     for k, (speedup, evals) in kernels.items():
...         json.dump({"speedup": speedup, "evaluations": evals, "stop": "wall_time"},
...                   open(os.path.join(raw, s, k + ".json"), "w"))
>>> _ = open(os.path.join(raw, "random", "d.json"), "w").write("")
>>> print(table(raw, time=8))
| kernel | mcts | greedy | random | winner |
|---|---|---|---|---|
| `a` | **2.00x** (12) | 1.20x (14) | 1.10x (13) | mcts by 1.67x |
| `b` | 1.50x (10) | **1.80x** (11) | 1.20x (12) | greedy by 1.20x |
| `c` | 1.00x (9) | 1.01x (9) | 1.00x (10) | tie |
| `d` | 3.00x (8) | 2.00x (8) | – | – |
| geomean (3 kernels) | **1.44x** | 1.30x | 1.10x | mcts by 1.11x |
| mean evaluations | 10.3 | 11.3 | 11.7 | |
<BLANKLINE>
8 s a search; wins: mcts 1, greedy 1, random 0, ties 1; 1 kernel without every strategy's result (d).
"""
import json
import math
import os
import sys

ORDER = ["mcts", "greedy", "random"]


def load(raw):
    """{strategy: {kernel: (speedup, evaluations) or None}} from RAW/STRATEGY/NAME.json.

    >>> load("/nonexistent")
    {}
    """
    out = {}
    if not os.path.isdir(raw):
        return out
    for s in sorted(os.listdir(raw), key=lambda s: (ORDER.index(s) if s in ORDER else len(ORDER), s)):
        folder = os.path.join(raw, s)
        if not os.path.isdir(folder):
            continue
        out[s] = {}
        for f in sorted(os.listdir(folder)):
            if not f.endswith(".json"):
                continue
            try:
                j = json.load(open(os.path.join(folder, f), encoding="utf-8"))
                out[s][f[:-5]] = (j.get("speedup") or 1.0, j.get("evaluations") or 0)
            except (ValueError, OSError):
                out[s][f[:-5]] = None
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def winner(values):
    """The best (name, value) and its margin over the next, or None when within 2%.

    >>> winner({"a": 2.0, "b": 1.0})
    ('a', 2.0)
    >>> winner({"a": 1.01, "b": 1.0}) is None
    True
    """
    ranked = sorted(values.items(), key=lambda kv: -kv[1])
    if len(ranked) < 2 or ranked[0][1] <= ranked[1][1] * 1.02:
        return None
    return ranked[0][0], ranked[0][1] / ranked[1][1]


def table(raw, time=None):
    runs = load(raw)
    names = list(runs)
    kernels = sorted(set().union(*(set(r) for r in runs.values()))) if runs else []
    lines = ["| kernel | " + " | ".join(names) + " | winner |", "|---" * (len(names) + 2) + "|"]
    complete, missing = [], []
    wins = {n: 0 for n in names}
    ties = 0
    for k in kernels:
        got = {n: runs[n].get(k) for n in names}
        full = all(v is not None for v in got.values())
        w = winner({n: v[0] for n, v in got.items()}) if full else None
        if full:
            complete.append(k)
            if w:
                wins[w[0]] += 1
            else:
                ties += 1
        else:
            missing.append(k)
        cells = []
        for n in names:
            v = got[n]
            if v is None:
                cells.append("–")
            else:
                cell = f"{v[0]:.2f}x ({v[1]})"
                cells.append(f"**{v[0]:.2f}x** ({v[1]})" if w and w[0] == n else cell)
        verdict = (f"{w[0]} by {w[1]:.2f}x" if w else "tie") if full else "–"
        lines.append(f"| `{k}` | " + " | ".join(cells) + f" | {verdict} |")
    if complete:
        g = {n: geomean([runs[n][k][0] for k in complete]) for n in names}
        w = winner(g)
        cells = [f"**{g[n]:.2f}x**" if w and w[0] == n else f"{g[n]:.2f}x" for n in names]
        lines.append(f"| geomean ({len(complete)} kernels) | " + " | ".join(cells) +
                     f" | {f'{w[0]} by {w[1]:.2f}x' if w else 'tie'} |")
        evals = [f"{sum(runs[n][k][1] for k in complete) / len(complete):.1f}" for n in names]
        lines.append("| mean evaluations | " + " | ".join(evals) + " | |")
    summary = []
    if time:
        summary.append(f"{time:g} s a search")
    summary.append("wins: " + ", ".join(f"{n} {wins[n]}" for n in names) + f", ties {ties}")
    note = "; ".join(summary)
    if missing:
        note += f"; {len(missing)} kernel{'s' if len(missing) > 1 else ''} without every strategy's result ({', '.join(missing)})"
    return "\n".join(lines) + "\n\n" + note + "."


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        raise SystemExit(__doc__.split("\n\n")[2])
    time = float(args[args.index("--time") + 1]) if "--time" in args else None
    print(table(args[0], time))


if __name__ == "__main__":
    main()
