"""The JSON log lines (bot/runtime/logs.py): one object a line with the delivery id of the work, the
record's extra fields and its exception, and no secret in any of them."""

from __future__ import annotations

import json
import logging
import sys

from bot.runtime.logs import JsonFormatter, delivery_id_var, redact, register_secret

TOKEN = "ghs_" + "A1b2" * 9
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJlLXBhcnQ"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"


def line(record: logging.LogRecord) -> dict[str, object]:
    text = JsonFormatter().format(record)
    assert "\n" not in text
    data: dict[str, object] = json.loads(text)
    return data


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("bot.test", logging.WARNING, __file__, 1, message, args, None)
    made.__dict__.update(extra)
    return made


def test_tokens_keys_and_registered_secrets_are_redacted() -> None:
    register_secret("hook-secret-Xy9")
    register_secret("short")  # too short to be told apart from ordinary words: kept
    text = redact(f"token {TOKEN}, jwt {JWT}, key {PEM}, Authorization: Bearer abc.def, "
                  "secret hook-secret-Xy9, short")
    # the credential after Authorization runs to the next space
    assert text == ("token [redacted], jwt [redacted], key [redacted], Authorization: Bearer "
                    "[redacted] secret [redacted], short")


def test_a_line_carries_the_delivery_its_extra_fields_and_its_exception() -> None:
    token = delivery_id_var.set("d-42")
    try:
        entry = line(record("merged %s", "#7", repository="acme/deploy", pull=7))
    finally:
        delivery_id_var.reset(token)
    assert (entry["level"], entry["logger"], entry["message"]) == ("warning", "bot.test",
                                                                   "merged #7")
    assert (entry["delivery_id"], entry["repository"], entry["pull"]) == ("d-42", "acme/deploy", 7)
    try:
        raise RuntimeError(f"GitHub said no to {TOKEN}")
    except RuntimeError:
        failed = record("resync failed")
        failed.exc_info = sys.exc_info()
    entry = line(failed)
    assert "delivery_id" not in entry
    assert "RuntimeError: GitHub said no to [redacted]" in str(entry["exception"])
    assert TOKEN not in json.dumps(entry)
