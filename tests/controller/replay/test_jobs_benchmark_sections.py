"""benchmarks/jobs/schedule.py --only: the cases not run keep their subsections in the results."""

from __future__ import annotations

from pathlib import Path

from benchmarks.jobs.schedule import BEGIN, END, kept_cases


def test_kept_cases_are_split_by_name_and_say_when_they_were_measured(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text(
        "intro\n"
        f"{BEGIN}\n## title\n\n`python -m benchmarks.jobs.schedule` on a machine, 10:38 UTC.\n\n"
        "### case a\n\n`heliostat replay a`\n\n| table a |\n\n"
        "### case b\n\n`python -m benchmarks.jobs.schedule --only 'case b'` on m, 12:00 UTC:\n"
        "`heliostat replay b`\n"
        f"{END}\ntail\n"
    )
    kept = kept_cases(out)
    assert list(kept) == ["case a", "case b"]
    # an old subsection gets the section's measured line; a new one keeps its own
    assert kept["case a"][:4] == [
        "### case a",
        "",
        "`python -m benchmarks.jobs.schedule` on a machine, 10:38 UTC:",
        "`heliostat replay a`",
    ]
    assert "| table a |" in kept["case a"]
    assert kept["case b"][2].endswith("12:00 UTC:")
    assert kept["case b"].count("`heliostat replay b`") == 1


def test_no_section_keeps_nothing(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    assert kept_cases(out) == {}
    out.write_text("no markers here\n")
    assert kept_cases(out) == {}
