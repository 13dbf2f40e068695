"""The `chainwarden` command as a user runs it: a real process, real pipes, real exit statuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainwarden import __version__
from chainwarden.cli import EXIT_BROKEN_PIPE, main

CMD = [sys.executable, "-m", "chainwarden"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=60, check=False)


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    done = run("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"chainwarden {__version__}\n", "")
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == f"chainwarden {__version__}\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), "Look at a saved run with `inspect`"),
        (("demo",), "Deterministic and offline"),
        (("inspect",), "amplification factors, the slowest and the most"),
        (("render",), "The HTML file needs no network to view"),
    ],
)
def test_every_command_has_real_help(
    args: tuple[str, ...], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "--help"]) == 0
    assert expected in " ".join(capsys.readouterr().out.split())


def test_closed_pipe_ends_quietly_with_the_sigpipe_status() -> None:
    """The reader is gone before the first write: no traceback, the status `cat` would give (128 + 13)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*CMD, "demo"], stdout=write_end, stderr=subprocess.PIPE, timeout=60, check=False
        )
    finally:
        os.close(write_end)
    assert done.returncode == EXIT_BROKEN_PIPE
    assert done.stderr == b""


def test_demo_into_head_shows_three_lines_and_no_traceback() -> None:
    done = subprocess.run(
        ["bash", "-c", '"$0" -m chainwarden demo | head -3; echo "status=${PIPESTATUS[0]}"', sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "== call graph (ExecutionGraph) =="
    assert len(lines) == 4
    assert lines[3] in ("status=0", f"status={EXIT_BROKEN_PIPE}")  # 0 when all output fit in the pipe
    assert done.stderr == ""


def test_usage_errors_exit_2_and_name_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "missing.json" in err and "does not exist" in err
    assert main(["render", str(tmp_path), "--format", "svg"]) == 2
    assert "'svg' is not one of 'html', 'mermaid'" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
    assert "No such command 'frobnicate'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'{"hello": 1}', "is not a chainwarden run"),
        (b'{"format": "chainwarden.dag", "nodes": [{"state": "x"}]}', "malformed run file"),
        (b'{"nodes": {"a": {"node_id": "a", "cost_usd": 1e999}}, "root_id": "a", "aggregates": []}', ""),
        (b"\xff\xfe", "is not JSON"),
    ],
)
def test_a_file_that_is_not_a_run_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for command in (["inspect"], ["render", "--format", "mermaid"]):
        code = main([*command, str(bad)])
        out, err = capsys.readouterr()
        if not message:  # odd but readable: summarized, never a crash
            assert code == 0, err
            continue
        assert (code, out) == (1, "")
        assert message in err and str(bad) in err


def test_a_bad_file_from_the_shell_gives_one_line_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"[1, 2]")
    done = run("inspect", str(bad))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Error: {bad}: expected a JSON object, got list\n"


def test_main_reports_the_missing_cli_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without click (installed by the `cli` extra) the command says what to install."""
    monkeypatch.setitem(sys.modules, "click", None)  # makes `import click` raise ImportError
    monkeypatch.delitem(sys.modules, "chainwarden.cli.app", raising=False)
    assert main(["--version"]) == 1
    assert "pip install 'chainwarden[cli]'" in capsys.readouterr().err
