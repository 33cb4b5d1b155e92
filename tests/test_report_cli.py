"""`python -m bot report`: bad input is one line on stderr and exit code 2, nothing printed."""

from __future__ import annotations

import pytest

from bot.__main__ import main


@pytest.mark.parametrize(("args", "message"), [
    (["--repo", "acme"], "conveyor report: --repo: expected OWNER/REPO, got 'acme'"),
    (["--repo", "acme/deploy", "--since", "2w"],
     "conveyor report: --since: invalid duration '2w': use 0 or a number with units d, h, m, "
     "s in that order, such as 45s, 30m, 1h30m or 2d"),
    (["--repo", "acme/deploy", "--since", "0"],
     "conveyor report: --since: must be longer than 0, such as 30d"),
    (["--repo", "acme/deploy"], "conveyor: GITHUB_APP_ID is not set"),
    (["--repo", "acme/deploy", "--api-url", "ghe.example.com/api/v3"],
     "conveyor report: --api-url must be an http(s) URL, got 'ghe.example.com/api/v3'"),
    (["--repo", "acme/deploy", "--api-url", "ftp://ghe.example.com"],
     "conveyor report: --api-url must be an http(s) URL, got 'ftp://ghe.example.com'"),
    (["--repo", "acme/deploy", "--api-url", "https://"],
     "conveyor report: --api-url must be an http(s) URL, got 'https://'"),
    (["--repo", "acme/deploy", "--api-url", "http://ghe.example.com:99999"],
     "conveyor report: --api-url must be an http(s) URL, got 'http://ghe.example.com:99999'"),
])
def test_bad_input_is_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.chdir(str(tmp_path))  # no .env here
    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert main(["report", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0].startswith(message) and len(err.splitlines()) == 1


def test_an_unknown_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["report", "--repo", "acme/deploy", "--format", "xml"])
    assert done.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err
