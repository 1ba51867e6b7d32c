"""A probed position drawn as SVG, for notebooks (``Probe._repr_svg_``): the board, and under
each column the result of playing there for the side to move (green a win, grey a draw, red a
loss) with its distance in plies; the optimal columns are outlined. No dependency beyond the
standard library."""
from __future__ import annotations

from html import escape

CELL = 40
COLOURS = {"win": "#2e9e4f", "draw": "#9a9a9a", "loss": "#d0433a"}
CHIPS = {1: "#e8c12c", 2: "#d0433a"}


def probe_svg(probe, width: int, height: int) -> str:
    """SVG text of ``probe`` (a :class:`~c4table.table.probe.Probe`) on a ``width`` x ``height``
    board; the chips come from replaying ``probe.position`` (1-based columns)."""
    cols: list[list[int]] = [[] for _ in range(width)]
    for i, ch in enumerate(probe.position):
        c = int(ch, 36) - 1 if ch.isalnum() else -1
        if 0 <= c < width and len(cols[c]) < height:
            cols[c].append(1 + i % 2)
    best = {m.column for m in probe.best_moves()}
    W, top = width * CELL, 24
    H = top + height * CELL + 34
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">']
    head = (f"ply {probe.ply}, {probe.to_move} to move: "
            + ("game over, " + ("draw" if probe.outcome == "draw" else f"{probe.outcome} won")
               if probe.terminal else
               ("draw" if probe.outcome == "draw" else f"{probe.outcome} wins") + f" in {probe.distance}"))
    out.append(f'<text x="4" y="16">{escape(head)}</text>')
    out.append(f'<rect x="0" y="{top}" width="{W}" height="{height * CELL}" fill="#2a5db0"/>')
    for c in range(width):
        for r in range(height):
            chip = cols[c][r] if r < len(cols[c]) else 0
            cx, cy = c * CELL + CELL // 2, top + (height - 1 - r) * CELL + CELL // 2
            out.append(f'<circle cx="{cx}" cy="{cy}" r="{CELL // 2 - 4}" '
                       f'fill="{CHIPS.get(chip, "#ffffff")}"/>')
    y = top + height * CELL + 4
    for m in probe.moves:
        kind = "draw" if m.outcome == "draw" else ("win" if m.outcome == probe.to_move else "loss")
        x = (m.column - 1) * CELL
        stroke = ' stroke="#000" stroke-width="2"' if m.column in best else ""
        out.append(f'<rect x="{x + 2}" y="{y}" width="{CELL - 4}" height="26" rx="4" '
                   f'fill="{COLOURS[kind]}"{stroke}><title>column {m.column}: {kind} in '
                   f'{m.distance}</title></rect>')
        out.append(f'<text x="{x + CELL // 2}" y="{y + 17}" text-anchor="middle" fill="#fff">'
                   f'{kind[0].upper()}{m.distance}</text>')
    out.append("</svg>")
    return "".join(out)
