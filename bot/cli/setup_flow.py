"""`python -m bot setup`: register the GitHub App through GitHub's manifest flow, write `.env`.

1. A local page (default http://127.0.0.1:3000/) holds a form that POSTs `app-manifest.yml`
   (as JSON, with `redirect_url` pointing back here) to `{web}/settings/apps/new?state=X`, or
   to `{web}/organizations/{org}/settings/apps/new?state=X` with `--org`.
2. GitHub shows the app for confirmation, creates it, and redirects the browser to
   `/setup/done?code=...&state=X` here. A `state` other than the one this run made is refused.
3. The code is exchanged (`POST /app-manifests/{code}/conversions`, no authentication) against
   `GITHUB_API_URL` — github.com, or GitHub Enterprise Server's `https://HOST/api/v3` whose web
   UI is `https://HOST` — for the app id, private key and webhook secret, written to `.env`
   (mode 0600; an existing file is kept unless `--force`).
"""

from __future__ import annotations

import asyncio
import hmac
import html
import json
import os
import secrets
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from bot.names import GATE_CHECK
from bot.runtime.context import web_url_for
from bot.runtime.settings import (
    DEFAULT_API_URL,
    checked_api_url,
    merged_environment,
)

DONE_PATH = "/setup/done"
PLACEHOLDER_WEBHOOK_URL = "https://conveyor.example.com/api/github/webhooks"
MANIFEST_NAME = "app-manifest.yml"


class SetupError(Exception):
    """Setup cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class SetupConfig:
    api_url: str
    manifest: dict[str, Any]
    env_file: Path
    host: str = "127.0.0.1"
    port: int = 3000
    org: str | None = None
    webhook_url: str | None = None
    force: bool = False

    @property
    def web_url(self) -> str:
        return web_url_for(self.api_url)

    @property
    def local_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def new_app_url(self) -> str:
        if self.org:
            return f"{self.web_url}/organizations/{quote(self.org)}/settings/apps/new"
        return f"{self.web_url}/settings/apps/new"


@dataclass(frozen=True)
class Saved:
    """Where the new app's settings were written; `problem` says why not to `--env-file`."""

    path: Path
    problem: str | None = None


@dataclass
class SetupState:
    config: SetupConfig
    state: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    done: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    app: dict[str, Any] | None = None
    saved: Saved | None = None
    unsaved: str | None = None  # why the settings of a registered app are not saved


_STATE: web.AppKey[SetupState] = web.AppKey("conveyor_setup")


# -- the manifest ----------------------------------------------------------------------------------
def find_manifest(explicit: Path | None) -> Path:
    """`--manifest`, else `./app-manifest.yml`, else the one of the source checkout."""
    if explicit is not None:
        if not explicit.is_file():
            raise SetupError(f"{explicit}: no such file")
        return explicit
    for candidate in (Path.cwd() / MANIFEST_NAME,
                      Path(__file__).resolve().parents[2] / MANIFEST_NAME):
        if candidate.is_file():
            return candidate
    raise SetupError(f"no {MANIFEST_NAME} in this directory; pass --manifest FILE")


def load_manifest(path: Path) -> dict[str, Any]:
    from bot.yamlread.data import DataBuilder
    from bot.yamlread.nodes import YamlError, parse

    try:
        stream = parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SetupError(f"{path}: cannot read the app manifest: {exc}") from None
    except UnicodeDecodeError:
        raise SetupError(f"{path}: cannot read the app manifest: not UTF-8 text") from None
    except YamlError as exc:
        raise SetupError(f"{path}:{exc.line}: cannot read the app manifest: {exc}") from None
    builder = DataBuilder()
    data = builder.build(stream.documents[0].root) if stream.documents else None
    if builder.problems:
        problem = builder.problems[0]
        raise SetupError(f"{path}:{problem.pos[0]}: cannot read the app manifest: "
                         f"{problem.message}")
    if not isinstance(data, dict) or not data.get("name"):
        raise SetupError(f"{path}: an app manifest is a mapping with at least `name`")
    try:
        plain: dict[str, Any] = json.loads(json.dumps(data, allow_nan=False))
    except (TypeError, ValueError):
        raise SetupError(f"{path}: an app manifest holds JSON values only (a key that is a "
                         "mapping or a list, or a number JSON cannot hold)") from None
    return plain


