"""Command line: serve, sandbox, check-config, bump, receive, setup."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .settings import SettingsError


def _serve(_args: argparse.Namespace) -> int:
    from .serve import run_server

    return run_server()


def _receive(args: argparse.Namespace) -> int:
    from .receive import run

    return run(args.event, args.payload, args.url)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conveyor", description="Conveyor: GitOps promotions through pull requests."
    )
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the webhook server (the default)")
    serve.set_defaults(func=_serve)

    receive = commands.add_parser(
        "receive", help="sign a saved webhook payload and send it to a running server"
    )
    receive.add_argument("-e", "--event", required=True, help="the X-GitHub-Event name")
    receive.add_argument("-p", "--payload", required=True, help="a JSON payload file")
    receive.add_argument(
        "--url", help="webhook URL (default: http://127.0.0.1:$PORT/api/github/webhooks)"
    )
    receive.set_defaults(func=_receive)
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
