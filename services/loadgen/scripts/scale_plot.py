#!/usr/bin/env python3
"""Plots the table scale.sh writes as an SVG with two charts side by side: the sustainable rate
(a line, left axis) and the p99 from acceptance to MQTT (right axis) against the number of
devices (1,000 zones) and against the number of zones (10,000 devices). No plotting library is
needed: the SVG is written by hand.

Usage: scale_plot.py scale.tsv scale.svg
"""
import csv
import math
import sys

WIDTH, HEIGHT = 460, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 64, 40, 48


def rows(path):
    with open(path, newline="") as f:
        return [{k: float(v) if v else None for k, v in row.items()} for row in csv.DictReader(f, delimiter="\t")]


def chart(points, x_label, title, x0):
    """One chart: `points` are (x, rate per s, p99 ms); x on a log scale."""
    xs = [math.log10(x) for x, _, _ in points]
    lo, hi = min(xs), max(xs)
    rate_max = max(r for _, r, _ in points) * 1.15
    p99s = [p for _, _, p in points if p is not None]
    p99_max = (max(p99s) if p99s else 1.0) * 1.15
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return x0 + LEFT + (math.log10(x) - lo) / max(hi - lo, 1e-9) * plot_w

    def py(value, top):
        return TOP + plot_h - value / top * plot_h

    out = [f'<text x="{x0 + WIDTH / 2}" y="22" text-anchor="middle" font-weight="bold">{title}</text>']
    out.append(f'<rect x="{x0 + LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>')
    for i in range(5):
        value = rate_max * i / 4
        y = py(value, rate_max)
        out.append(f'<line x1="{x0 + LEFT}" x2="{x0 + LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 + LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#1f6fb2">{value / 1000:.0f}k</text>')
        p = p99_max * i / 4
        out.append(f'<text x="{x0 + LEFT + plot_w + 6}" y="{y + 4:.1f}" fill="#c0392b">{p:.0f}</text>')
    for x, _, _ in points:
        out.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{x:,.0f}</text>')
    out.append(f'<text x="{x0 + LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">{x_label}</text>')
    rate_line = " ".join(f"{px(x):.1f},{py(r, rate_max):.1f}" for x, r, _ in points)
    out.append(f'<polyline points="{rate_line}" fill="none" stroke="#1f6fb2" stroke-width="2"/>')
    with_p99 = [(x, p) for x, _, p in points if p is not None]
    p99_line = " ".join(f"{px(x):.1f},{py(p, p99_max):.1f}" for x, p in with_p99)
    out.append(f'<polyline points="{p99_line}" fill="none" stroke="#c0392b" stroke-width="2" stroke-dasharray="5,4"/>')
    for x, r, _ in points:
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(r, rate_max):.1f}" r="3" fill="#1f6fb2"/>')
    return out


def main():
    table = rows(sys.argv[1])
    by_devices = sorted((r["devices"], r["sustainable_per_s"], r["p99_ms"]) for r in table if r["zones"] == 1000)
    by_zones = sorted((r["zones"], r["sustainable_per_s"], r["p99_ms"]) for r in table if r["devices"] == 10000)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * WIDTH}" height="{HEIGHT + 24}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    parts += chart(by_devices, "devices (1,000 zones)", "positions/s by devices", 0)
    parts += chart(by_zones, "zones (10,000 devices)", "positions/s by zones", WIDTH)
    parts.append(
        f'<text x="{WIDTH}" y="{HEIGHT + 16}" text-anchor="middle">'
        '<tspan fill="#1f6fb2">— sustainable positions/s (left)</tspan>   '
        '<tspan fill="#c0392b">- - p99 acceptance → MQTT, ms (right)</tspan></text>'
    )
    parts.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