def manifest_for(config: SetupConfig) -> dict[str, Any]:
    """The manifest as posted: redirect back here, the webhook URL the user gave."""
    manifest = dict(config.manifest)
    manifest["redirect_url"] = config.local_url + DONE_PATH
    hooks = dict(manifest.get("hook_attributes") or {})
    hooks["url"] = config.webhook_url or hooks.get("url") or PLACEHOLDER_WEBHOOK_URL
    hooks.setdefault("active", True)
    manifest["hook_attributes"] = hooks
    return manifest


def uses_placeholder(config: SetupConfig) -> bool:
    return config.webhook_url is None


# -- .env ------------------------------------------------------------------------------------------
def env_text(app: dict[str, Any], api_url: str) -> str:
    """The settings of the new app; the key on one line with literal `\\n`, as platforms
    store it (Conveyor reads both forms)."""
    pem = str(app["pem"]).strip().replace("\r\n", "\n").replace("\n", "\\n") + "\\n"
    lines = [
        f"# GitHub App {app.get('slug') or app.get('name')} ({app.get('html_url', '')}),",
        "# written by `python -m bot setup`. Keep this file secret.",
        f"GITHUB_APP_ID={int(app['id'])}",
        f"GITHUB_PRIVATE_KEY={pem}",
        f"GITHUB_WEBHOOK_SECRET={app['webhook_secret']}",
    ]
    if api_url.rstrip("/") != DEFAULT_API_URL:
        lines.append(f"GITHUB_API_URL={api_url.rstrip('/')}")
    return "\n".join(lines) + "\n"


def write_env(path: Path, text: str, *, force: bool) -> None:
    """Write with mode 0600 from the first byte; refuse to replace a file unless `force`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        handle = os.open(path, flags, 0o600)
    except FileExistsError:
        raise SetupError(f"{path} exists; run again with --force to replace it") from None
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        if hasattr(os, "fchmod"):  # a replaced file keeps its old mode otherwise (not Windows)
            os.fchmod(out.fileno(), 0o600)
        out.write(text)


def check_destination(path: Path, *, force: bool) -> None:
    """SetupError unless `path` can be written: checked before the one-use code is spent."""
    if path.is_dir():
        raise SetupError(f"{path} is a folder; --env-file names the file to write")
    if path.exists() and not force:
        raise SetupError(f"{path} exists; run again with --force to replace it")
    folder = path.parent
    if not folder.is_dir():
        raise SetupError(f"{folder}: no such folder (for --env-file {path})")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists()
                                                    and not os.access(path, os.W_OK)):
        raise SetupError(f"{path}: cannot write there (permission denied)")


def save_env(config: SetupConfig, text: str) -> Saved:
    """Write `--env-file`; if that fails, a new 0600 file in the current folder, else the
    temporary one, so that the app's key and webhook secret are not lost."""
    try:
        write_env(config.env_file, text, force=config.force)
        return Saved(config.env_file)
    except SetupError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"cannot write {config.env_file}: {exc.strerror or exc}"
    for folder in (os.curdir, tempfile.gettempdir()):
        try:
            handle, name = tempfile.mkstemp(prefix="conveyor-app-", suffix=".env", dir=folder)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            return Saved(Path(os.path.abspath(name)), problem)
        except OSError:
            continue
    raise SetupError(f"{problem}; nor can a file be written in the current folder or in "
                     f"{tempfile.gettempdir()}")


# -- the code exchange -----------------------------------------------------------------------------
async def convert_code(api_url: str, code: str) -> dict[str, Any]:
    """`POST /app-manifests/{code}/conversions`: the new app, its key and webhook secret."""
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
               "User-Agent": "conveyor-setup"}
    async with aiohttp.ClientSession() as session, session.post(
            url, headers=headers, timeout=aiohttp.ClientTimeout(total=30)) as response:
        text = await response.text()
        if response.status != 201:
            try:
                message = str(json.loads(text).get("message") or text)
            except (json.JSONDecodeError, AttributeError):
                message = text
            raise SetupError(f"GitHub refused the code ({response.status}): {message.strip()}"
                             " — codes are valid for one hour and one use; start again")
        data = json.loads(text)
    if not isinstance(data, dict) or not all(k in data for k in ("id", "pem", "webhook_secret")):
        raise SetupError("GitHub's answer lacks the app id, key or webhook secret")
    return data


