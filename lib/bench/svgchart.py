"""The bench's charts, in SVG (stdlib only).

size_chart: a horizontal bar chart of the size breakdown per object: one
bar per object of each flavour, text/data/bss stacked, then the flavours'
TOTALS, all on one scale. speed_chart: a panel per speed figure, every run
of each flavour as a dot and its median as a bar on the figure's axis, then
the ratios of the pairs of runs on a strip of their own with a line at 1.
bar_chart: grouped horizontal bars, one bar per flavour in each group, the
panels on one scale."""

import math
import statistics
from xml.sax.saxutils import escape

COLOURS = {"text": "#4c72b0", "data": "#dd8452", "bss": "#55a868"}
# the flavours, in the order given (orange and blue: told apart by
# colour-blind readers too); the pair ratios; the medians
FLAVOUR_COLOURS = ("#e69f00", "#0072b2")
RATIO_COLOUR = "#555"
MEDIAN_COLOUR = "#000"
FLOOR_COLOUR = "#009e73"
GRID = "#e4e4e4"


def size_chart(flavours, title):
    """FLAVOURS: {name: {"objects": [rows], "totals": row}} (rows with
    object, text, data, bss, dec)."""
    rows = []  # (label, row, bold)
    for f, s in flavours.items():
        rows.append((f"{f}:", None, True))
        for o in s["objects"]:
            rows.append((o["object"], o, False))
        rows.append((f"{f} (TOTALS)", s["totals"], True))
    peak = max([r["dec"] for _, r, _ in rows if r] + [1])
    label_w, bar_w, row_h, top = 330, 520, 18, 56
    width = label_w + bar_w + 110
    height = top + row_h * len(rows) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>']
    x = 10
    for k, c in COLOURS.items():
        out.append(f'<rect x="{x}" y="30" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{x + 16}" y="41">{k}</text>')
        x += 70
    y = top
    for label, r, bold in rows:
        weight = ' font-weight="bold"' if bold else ""
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end"{weight}>'
                   f'{escape(label)}</text>')
        if r:
            x = label_w
            for k in ("text", "data", "bss"):
                w = bar_w * r[k] / peak
                if w > 0:
                    out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" '
                               f'height="{row_h - 5}" fill="{COLOURS[k]}">'
                               f'<title>{escape(r["object"])} {k} {r[k]}</title></rect>')
                x += w
            out.append(f'<text x="{x + 4:.1f}" y="{y + 13}">{r["dec"]:,}</text>')
        y += row_h
    out.append(f'<line x1="{label_w}" y1="{top}" x2="{label_w}" y2="{y}" stroke="#888"/>')
    out.append(f'<text x="{label_w}" y="{y + 18}" fill="#555">0</text>')
    out.append(f'<text x="{label_w + bar_w}" y="{y + 18}" text-anchor="end" fill="#555">'
               f'{peak:,} bytes (dec)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def ticks(lo, hi, n=5):
    """About N round values, from LO or just below it to HI or just above."""
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def scale(tk, x0, x1):
    """The x of a value on an axis from TK[0] at X0 to TK[-1] at X1."""
    lo, hi = tk[0], tk[-1]
    return lambda v: x0 + (x1 - x0) * (v - lo) / (hi - lo)


def axis(out, tk, sx, y, top, unit):
    """A horizontal axis at Y: grid lines from TOP down to it, a tick and
    a label at each of TK, UNIT after the last."""
    for v in tk:
        x = sx(v)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{y}" stroke="{GRID}"/>')
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle" fill="#555">{v:g}</text>')
    out.append(f'<line x1="{sx(tk[0]):.1f}" y1="{y}" x2="{sx(tk[-1]):.1f}" y2="{y}" stroke="#888"/>')
    out.append(f'<text x="{sx(tk[-1]) + 24:.1f}" y="{y + 16}" fill="#555">{escape(unit)}</text>')


def head(out, width, height, title):
    out += [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12">',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>']


def legend(out, items, y):
    """ITEMS: (label, svg of the mark at x=0..12 and y=0..12), in a row at Y."""
    x = 10
    for label, mark in items:
        out.append(f'<g transform="translate({x},{y})">{mark}</g>')
        out.append(f'<text x="{x + 17}" y="{y + 11}">{escape(label)}</text>')
        x += 30 + 7 * len(label)


def dot(x, y, colour, tip):
    return (f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{colour}" fill-opacity="0.6" '
            f'stroke="{colour}"><title>{escape(tip)}</title></circle>')


def median_bar(x, y, tip):
    return (f'<line x1="{x:.1f}" y1="{y - 9}" x2="{x:.1f}" y2="{y + 9}" stroke="{MEDIAN_COLOUR}" '
            f'stroke-width="2.5"><title>{escape(tip)}</title></line>')


def floor_line(out, x, y0, y1, text, tx, ty):
    """A dashed vertical line at X from Y0 to Y1, and TEXT at (TX, TY)."""
    out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="{FLOOR_COLOUR}" '
               f'stroke-width="2" stroke-dasharray="3 2"><title>{escape(text)}</title></line>')
    out.append(f'<text x="{tx}" y="{ty}" fill="{FLOOR_COLOUR}">{escape(text)}</text>')


def speed_chart(panels, flavours, title):
    """PANELS: [{"title", "unit", "runs": {flavour: [value of each run]},
    "ratios": [ratio of each pair, FLAVOURS[1] / FLAVOURS[0]], "note": the
    ranking rule's outcome, and optionally "floor": the figure's floor and
    "floor_ratio": its ratio to FLAVOURS[0]'s}], one per figure; each panel
    has an axis of its own for the runs and one for the ratios."""
    fa, fb = flavours
    colour = dict(zip(flavours, FLAVOUR_COLOURS))
    label_w, plot_w, width = 200, 500, 960
    x0, x1 = label_w, label_w + plot_w
    heights = [124 + (68 if p["ratios"] else 0) for p in panels]
    height = 66 + sum(heights)
    out = []
    head(out, width, height, title)
    legend(out, [(f, f'<circle cx="6" cy="6" r="5" fill="{colour[f]}" fill-opacity="0.6" '
                     f'stroke="{colour[f]}"/>') for f in flavours] +
           [("median", f'<line x1="6" y1="-2" x2="6" y2="14" stroke="{MEDIAN_COLOUR}" '
                       'stroke-width="2.5"/>'),
            (f"pair ratio {fb} / {fa}", f'<circle cx="6" cy="6" r="5" fill="{RATIO_COLOUR}" '
                                       f'fill-opacity="0.6" stroke="{RATIO_COLOUR}"/>')] +
           ([("floor: the bytes only reach the guest (N_NULL)",
              f'<line x1="6" y1="-2" x2="6" y2="14" stroke="{FLOOR_COLOUR}" '
              'stroke-width="2" stroke-dasharray="3 2"/>')]
            if any(p.get("floor") for p in panels) else []), 30)
    py = 60
    for p, h in zip(panels, heights):
        unit = p["unit"]
        out.append(f'<line x1="10" y1="{py}" x2="{width - 10}" y2="{py}" stroke="#bbb"/>')
        out.append(f'<text x="10" y="{py + 18}" font-size="13" font-weight="bold">'
                   f'{escape(p["title"])}</text>')
        if p.get("note"):
            out.append(f'<text x="10" y="{py + 35}" fill="#333">{escape(p["note"])}</text>')
        floor = p.get("floor")
        vals = [v for f in flavours for v in p["runs"][f]] + ([floor] if floor else [])
        tk = ticks(min(vals), max(vals))
        sx = scale(tk, x0, x1)
        axis(out, tk, sx, py + 98, py + 44, unit)
        if floor:
            floor_line(out, sx(floor), py + 46, py + 98, f"floor {floor:.3f} {unit}",
                       x1 + 40, py + 104)
        for i, f in enumerate(flavours):
            y = py + 56 + 22 * i
            xs = p["runs"][f]
            med = statistics.median(xs)
            out.append(f'<text x="{label_w - 10}" y="{y + 4}" text-anchor="end">{escape(f)}</text>')
            out.extend(dot(sx(v), y, colour[f], f"{f} run {j + 1}: {v:.3f} {unit}")
                       for j, v in enumerate(xs))
            out.append(median_bar(sx(med), y, f"{f} median: {med:.3f} {unit}"))
            out.append(f'<text x="{x1 + 40}" y="{y + 4}">median {med:.3f} {escape(unit)}</text>')
        if p["ratios"]:
            rs = p["ratios"]
            fr = [p["floor_ratio"]] if p.get("floor_ratio") else []
            tk = ticks(min(rs + fr + [1.0]), max(rs + fr + [1.0]))
            sx = scale(tk, x0, x1)
            y = py + 152
            axis(out, tk, sx, y + 14, y - 12, f"{fb} / {fa}")
            if fr:
                floor_line(out, sx(fr[0]), y - 10, y + 14, f"floor / {fa} {fr[0]:.3f}",
                           x1 + 40, y + 20)
            one = sx(1.0)
            out.append(f'<line x1="{one:.1f}" y1="{y - 22}" x2="{one:.1f}" y2="{y + 14}" '
                       'stroke="#c00" stroke-dasharray="4 3"/>')
            out.append(f'<text x="{one - 5:.1f}" y="{y - 14}" text-anchor="end" font-size="10" '
                       f'fill="#555">&#8592; {escape(fb)} faster</text>')
            out.append(f'<text x="{one + 5:.1f}" y="{y - 14}" font-size="10" '
                       f'fill="#555">{escape(fa)} faster &#8594;</text>')
            out.append(f'<text x="{label_w - 10}" y="{y + 4}" text-anchor="end">pair ratios</text>')
            out.extend(dot(sx(v), y, RATIO_COLOUR, f"pair {j + 1}: {v:.3f}")
                       for j, v in enumerate(rs))
            med = statistics.median(rs)
            out.append(median_bar(sx(med), y, f"median pair ratio: {med:.3f}"))
            out.append(f'<text x="{x1 + 40}" y="{y + 4}">median {med:.3f}</text>')
        py += h
    out.append("</svg>")
    return "\n".join(out) + "\n"


def bar_chart(panels, flavours, title, unit, names=None):
    """PANELS: [(title, [(group, {flavour: (value, text)})])]: in each
    group a bar per flavour, labelled with its text; every panel on the
    one axis (in UNIT), from 0 or the lowest value to the highest. NAMES:
    the flavours' names in the legend."""
    colour = dict(zip(flavours, FLAVOUR_COLOURS))
    names = names or {}
    label_w, plot_w, width = 270, 440, 860
    bar_h, group_h = 15, 17 * len(flavours) + 10
    vals = [v for _, groups in panels for _, g in groups for v, _ in g.values()]
    tk = ticks(min(vals + [0]), max(vals + [0]))
    sx = scale(tk, label_w, label_w + plot_w)
    height = 56 + sum(24 + group_h * len(groups) for _, groups in panels) + 36
    out = []
    head(out, width, height, title)
    legend(out, [(names.get(f, f), f'<rect width="12" height="12" fill="{colour[f]}"/>')
                 for f in flavours], 30)
    y = 56
    top = y
    rows = []
    for ptitle, groups in panels:
        rows.append(f'<text x="10" y="{y + 16}" font-size="13" font-weight="bold">'
                    f'{escape(ptitle)}</text>')
        y += 24
        for label, g in groups:
            rows.append(f'<text x="{label_w - 10}" y="{y + group_h / 2 + 1:.1f}" '
                        f'text-anchor="end">{escape(label)}</text>')
            for i, f in enumerate(flavours):
                v, text = g[f]
                by = y + 17 * i
                a, b = sorted((sx(0), sx(v)))
                rows.append(f'<rect x="{a:.1f}" y="{by}" width="{max(b - a, 0.5):.1f}" '
                            f'height="{bar_h}" fill="{colour[f]}">'
                            f'<title>{escape(names.get(f, f))}, {escape(label)}: '
                            f'{escape(text)}</title></rect>')
                rows.append(f'<text x="{max(sx(0), sx(v)) + 4:.1f}" y="{by + 12}">'
                            f'{escape(text)}</text>')
            y += group_h
    axis(out, tk, sx, y + 4, top, unit)
    out.extend(rows)
    out.append(f'<line x1="{sx(0):.1f}" y1="{top}" x2="{sx(0):.1f}" y2="{y + 4}" stroke="#333"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
