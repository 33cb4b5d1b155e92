"""`python -m bot sandbox`'s door: a log folder it cannot make is one line and status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.sandbox.cli import run


def test_a_log_folder_that_cannot_be_made_stops_before_the_story(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "gone" / "logs"  # its parent does not exist
    assert run(log_dir=missing) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"conveyor sandbox: --log-dir {missing}: "
                            "No such file or directory\n")
    assert not missing.parent.exists()
