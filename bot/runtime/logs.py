"""JSON logs; every line carries the delivery id of the work it belongs to."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

delivery_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "delivery_id", default=None
)

# Installation tokens (ghs_), user tokens (ghp_, gho_, ghu_, github_pat_), JWTs and PEM blocks:
# scrubbed from every message in case a library or an exception text carries one.
_SECRET_PATTERNS = (
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
    re.compile(r"(?i)(authorization:\s*(?:token|bearer)\s+)\S+"),
)
# What every pattern above starts with: a line without any of these (nearly all of them) is
# scanned once instead of once per pattern.
_ANY_SECRET = re.compile(r"gh[pousr]_|github_pat_|eyJ|-----BEGIN |(?i:authorization)")
_extra_secrets: set[str] = set()

_STANDARD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__
) | {"message", "asctime"}


def register_secret(value: str) -> None:
    """Never print this exact value (the webhook secret, the private key)."""
    if len(value) >= 6:
        _extra_secrets.add(value)


def redact(text: str) -> str:
    for secret in _extra_secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    if _ANY_SECRET.search(text) is None:
        return text
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(
            lambda m: (m.group(1) if m.lastindex and m.group(0).lower().startswith("auth") else "")
            + "[redacted]",
            text,
        )
    return text


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        delivery = getattr(record, "delivery_id", None) or delivery_id_var.get()
        if delivery:
            entry["delivery_id"] = delivery
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and key not in entry and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, default=str, ensure_ascii=False))


def configure_logging(level: str = "INFO", stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
