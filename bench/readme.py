"""`python -m bench.readme`: rewrite README.md's measured sentence from the committed docs/bench/bursts.json.

The README quotes ①'s bursts on the box; written from the data (with its date and host), it cannot
drift from the benchmark, and tests/test_measure.py fails when the two disagree.
"""

import re

from app.api.measured import NaiveBursts, naive_bursts
from app.settings import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
BLOCK = re.compile(r"(<!-- measured: bursts -->\n)(.*?)(\n<!-- /measured -->)", flags=re.DOTALL)


def sentence(m: NaiveBursts) -> str:
    deaths = f", the box dying {m.big_deaths} time{'s' if m.big_deaths != 1 else ''} meanwhile" if m.big_deaths else ""
    big = f"a burst of {m.big_sent} got {m.big_served} answers{deaths}"
    if m.deaths:
        small = (
            f"a burst of {m.sent} on ① got {m.served} answers: the kernel killed the box at its memory cap "
            f"({m.deaths} death{'s' if m.deaths != 1 else ''})"
        )
    else:
        small = (
            f"a burst of {m.sent} on ① was answered {m.served} times in {m.fastest_s}–{m.slowest_s} s "
            f"(median {m.p50_s} s, memory up to {m.peak_of_cap_pct} % of the cap)"
        )
    where = "([docs/bench/bursts.md](docs/bench/bursts.md))"
    return f"Under the box (`just bench`, {m.when} on {m.host}), {small}, and {big} {where}."


def rendered(text: str, m: NaiveBursts) -> str:
    """README text with the measured block replaced (the text unchanged if it has no block)."""
    return BLOCK.sub(lambda match: match.group(1) + sentence(m) + match.group(3), text)


def main() -> None:
    measured = naive_bursts()
    if measured is None:
        raise SystemExit("docs/bench/bursts.json has no bursts of 12 and 50 on ①: run `just bench` first")
    README.write_text(rendered(README.read_text(encoding="utf-8"), measured), encoding="utf-8")


if __name__ == "__main__":
    main()
