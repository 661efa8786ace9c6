"""Draws a benchmark's figures as a PNG, from a JSON spec on stdin (run with scripts/bench-venv.sh).

{"out": "x.png", "title": "...", "xlabel": "...", "ylabel": "...",
 "kind": "line" | "bar", "logx": true, "logy": false,
 "series": [{"name": "ours", "x": [...], "y": [...]}],            # line: one line per series
 "hlines": [{"name": "memory bound", "y": 3.2}],                    # optional, dashed
 "note": "measured ..."}                                            # optional, under the plot
For "bar", each series is one bar group: x are the category labels, y the values (null: not
measured, no bar).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def human_bytes(value, _position=None):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:g} {unit}"
        value /= 1024
    return f"{value:g} TiB"


def main():
    spec = json.load(sys.stdin)
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=110)
    if spec.get("kind", "line") == "bar":
        categories = spec["series"][0]["x"]
        width = 0.8 / len(spec["series"])
        highest = 0.0
        for index, series in enumerate(spec["series"]):
            # null: not measured for that category (no bar, not a zero).
            kept = [(i, y) for i, y in enumerate(series["y"]) if y is not None]
            positions = [i + index * width for i, _ in kept]
            bars = axes.bar(positions, [y for _, y in kept], width, label=series["name"])
            axes.bar_label(bars, fmt="%.1f", fontsize=8)
            highest = max([highest] + [y for _, y in kept])
        axes.set_ylim(0, highest * 1.3)  # room for the legend above the bars
        axes.set_xticks([i + width * (len(spec["series"]) - 1) / 2 for i in range(len(categories))])
        axes.set_xticklabels(categories)
    else:
        for series in spec["series"]:
            axes.plot(series["x"], series["y"], marker="o", label=series["name"])
        if spec.get("logx"):
            axes.set_xscale("log", base=2)
        if spec.get("bytes_x"):
            axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(human_bytes))
    if spec.get("logy"):
        axes.set_yscale("log")
    for line in spec.get("hlines", []):
        axes.axhline(line["y"], linestyle="--", color="grey")
        axes.annotate(line["name"], (0.01, line["y"]), xycoords=("axes fraction", "data"),
                      va="bottom", fontsize=8, color="grey")
    axes.set_title(spec["title"])
    axes.set_xlabel(spec.get("xlabel", ""))
    axes.set_ylabel(spec.get("ylabel", ""))
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    if spec.get("note"):
        figure.text(0.01, 0.01, spec["note"], fontsize=7, color="grey")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(spec["out"])
    print(f"plot: {spec['out']}", file=sys.stderr)


if __name__ == "__main__":
    main()
