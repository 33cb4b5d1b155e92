"""The bot's JSON log read back by the sandbox: errors, and why a promotion was skipped."""

from __future__ import annotations

import json
from pathlib import Path

from bot.sandbox.botlog import logged_errors, logged_reasons


def write_log(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "bot.log"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line)
                              for line in lines) + "\n", encoding="utf-8")
    return path


def test_errors_are_the_records_at_error_or_critical_with_their_logger(tmp_path: Path) -> None:
    path = write_log(
        tmp_path,
        {"level": "info", "logger": "bot.serving.server", "message": "serving"},
        {"level": "error", "logger": "bot.promotion", "message": "open failed"},
        "Traceback (most recent call last):",  # not JSON: passed over
        ["error", "a list, not a record"],
        {"level": "warning", "logger": "bot.registry", "message": "slow"},
        {"level": "critical", "logger": "bot.app", "message": "cannot start"},
    )
    assert logged_errors(path) == ["bot.promotion: open failed", "bot.app: cannot start"]


def test_undecodable_bytes_do_not_stop_the_reading(tmp_path: Path) -> None:
    path = tmp_path / "bot.log"
    path.write_bytes(b"\xff\xfe garbage\n"
                     + json.dumps({"level": "error", "logger": "x", "message": "m"}).encode()
                     + b"\n")
    assert logged_errors(path) == ["x: m"]


def test_reasons_are_the_skips_and_refusals_of_that_environment(tmp_path: Path) -> None:
    path = write_log(
        tmp_path,
        {"env": "prod", "message": "promotion skipped", "detail": "frozen until Monday"},
        {"env": "prod", "message": "promotion refused"},  # no detail: the message itself
        {"env": "staging", "message": "promotion skipped", "detail": "not for prod"},
        {"env": "prod", "message": "promotion opened", "detail": "PR #4"},
        {"env": "prod", "detail": "no message at all"},
    )
    assert logged_reasons(path, "prod") == ["frozen until Monday", "promotion refused"]
    assert logged_reasons(path, "staging") == ["not for prod"]
    assert logged_reasons(path, "dev") == []
