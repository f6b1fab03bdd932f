"""Draws static/favicon.ico: the burst page in miniature, three requests' time bars (grey wait, orange inference).

Run once after changing the drawing: `.venv/bin/python -m tools.favicon`. The colours are the page's
(static/burst.css `--wait`, `--infer`, the header's ink).
"""

import argparse

from PIL import Image, ImageDraw

from kit.live import ROOT

OUTPUT = ROOT / "static" / "favicon.ico"
INK, WAIT, INFER = "#111827", "#9ca3af", "#f59e0b"
# (wait start, inference start, end) of each bar on a 32-unit grid: later requests wait longer.
BARS = [(5, 9, 21), (5, 14, 25), (5, 19, 28)]


def draw(size: int = 256) -> Image.Image:
    unit = size / 32
    image = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    pen.rounded_rectangle((0, 0, size - 1, size - 1), radius=round(6 * unit), fill=INK)
    for row, (start, infer, end) in enumerate(BARS):
        top, bottom = (6 + 7.5 * row) * unit, (11.5 + 7.5 * row) * unit
        pen.rectangle((start * unit, top, infer * unit, bottom), fill=WAIT)
        pen.rectangle((infer * unit, top, end * unit, bottom), fill=INFER)
    return image


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    draw().save(OUTPUT, sizes=[(16, 16), (32, 32), (48, 48)])
    print(f"{OUTPUT.relative_to(ROOT)}: {OUTPUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
