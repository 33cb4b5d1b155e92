"""`python -m bot receive`: sign a saved payload like GitHub does and send it to a server."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sys
import uuid
from pathlib import Path

import aiohttp

from bot.runtime.settings import SettingsError, checked_http_url, merged_environment

# GitHub caps a webhook delivery's payload at 25 MB ("Webhook events and payloads").
MAX_PAYLOAD_BYTES = 25 * 1024 * 1024


def signature_for(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_headers(event: str, body: bytes, secret: str, delivery_id: str | None = None
                    ) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/conveyor-receive",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature_for(body, secret),
    }


def default_url() -> str:
    env = merged_environment()
    port = env.get("PORT", "").strip() or "3000"
    return f"http://127.0.0.1:{port}/api/github/webhooks"


async def send(url: str, event: str, body: bytes, secret: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.post(
        url, data=body, headers=webhook_headers(event, body, secret),
        timeout=aiohttp.ClientTimeout(total=30),
    ) as response:
        return response.status, await response.text(errors="replace")


def run(event: str, payload_path: str, url: str | None) -> int:
    secret = merged_environment().get("GITHUB_WEBHOOK_SECRET", "").strip()
    if not secret:
        raise SettingsError("GITHUB_WEBHOOK_SECRET is not set")
    if url is not None:
        checked_http_url(url, "--url")
    path = Path(payload_path)
    try:
        if path.exists() and not path.is_file():  # a FIFO waits for a writer, /dev/zero never ends
            print(f"{payload_path}: cannot read: not a regular file", file=sys.stderr)
            return 1
        with path.open("rb") as handle:
            body = handle.read(MAX_PAYLOAD_BYTES + 1)
        if len(body) > MAX_PAYLOAD_BYTES:
            print(f"{payload_path}: larger than the 25 MB GitHub sends at most", file=sys.stderr)
            return 1
        json.loads(body)
    except OSError as exc:
        print(f"{payload_path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"{payload_path}: not valid JSON: {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"{payload_path}: not valid JSON: nested too deeply", file=sys.stderr)
        return 1
    if not event.isprintable():
        raise SettingsError(f"-e/--event {event!r}: an event name has no control characters")
    target = url or default_url()
    try:
        status, text = asyncio.run(send(target, event, body, secret))
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        print(f"could not reach {target}: {exc}", file=sys.stderr)
        return 1
    print(f"{status} {text.strip()}")
    return 0 if status < 400 else 1
