"""A horizontal bar chart of the size breakdown per object, in SVG (stdlib
only): one bar per object of each flavour, text/data/bss stacked, then the
flavours' TOTALS, all on one scale."""

from xml.sax.saxutils import escape

COLOURS = {"text": "#4c72b0", "data": "#dd8452", "bss": "#55a868"}


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