# -- the pages -------------------------------------------------------------------------------------
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:44em;margin:3em auto;padding:0 1em}}
code,pre{{background:#f4f4f4;padding:.1em .3em}}button{{font-size:1.1em;padding:.4em 1.2em}}
</style></head><body>{body}</body></html>
"""


def _page(title: str, body: str, status: int = 200) -> web.Response:
    return web.Response(text=_PAGE.format(title=html.escape(title), body=body),
                        content_type="text/html", status=status)


async def start_page(request: web.Request) -> web.Response:
    setup = request.app[_STATE]
    config = setup.config
    action = f"{config.new_app_url}?state={quote(setup.state)}"
    manifest = json.dumps(manifest_for(config))
    where = f"the organisation <b>{html.escape(config.org)}</b>" if config.org else "your account"
    hook = manifest_for(config)["hook_attributes"]["url"]
    warning = (f"<p>⚠ The webhook URL is a placeholder (<code>{html.escape(hook)}</code>). "
               "Change it in the app's settings once your server is reachable, or start again "
               "with <code>--webhook-url</code>.</p>" if uses_placeholder(config) else
               f"<p>Webhooks will go to <code>{html.escape(hook)}</code>.</p>")
    body = (
        f"<h1>Register Conveyor on {html.escape(config.web_url)}</h1>"
        f"<p>This creates a GitHub App for {where} from <code>{MANIFEST_NAME}</code>, with "
        "exactly the permissions and events Conveyor uses. GitHub asks you to confirm, then "
        f"sends you back here and the app's id, key and webhook secret are written to "
        f"<code>{html.escape(str(config.env_file))}</code>.</p>{warning}"
        f'<form action="{html.escape(action)}" method="post">'
        f'<input type="hidden" name="manifest" value="{html.escape(manifest)}">'
        "<button type=\"submit\">Create the GitHub App</button></form>"
    )
    return _page("Conveyor setup", body)


async def done_page(request: web.Request) -> web.Response:
    setup = request.app[_STATE]
    config = setup.config
    state = request.query.get("state", "")
    code = request.query.get("code", "")
    if not hmac.compare_digest(state.encode(), setup.state.encode()):
        return _page("Conveyor setup", "<h1>Refused</h1><p>The <code>state</code> does not "
                     "match the one this page made. Start again from "
                     f'<a href="/">{html.escape(config.local_url)}/</a>.</p>', 403)
    if not code:
        return _page("Conveyor setup", "<h1>No code</h1><p>GitHub sent no <code>code</code>; "
                     'start again from <a href="/">the setup page</a>.</p>', 400)
    if setup.app is not None:
        return _page("Conveyor setup", "<h1>Already done</h1><p>The app is registered and "
                     f"<code>{html.escape(str(config.env_file))}</code> written.</p>", 409)
    try:
        app = await convert_code(config.api_url, code)
    except SetupError as exc:
        return _page("Conveyor setup", f"<h1>Setup failed</h1><p>{html.escape(str(exc))}</p>",
                     502)
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return _page("Conveyor setup", "<h1>Setup failed</h1><p>Could not reach "
                     f"{html.escape(config.api_url)}: {html.escape(str(exc))}</p>", 502)
    setup.app = app
    try:
        setup.saved = save_env(config, env_text(app, config.api_url))
    except SetupError as exc:
        setup.unsaved = f"{exc}. {lost_hint(config, app)}"
        setup.done.set()
        return _page("Conveyor setup", "<h1>The app is registered, its settings are not "
                     f"saved</h1><p>{html.escape(setup.unsaved)}</p>", 500)
    setup.done.set()
    steps = "".join(f"<li>{html.escape(step)}</li>"
                    for step in next_steps(config, app, setup.saved))
    return _page("Conveyor setup", f"<h1>Conveyor is registered</h1><ol>{steps}</ol>")


def app_url(config: SetupConfig, app: dict[str, Any]) -> str:
    return str(app.get("html_url") or f"{config.web_url}/apps/{app.get('slug', '')}")


def lost_hint(config: SetupConfig, app: dict[str, Any]) -> str:
    return (f"Generate a private key and set a new webhook secret in the app's settings "
            f"({app_url(config, app)}), then write .env by hand (GITHUB_APP_ID={app['id']})")


def next_steps(config: SetupConfig, app: dict[str, Any], saved: Saved) -> list[str]:
    html_url = app_url(config, app)
    wrote = (f"Wrote {saved.path} (mode 0600): GITHUB_APP_ID={app['id']}, "
             "GITHUB_PRIVATE_KEY, GITHUB_WEBHOOK_SECRET"
             + (", GITHUB_API_URL" if config.api_url.rstrip("/") != DEFAULT_API_URL else "")
             + ".")
    if saved.problem is not None:
        wrote = (f"Could not write {config.env_file} ({saved.problem}). {wrote} "
                 f"Move it to where the server reads its .env.")
    steps = [wrote,
             f"Install the app on your deployment repository and the source repositories "
             f"whose releases feed it: {html_url}/installations/new"]
    if uses_placeholder(config):
        steps.append(f"Set the webhook URL to your server's /api/github/webhooks in the app's "
                     f"settings ({html_url}); it is a placeholder now.")
    steps.append("Start the server in this directory: python -m bot serve "
                 "(or deploy it: see deploy/README.md).")
    steps.append(f"Require {GATE_CHECK} from this app on each deployment repository's default "
                 "branch: Settings → Rules → Rulesets → New branch ruleset → target the default "
                 "branch → Require status checks to pass → add "
                 f"{GATE_CHECK} with this app ({app.get('slug') or app['id']}, id {app['id']}) as "
                 "its source (or the REST API: integration_id "
                 f"{app['id']}). Conveyor says on every production pull request while it is "
                 "not required, or required from any source.")
    return steps


def build_setup_app(config: SetupConfig) -> web.Application:
    app = web.Application()
    app[_STATE] = SetupState(config)
    app.router.add_get("/", start_page)
    app.router.add_get(DONE_PATH, done_page)
    return app


def setup_state(app: web.Application) -> SetupState:
    return app[_STATE]


async def serve_until_done(config: SetupConfig) -> dict[str, Any] | None:
    """Serve the pages until the app is registered (its data), or Ctrl-C/SIGTERM (None)."""
    return (await serve_setup(config)).app


async def serve_setup(config: SetupConfig) -> SetupState:
    """Serve the pages until the app is registered, or Ctrl-C/SIGTERM (`app` is None)."""
    app = build_setup_app(config)
    state = setup_state(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, state.stopped.set)
            handled.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, not main thread
            pass
    try:
        await web.TCPSite(runner, config.host, config.port).start()
        print(f"Open {config.local_url}/ in your browser to register the GitHub App on "
              f"{config.web_url} (Ctrl-C to stop).", flush=True)
        done = asyncio.ensure_future(state.done.wait())
        stopped = asyncio.ensure_future(state.stopped.wait())
        await asyncio.wait([done, stopped], return_when=asyncio.FIRST_COMPLETED)
        done.cancel()
        stopped.cancel()
        if state.app is not None:
            await asyncio.sleep(0.5)  # let the browser receive the last page
        return state
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await runner.cleanup()


def run(*, host: str, port: int, org: str | None, webhook_url: str | None,
        manifest: Path | None, env_file: Path, force: bool) -> int:
    api_url = checked_api_url(
        merged_environment().get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL,
        "GITHUB_API_URL")
    try:
        check_destination(env_file, force=force)
    except SetupError as exc:
        print(f"conveyor setup: {exc}", file=sys.stderr)
        return 2
    try:
        config = SetupConfig(api_url=api_url, manifest=load_manifest(find_manifest(manifest)),
                             env_file=env_file, host=host, port=port, org=org,
                             webhook_url=webhook_url, force=force)
    except SetupError as exc:
        print(f"conveyor setup: {exc}", file=sys.stderr)
        return 1
    try:
        state = asyncio.run(serve_setup(config))
    except OSError as exc:
        print(f"conveyor setup: cannot listen on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    if state.app is None:
        print("conveyor setup: stopped before the app was registered; nothing was written",
              file=sys.stderr)
        return 1
    if state.saved is None:
        print(f"conveyor setup: the app is registered but its settings are not saved: "
              f"{state.unsaved}", file=sys.stderr)
        return 1
    print("Conveyor is registered:")
    for step in next_steps(config, state.app, state.saved):
        print(f"  - {step}")
    if state.saved.problem is not None:
        print(f"conveyor setup: {state.saved.problem}; the app's settings are in "
              f"{state.saved.path} instead", file=sys.stderr)
        return 1
    return 0
