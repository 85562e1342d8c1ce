"""Writing a benchmark's section into a results file that other benchmarks write too."""

from __future__ import annotations

from pathlib import Path


def write_section(out: Path, begin: str, end: str, lines: list[str]) -> None:
    """Put ``lines`` (which start with ``begin`` and end with ``end``, the section's markers)
    in ``out``: in place of the section already there, else after what the file holds."""
    text = out.read_text() if out.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + "\n".join(lines) + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + "\n".join(lines) + "\n"
    out.write_text(text)
