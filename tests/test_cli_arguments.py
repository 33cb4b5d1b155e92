"""The command line's argument types and exits, in process: a port, host or webhook URL that is
not one is a usage error naming it; no command means `serve`; Ctrl-C exits 130; an empty
`--image` is a reference like any other; a `--log-dir` the log cannot be written in."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bot import __main__ as cli
from bot.sandbox import cli as sandbox_cli
from tests.test_offline import demo_repo


@pytest.mark.parametrize(("text", "message"), [
    ("http", "expected a port number, got 'http'"),
    ("0", "a port is between 1 and 65535, got 0"),
    ("65536", "a port is between 1 and 65535, got 65536"),
])
def test_ports(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cli.port_number(text)
    assert str(refused.value) == message
    assert cli.port_number("3000") == 3000


@pytest.mark.parametrize("text", ["conveyor.example.com/hooks", "ftp://conveyor.example.com/",
                                  "https://:443/x", "https://conveyor.example.com:99999/x"])
def test_webhook_urls(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cli.webhook_url(text)
    assert str(refused.value) == ("expected an http(s) URL such as "
                                  "https://conveyor.example.com/api/github/webhooks, "
                                  f"got {text!r}")
    assert cli.webhook_url("https://conveyor.example.com/api/github/webhooks").startswith("https")


@pytest.mark.parametrize("text", ["a" * 64, "local..host", ".", "\x80"])
def test_listen_hosts_dns_cannot_hold(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cli.listen_host(text)
    assert str(refused.value) == ("expected an address or a host name whose labels are 1 to 63 "
                                  f"characters, got {text!r}")
    for host in ("a" * 63 + ".example.com", "::1", "0.0.0.0", "bücher.example"):
        assert cli.listen_host(host) == host


def test_no_command_serves_and_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[str] = []

    def interrupted() -> int:
        served.append("serve")
        raise KeyboardInterrupt

    monkeypatch.setattr("bot.serving.serve.run_server", interrupted)
    assert cli.main([]) == 130
    assert served == ["serve"]


def test_an_empty_image_is_refused_as_a_reference(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    assert cli.main(["bump", "--repo", str(repo), "--service", "web", "--env", "staging",
                     "--image", ""]) == 1
    assert capsys.readouterr().err == "--image: invalid image reference ''\n"


def test_a_log_dir_the_log_cannot_be_written_in_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "conveyor.log").mkdir()
    assert sandbox_cli.run(log_dir=tmp_path) == 2
    assert capsys.readouterr().err == (f"conveyor sandbox: --log-dir {tmp_path}: "
                                       "Is a directory\n")
