"""Mermaid export under hostile input (docs/design.md §25): injective ids, escaped labels, one line each."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainwarden.dag import Graph

# The exporter's whole grammar. A label body is plain text (letters and digits of any script, a few
# harmless ASCII marks) or a Mermaid entity code; nothing else may appear between the quotes or pipes.
PLAIN = r"[A-Za-z0-9 .,:!?\-_+*/=@'~^$]|[^\x00-\x7f]"
ENTITY = r"#(?:quot|lt|gt|amp|[0-9]+);"
BODY = rf"(?:{ENTITY}|{PLAIN})*"
NODE = re.compile(rf'N(0|[1-9][0-9]*)\["({BODY})"\]')
EDGE = re.compile(rf"N(0|[1-9][0-9]*) -->\|({BODY})\| N(0|[1-9][0-9]*)")
# Characters that may never appear raw inside a label, whatever script they come from.
FORBIDDEN_RAW = re.compile(r'["\\\[\]{}()<>|`&;%#\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e]')
# Unicode White_Space, the set the exporter collapses (Python's str.split() also splits on \x1c-\x1f).
WHITESPACE = re.compile(r"[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def decode(body: str) -> str:
    named = {"quot": '"', "lt": "<", "gt": ">", "amp": "&"}

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return named[code] if code in named else chr(int(code))

    return re.sub(r"#(quot|lt|gt|amp|[0-9]+);", one, body)


def expected_label(text: str, limit: int) -> str:
    collapsed = " ".join(part for part in WHITESPACE.split(text) if part)
    return collapsed if len(collapsed) <= limit else collapsed[: limit - 3] + "..."


def parse(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str, int]]]:
    """Every line must be exactly one statement of the grammar; returns (nodes, edges) decoded."""
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert lines[0] == "flowchart TD"
    nodes: list[tuple[int, str]] = []
    edges: list[tuple[int, str, int]] = []
    for line in lines[1:]:
        if (m := NODE.fullmatch(line)) is not None:
            assert not FORBIDDEN_RAW.search(re.sub(ENTITY, "", m.group(2))), line
            nodes.append((int(m.group(1)), decode(m.group(2))))
        elif (m := EDGE.fullmatch(line)) is not None:
            assert not FORBIDDEN_RAW.search(re.sub(ENTITY, "", m.group(2))), line
            edges.append((int(m.group(1)), decode(m.group(2)), int(m.group(3))))
        else:
            raise AssertionError(f"not a statement of the exporter's grammar: {line!r}")
    return nodes, edges


def test_issue_examples_cannot_inject_or_collide() -> None:
    g = Graph()
    hostile = [
        ("a-b", 'x"]\nN_injected["owned'),
        ("ab", 'click N0 "javascript:alert(1)"'),
        ("a b", "<img src=x onerror=alert(1)>"),
        ("a_b", "ends with a backslash \\"),
        ("é", "style N1 fill:#f00;"),
        ("ü", "%%{init: {'theme':'dark'}}%%"),
        ("x", "classDef evil fill:#f00\nclass N0 evil"),
    ]
    with g.mutate() as m:
        for node_id, content in hostile:
            m.create_node("user_message", "finished", content=content, node_id=node_id)
        m.create_edge("a-b", "ab", "sequence", edge_id="e1")
        m.create_edge("é", "ü", "branch", edge_id="e2", metadata={"branch_kinds": ['|> N9\nclick N0 "x"']})
    text = g.to_mermaid(max_label_chars=200)
    nodes, edges = parse(text)
    ids = [n for n, _ in nodes]
    assert len(set(ids)) == len(ids) == len(g.nodes())
    for line in text.splitlines():
        assert not line.startswith(("click", "style", "classDef", "class ", "%%", "N_injected"))
    assert "javascript:alert#40;1#41;" in text  # kept as text, inside its label
    by_id = {node["node_id"]: i for i, node in enumerate(sorted(g.nodes(), key=lambda n: n["node_id"]))}
    number = {node_id: ids[i] for node_id, i in by_id.items()}
    assert (number["a-b"], "sequence", number["ab"]) in edges
    assert (number["é"], 'branch:|> N9 click N0 "x"', number["ü"]) in edges
    label = dict(nodes)[number["a_b"]]
    assert label == "user_message:finished ends with a backslash \\"


def test_ids_follow_creation_order_and_are_stable_across_views() -> None:
    g = Graph()
    with g.mutate() as m:
        for node_id in ("z", "m", "a"):
            m.create_node("agent_message", "finished", content=node_id, node_id=node_id)
        m.create_edge("z", "m", "sequence")
    active, _ = parse(g.to_mermaid())
    assert active == [
        (2, "agent_message:finished a"),
        (1, "agent_message:finished m"),
        (0, "agent_message:finished z"),
    ]
    g.compress(["z"], "sum", node_id="s")
    nodes, _ = parse(g.to_mermaid(include_compressed=True))
    assert (0, "agent_message:finished z") in nodes and (3, "summary:finished sum") in nodes
    assert [n for n, _ in parse(g.to_mermaid())[0]] == [2, 1, 3]


IDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
EDGE_TYPES = st.sampled_from(["sequence", "dependency", "branch"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ids=st.lists(IDS, min_size=1, max_size=8, unique=True),
    labels=st.lists(TEXT, min_size=8, max_size=8),
    kinds=st.lists(TEXT, max_size=3),
    links=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), EDGE_TYPES)),
    limit=st.integers(3, 90),
    archived=st.booleans(),
)
def test_hostile_labels_and_ids(  # noqa: PLR0917 - hypothesis passes the drawn values by keyword
    ids: list[str],
    labels: list[str],
    kinds: list[str],
    links: list[tuple[int, int, str]],
    limit: int,
    archived: bool,
) -> None:
    g = Graph()
    types = ["user_message", "task", "agent_message"]
    with g.mutate() as m:
        for i, node_id in enumerate(ids):
            node_type = types[i % 3]
            if node_type == "user_message":
                m.create_node(node_type, "finished", content=labels[i], node_id=node_id)
            elif node_type == "task":
                m.create_node(node_type, input={"name": labels[i]}, node_id=node_id)
            else:
                m.create_node(node_type, "finished", content=labels[i], node_id=node_id)
        for a, b, edge_type in links:
            if a < b < len(ids):  # forward edges only: acyclic by construction
                m.create_edge(ids[a], ids[b], edge_type, metadata={"branch_kinds": kinds})
    # Exercise the audit view with an archived agent leaf replaced by a new version.
    third_is_leaf = len(ids) > 3 and not any(
        e["from_node_id"] == ids[2] and e["edge_type"] != "branch" for e in g.edges()
    )
    if archived and third_is_leaf and g.node(ids[2])["state"] == "finished":
        with g.mutate() as m:
            m.regenerate(ids[2])
    text = g.to_mermaid(include_compressed=archived, max_label_chars=limit)
    nodes, edges = parse(text)
    shown = sorted(g.nodes(include_compressed=archived), key=lambda n: n["node_id"])
    assert len(nodes) == len(shown)
    numbers = [n for n, _ in nodes]
    assert len(set(numbers)) == len(numbers)  # injective
    number = {node["node_id"]: numbers[i] for i, node in enumerate(shown)}
    for (_, label), node in zip(nodes, shown, strict=True):
        if node["node_type"] == "task":
            snippet = node["input"].get("name", "")
        elif node["node_type"] == "user_message":
            snippet = node["input"]["content"]
        else:
            snippet = node["output_preview"].get("content", "")
        assert label == expected_label(f"{node['node_type']}:{node['state']} {snippet}", limit)
    shown_edges = sorted(g.edges(include_compressed=archived), key=lambda e: e["edge_id"])
    assert len(edges) == len(shown_edges)
    for (a, label, b), edge in zip(edges, shown_edges, strict=True):
        assert (a, b) == (number[edge["from_node_id"]], number[edge["to_node_id"]])
        kinds_meta = edge["metadata"].get("branch_kinds")
        if edge["edge_type"] != "branch":
            want = edge["edge_type"]
        elif kinds_meta:
            want = "branch:" + ",".join(kinds_meta)
        else:
            want = "branch"
        assert label == expected_label(want, 10**9)
