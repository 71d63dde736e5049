"""A strict reader of the DOT subset refc writes (vertices, edges, subgraphs, ranks),
so that tests can check what a picture contains without Graphviz."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ID = r'"((?:[^"\\]|\\.)*)"'
_VERTEX = re.compile(rf"^{_ID} \[(.*)\];$")
_EDGE = re.compile(rf"^{_ID} -> {_ID} \[(.*)\];$")
_SUBGRAPH = re.compile(rf"^subgraph {_ID} {{$")
_RANK = re.compile(r"^\{rank=(\w+); (.*)\}$")


@dataclass
class Picture:
    vertices: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, set[str]] = field(default_factory=dict)  # subgraph id -> vertex ids inside
    ranks: list[tuple[str, list[str]]] = field(default_factory=list)

    def edges_between(self, a: str, b: str) -> list[dict[str, str]]:
        return [attrs for s, d, attrs in self.edges if (s, d) == (a, b)]


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], text)


def attrs(text: str) -> dict[str, str]:
    """``k="v", k=<html>`` -> dict; HTML labels keep their markup."""
    out: dict[str, str] = {}
    i = 0
    while i < len(text):
        m = re.compile(r'\s*(\w+)=').match(text, i)
        assert m, f"cannot read attributes at {text[i:]!r}"
        key, i = m[1], m.end()
        if text[i] == '"':
            v = re.compile(_ID).match(text, i)
            assert v
            out[key], i = _unescape(v[1]), v.end()
        else:
            assert text[i] == "<", text[i:]
            depth, j = 0, i
            while True:
                depth += {"<": 1, ">": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            out[key], i = text[i + 1 : j - 1], j
        if text.startswith(",", i):
            i += 1
    return out


def read(text: str) -> Picture:
    lines = text.splitlines()
    assert lines[0].startswith("digraph ") and lines[0].endswith("{") and lines[-1] == "}"
    pic = Picture()
    open_clusters: list[str] = []
    for raw in lines[1:-1]:
        line = raw.strip()
        if m := _EDGE.match(line):
            pic.edges.append((_unescape(m[1]), _unescape(m[2]), attrs(m[3])))
        elif m := _VERTEX.match(line):
            ident = _unescape(m[1])
            pic.vertices[ident] = attrs(m[2])
            for c in open_clusters:
                pic.clusters[c].add(ident)
        elif m := _SUBGRAPH.match(line):
            open_clusters.append(_unescape(m[1]))
            pic.clusters[open_clusters[-1]] = set()
        elif line == "}":
            open_clusters.pop()
        elif m := _RANK.match(line):
            pic.ranks.append((m[1], [_unescape(x) for x in re.findall(_ID, m[2])]))
        else:
            assert re.match(r"^(graph|node|edge) \[.*\];$", line), line
    assert not open_clusters
    for s, d, _ in pic.edges:
        assert s in pic.vertices and d in pic.vertices, (s, d)
    return pic
