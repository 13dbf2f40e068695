"""`chainwarden render`: Mermaid and HTML output is valid and escapes every user string."""

from __future__ import annotations

import base64
import json
import re
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from run_fixtures import HOSTILE, save_containment_run, save_dag_run, save_graph_run

from chainwarden.cli import main
from chainwarden.cli.mermaid import mermaid_label
from chainwarden.dag import Graph


def render(path: Path, fmt: str, out: Path) -> str:
    assert main(["render", str(path), "--format", fmt, "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_mermaid_call_tree_has_generated_ids_and_escaped_labels(tmp_path: Path) -> None:
    g, path = save_graph_run(tmp_path / "run.json")
    text = render(path, "mermaid", tmp_path / "run.mmd")
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    nodes = [line for line in lines if re.match(r"^N\d+\[", line)]
    assert len(nodes) == len(g)
    for line in nodes:
        label = re.fullmatch(r'N\d+\["(.*)"\]', line)
        assert label is not None, line
        assert not set(label.group(1).replace("<br/>", "")) & set('"<>`'), line
    assert mermaid_label(HOSTILE) in text
    assert "#lt;script#gt;alert#40;#quot;x#quot;#41;#lt;/script#gt; #35;1 #amp; #96;tick#96;" in text
    edges = [line for line in lines if " --> " in line]
    assert len(edges) == len(g) - 1  # a tree: one edge per non-root node
    assert re.search(r"^class N\d+,N\d+ stopped$", text, re.M)  # the failed and the halted call


@given(st.text())
def test_mermaid_label_never_leaks_syntax(text: str) -> None:
    label = mermaid_label(text)
    assert not set(label) & set('"<>`\n\r[]|{}()')
    # bounded: at most 80 code points, each escaped to at most `#1114111;`
    assert len(label) <= 80 * len("#1114111;")
    # the DAG export labels a node by the same rule
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content=text)
    exported = g.to_mermaid(max_label_chars=80).splitlines()[1]
    assert exported == f'N0["{mermaid_label("user_message:finished " + text)}"]'


def test_dag_mermaid_is_the_engines_own_export(tmp_path: Path) -> None:
    _, path = save_dag_run(tmp_path / "dag.json")
    assert render(path, "mermaid", tmp_path / "dag.mmd") == Graph.from_json(path.read_bytes()).to_mermaid()


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []  # executable scripts (no type, or a JavaScript type)
        self.data_blocks: list[str] = []  # <script type="application/octet-stream">: data, never run
        self.urls: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self._current: list[str] = self.scripts

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                self.urls.append(value)
        if tag == "script":
            kind = dict(attrs).get("type")
            self._current = self.scripts if kind in (None, "", "text/javascript") else self.data_blocks
            self._current.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self._current[-1] += data
        else:
            self.text.append(data)


@pytest.mark.parametrize("kind", ["graph", "containment", "dag"])
def test_html_is_self_contained_and_escaped(tmp_path: Path, kind: str) -> None:
    if kind == "graph":
        path = save_graph_run(tmp_path / "run.json")[1]
    elif kind == "containment":
        path = save_containment_run(tmp_path / "run.json")
    else:
        path = save_dag_run(tmp_path / "run.json")[1]
    html = render(path, "html", tmp_path / "report.html")
    parsed = _Collect()
    parsed.feed(html)
    assert len(parsed.scripts) == 1  # only the report's own script; no user string became a tag
    [data] = parsed.data_blocks  # the calls, compressed: base64 only, so it cannot close its element
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", data)
    assert parsed.urls == []  # nothing to fetch: no src=, no href=
    assert "default-src 'none'" in html
    assert "<script>alert" not in html
    if kind == "graph":
        assert HOSTILE in "".join(parsed.text)  # shown as text once unescaped by the parser


def test_the_report_data_carries_every_call_and_its_context(tmp_path: Path) -> None:
    g, path = save_graph_run(tmp_path / "run.json")
    html = render(path, "html", tmp_path / "report.html")
    payload = re.search(r'<script type="application/octet-stream" id="run-data">([^<]*)</script>', html)
    assert payload is not None
    doc = json.loads(zlib.decompress(base64.b64decode(payload.group(1))))
    names = [doc["strings"][k] for k in doc["name"]]
    assert names == [n["name"] for n in g.snapshot()["nodes"].values()]
    assert doc["id"] == list(g.snapshot()["nodes"])
    assert [doc["id"][p] if p >= 0 else None for p in doc["parent"]] == [
        n["parent_id"] for n in g.snapshot()["nodes"].values()
    ]
    stopped = {doc["strings"][k] for k in doc["reason"] if k >= 0}
    assert stopped == {"TimeoutError: metrics backend timed out", "budget_exceeded"}


def test_render_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, path = save_graph_run(tmp_path / "run.json")
    assert main(["render", str(path), "--format", "mermaid"]) == 0
    assert capsys.readouterr().out.startswith("flowchart TD\n")


def test_render_into_a_missing_directory_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = save_graph_run(tmp_path / "run.json")
    assert main(["render", str(path), "-o", str(tmp_path / "no" / "such" / "dir.html")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_render_refuses_to_write_over_its_own_run_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved run is the only copy of what happened: `render run.json -o run.json` used to replace it
    with its report and exit 0."""
    _, path = save_graph_run(tmp_path / "run.json")
    saved = path.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(path)
    monkeypatch.chdir(tmp_path)
    for output in (str(path), "run.json", "./sub/../run.json", str(link)):
        (tmp_path / "sub").mkdir(exist_ok=True)
        assert main(["render", str(path), "-o", output]) == 2, output
        assert "is the run file itself" in capsys.readouterr().err
        assert path.read_bytes() == saved
    assert main(["render", "run.json", "-o", "report.html"]) == 0
    assert (tmp_path / "report.html").read_text(encoding="utf-8").lower().startswith("<!doctype html>")
