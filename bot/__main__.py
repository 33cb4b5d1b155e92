"""Command line: serve, sandbox, check-config, bump, receive, setup, report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from bot.runtime.settings import SettingsError


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line (and exit 2, as argparse does), pointing at --help."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"a port is between 1 and 65535, got {port}")
    return port


def listen_host(text: str) -> str:
    """An address or a host name that DNS can hold; the resolver refuses a longer label with a
    UnicodeError only once the page starts."""
    try:
        text.encode("idna")
    except UnicodeError:
        raise argparse.ArgumentTypeError(
            f"expected an address or a host name whose labels are 1 to 63 characters, "
            f"got {text!r}") from None
    return text


def webhook_url(text: str) -> str:
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"expected an http(s) URL such as https://conveyor.example.com/api/github/webhooks, "
            f"got {text!r}")
    return text


def log_folder(text: str) -> Path:
    """An existing folder, or a new one whose parent exists (it is created)."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    if not path.exists() and not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent}: no such folder")
    return path


def _serve(_args: argparse.Namespace) -> int:
    from bot.serving.serve import run_server

    return run_server()


def _receive(args: argparse.Namespace) -> int:
    from bot.cli.receive import run

    return run(args.event, args.payload, args.url)


def _sandbox(args: argparse.Namespace) -> int:
    if args.config is not None and not args.config.is_file():
        what = ("a folder, not a policy file" if args.config.is_dir()
                else "not a regular file" if args.config.exists() else "no such file")
        print(f"{args.config}: {what}", file=sys.stderr)
        return 1
    from bot.sandbox.cli import run

    return run(config=args.config, keep=args.keep, log_dir=args.log_dir,
               service=args.service, to=args.to)


def _setup(args: argparse.Namespace) -> int:
    from bot.cli.setup_flow import run

    return run(host=args.host, port=args.port, org=args.org, webhook_url=args.webhook_url,
               manifest=args.manifest, env_file=args.env_file, force=args.force)


def _check_config(args: argparse.Namespace) -> int:
    from bot.cli.offline import check_config

    return check_config(args.file, args.repo)


def _bump(args: argparse.Namespace) -> int:
    from bot.cli.bump import bump

    return bump(args.repo, args.service, args.env,
                args.image if args.image is not None else args.chart,
                write=args.write, chart=args.chart is not None)


def _report(args: argparse.Namespace) -> int:
    from bot.cli.report import run

    return run(args.repo, args.since, args.format, args.api_url)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="conveyor", description="Conveyor: GitOps promotions through pull requests."
    )
    commands = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    serve = commands.add_parser("serve", help="run the webhook server (the default)")
    serve.set_defaults(func=_serve)

    sandbox = commands.add_parser(
        "sandbox",
        help="play a release → staging → production story against the bundled GitHub emulator",
    )
    sandbox.add_argument("--config", type=Path, metavar="FILE",
                         help="your .github/conveyor.yml; the files it names are read from "
                              "its repository (the folder holding .github/, else its folder)")
    sandbox.add_argument("--service", metavar="NAME",
                         help="the service to release (default: the policy's first)")
    sandbox.add_argument("--to", metavar="ENV",
                         help="promote through every gated environment up to ENV (default: "
                              "the first gated environment after the entry one)")
    sandbox.add_argument("--keep", action="store_true",
                         help="leave the emulator and the bot running after the story")
    sandbox.add_argument("--log-dir", type=log_folder, metavar="DIR",
                         help="where to write the bot's log (default: a new temporary folder)")
    sandbox.set_defaults(func=_sandbox)

    setup = commands.add_parser(
        "setup", help="register the GitHub App from app-manifest.yml and write .env"
    )
    setup.add_argument("--host", type=listen_host, default="127.0.0.1",
                       help="address of the local page")
    setup.add_argument("--port", type=port_number, default=3000, help="port of the local page")
    setup.add_argument("--org", help="register the app in this organisation (default: your user)")
    setup.add_argument("--webhook-url", type=webhook_url,
                       help="public URL of your server's /api/github/webhooks (changeable later)")
    setup.add_argument("--manifest", type=Path, metavar="FILE",
                       help="the app manifest (default: ./app-manifest.yml, else the checkout's)")
    setup.add_argument("--env-file", type=Path, default=Path(".env"), metavar="FILE",
                       help="where to write the settings (default: ./.env)")
    setup.add_argument("--force", action="store_true", help="overwrite an existing .env")
    setup.set_defaults(func=_setup)

    receive = commands.add_parser(
        "receive", help="sign a saved webhook payload and send it to a running server"
    )
    receive.add_argument("-e", "--event", required=True, help="the X-GitHub-Event name")
    receive.add_argument("-p", "--payload", required=True, help="a JSON payload file")
    receive.add_argument(
        "--url", help="webhook URL (default: http://127.0.0.1:$PORT/api/github/webhooks)"
    )
    receive.set_defaults(func=_receive)

    check = commands.add_parser(
        "check-config",
        help="validate a .github/conveyor.yml, and the files it names in its repository")
    check.add_argument("file", nargs="?", metavar="FILE",
                       help="the policy (default with --repo: DIR/.github/conveyor.yml)")
    check.add_argument("--repo", metavar="DIR",
                       help="the deployment repository's folder (default: the folder holding "
                            "the .github/ folder the policy is in, if it is in one)")
    check.set_defaults(func=_check_config)

    bump = commands.add_parser(
        "bump", help="apply one promotion to a local deployment repo and print the diff"
    )
    bump.add_argument("--repo", required=True, help="folder holding the deployment repo's files")
    bump.add_argument("--service", required=True)
    bump.add_argument("--env", required=True)
    shipped = bump.add_mutually_exclusive_group(required=True)
    shipped.add_argument("--image", help="NAME:TAG@sha256:DIGEST")
    shipped.add_argument("--chart", help="a Helm chart service's NAME:VERSION@sha256:DIGEST")
    bump.add_argument("--write", action="store_true", help="also change the file")
    bump.set_defaults(func=_bump)

    report = commands.add_parser(
        "report", help="print the delivery metrics of a deployment repository, from GitHub")
    report.add_argument("--repo", required=True, metavar="OWNER/REPO")
    report.add_argument("--since", default="30d", metavar="DURATION",
                        help="the window, ending now (default: 30d)")
    report.add_argument("--format", choices=("md", "json", "csv"), default="md")
    report.add_argument("--api-url", metavar="URL",
                        help="the REST API (default: GITHUB_API_URL, else GitHub's); the "
                             "sandbox's with --keep")
    report.set_defaults(func=_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["serve"])
    try:
        return int(args.func(args))
    except SettingsError as exc:
        print(f"conveyor: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
