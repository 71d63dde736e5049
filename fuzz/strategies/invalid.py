"""``invalid_graphs(invariant)``: a valid graph from ``graphs()`` plus one
small edit that breaks exactly that invariant (one of ``REJECTABLE``);
``broken(graph, invariant, edit)``: the given graph with the given edit
(``edit_count(invariant)`` of them), for a campaign that picks the edit."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from specs import OPS, Dtype, OpKind

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

from fuzz.strategies.builder import F32, I32, MAX_DIM, MAX_RANK, MAX_SEED
from fuzz.strategies.draws import Draws, HypothesisDraws
from fuzz.strategies.valid import build_graph

__all__ = ["REJECTABLE", "broken", "break_graph", "edit_count", "invalid_graphs"]

# Invariants ``invalid_graphs`` can break, each with one small edit.
REJECTABLE = ("G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4")


def invalid_graphs(invariant: str, *, max_nodes: int = 8) -> st.SearchStrategy[Graph]:
    """Graphs that break exactly ``invariant`` (one of ``REJECTABLE``): a valid
    graph from ``graphs()`` plus one small edit. Every such graph loads through
    ``graph_from_doc`` (every name resolves), so it can be a corpus case."""
    if invariant not in REJECTABLE:
        raise InvalidArgument(f"invariant must be one of {', '.join(REJECTABLE)}, got {invariant!r}")
    return _invalid(invariant, max_nodes)


@st.composite
def _invalid(draw: Callable, invariant: str, max_nodes: int) -> Graph:
    # the flavour first: a choice drawn after a whole graph leans towards its
    # first option (Hypothesis replays parts of earlier examples, and a choice
    # that no longer fits becomes the simplest one); each flavour gets its share
    d = HypothesisDraws(draw)
    breaker = d.choice(_BREAKERS[invariant])
    graph = build_graph(d, max_nodes=max_nodes)
    return breaker(_Editor(d, graph))


def edit_count(invariant: str) -> int:
    """How many edits break ``invariant`` (one of ``REJECTABLE``)."""
    return len(_BREAKERS[invariant])


@st.composite
def broken(draw: Callable, graph: Graph, invariant: str, edit: int) -> Graph:
    """``graph`` (valid) with edit number ``edit`` of ``invariant``: breaks
    exactly that invariant. What the edit adds (shapes, seeds, which existing
    storage it uses) is drawn."""
    return break_graph(HypothesisDraws(draw), graph, invariant, edit)


def break_graph(d: Draws, graph: Graph, invariant: str, edit: int) -> Graph:
    """``broken``'s graph, its choices made by ``d``."""
    return _BREAKERS[invariant][edit](_Editor(d, graph))


class _Editor:
    """Adds storage and nodes with fresh names to a valid graph."""

    def __init__(self, draws: Draws, graph: Graph):
        self.draws = draws
        self.graph = graph
        self.storage = list(graph.storage)
        self.nodes = list(graph.nodes)
        self.count = 0

    def name(self, base: str) -> str:
        taken = {s.name for s in self.storage} | {n.name for n in self.nodes}
        while True:
            self.count += 1
            name = f"{base}{self.count}"
            if name not in taken:
                return name

    def shape(self) -> tuple[int, ...]:
        return tuple(self.draws.list_of(lambda: self.draws.integer(1, MAX_DIM), 1, MAX_RANK))

    def state_shape(self) -> tuple[int, ...]:
        """A shape for storage an edit may use as state: often ``[2]``, which
        fits either state operand of a quantization profile (``_state_user``)."""
        return (2,) if self.draws.boolean() else self.shape()

    def storage_of(self, kind: StorageKind, shape: tuple[int, ...], dtype: Dtype = F32, *, owner: str | None = None) -> str:
        init = Init(seed=self.draws.integer(0, MAX_SEED))
        s = Storage(name=self.name({StorageKind.PLACEHOLDER: "bad_p", StorageKind.CONSTANT: "bad_c", StorageKind.OWNED: "bad_o"}[kind]),
                    kind=kind, dtype=dtype, shape=shape, init=init, owner=owner)
        self.storage.append(s)
        return s.name

    def node(self, op: OpKind, inputs: Iterable[Ref | str], *, state: tuple[str, ...] = (), attrs: dict[str, object] | None = None, name: str | None = None) -> str:
        refs = tuple(r if isinstance(r, Ref) else Ref(r) for r in inputs)
        node = Node(name=name or self.name("bad"), op=op, inputs=refs, state=state, attrs=freeze_attrs(attrs or {}))
        self.nodes.append(node)
        return node.name

    def existing(self, want: Callable[[Storage], bool]) -> Storage | None:
        cands = [s for s in self.storage if want(s)]
        if not cands or not self.draws.boolean():
            return None
        return self.draws.choice(cands)

    def result(self) -> Graph:
        return replace(self.graph, storage=tuple(self.storage), nodes=tuple(self.nodes))


def _g1_cycle(e: _Editor) -> Graph:
    a, b = e.name("bad"), e.name("bad")
    if e.draws.boolean():
        e.node(OpKind.NEG, [a], name=a)  # reads itself
    else:
        e.node(OpKind.NEG, [b], name=a)
        e.node(OpKind.NEG, [a], name=b)
    return e.result()


def _g1_arity(e: _Editor) -> Graph:
    """One input too few or too many, for a unary or a binary op."""
    shape = e.shape()
    op, want = e.draws.choice([(OpKind.ADD, 2), (OpKind.RELU, 1)])
    count = want - 1 if want > 1 and e.draws.boolean() else want + 1
    e.node(op, [e.storage_of(StorageKind.PLACEHOLDER, shape) for _ in range(count)])
    return e.result()


def _g1_shape(e: _Editor) -> Graph:
    """Inputs whose shapes do not fit: one of a binary op's two, or one of a
    concat's two or three (a dimension off the axis), at a drawn position."""
    d = e.draws.integer(2, MAX_DIM)
    if e.draws.boolean():
        op, fits, odd, n = e.draws.choice([OpKind.ADD, OpKind.MUL, OpKind.ADD_SUB]), (d,), (d + 1,), 2
    else:
        op, fits, odd, n = OpKind.CONCAT, (2, d), (2, d + 1), e.draws.integer(2, 3)
    inputs = [e.storage_of(StorageKind.PLACEHOLDER, fits) for _ in range(n - 1)]
    inputs.insert(e.draws.integer(0, n - 1), e.storage_of(StorageKind.PLACEHOLDER, odd))
    e.node(op, inputs)
    return e.result()


def _g1_dtype(e: _Editor) -> Graph:
    shape = e.shape()
    ids = e.storage_of(StorageKind.PLACEHOLDER, shape, I32)
    if e.draws.boolean():
        e.node(e.draws.choice([OpKind.RELU, OpKind.EXP, OpKind.REDUCE_SUM]), [ids])
    else:  # beside a float input, at either position
        x = e.storage_of(StorageKind.PLACEHOLDER, shape)
        e.node(e.draws.choice([OpKind.ADD, OpKind.MUL]), [ids, x] if e.draws.boolean() else [x, ids])
    return e.result()


def _g1_attr(e: _Editor) -> Graph:
    x = e.storage_of(StorageKind.PLACEHOLDER, e.shape())
    size = e.storage[-1].size
    if e.draws.boolean():
        e.node(OpKind.RESHAPE, [x], attrs={"shape": [size + 1]})
    else:
        e.node(OpKind.ROLL, [x], attrs={"shift": 2})  # roll has no attributes
    return e.result()


def _g1_save_type(e: _Editor) -> Graph:
    """A save whose value differs from its target in shape, or in dtype alone
    (so that a check comparing shapes only misses some)."""
    shape = e.shape()
    if e.draws.boolean():
        x = e.storage_of(StorageKind.PLACEHOLDER, shape)
        target = e.storage_of(StorageKind.PLACEHOLDER, shape + (2,))
    else:
        x, target = e.draws.choice([
            (e.storage_of(StorageKind.PLACEHOLDER, shape, I32), e.storage_of(StorageKind.PLACEHOLDER, shape)),
            (e.storage_of(StorageKind.PLACEHOLDER, shape), e.storage_of(StorageKind.PLACEHOLDER, shape, I32)),
        ])
    e.node(OpKind.SAVE, [x], attrs={"target": target})
    return e.result()


def _g1_state_dtype(e: _Editor) -> Graph:
    """An accumulate whose own state is int32 (state is float32): only G-1 is broken."""
    shape = e.shape()
    name = e.name("bad_acc")
    acc = e.storage_of(StorageKind.OWNED, shape, I32, owner=name)
    e.node(OpKind.ACCUMULATE, [e.storage_of(StorageKind.PLACEHOLDER, shape)], state=(acc,), name=name)
    return e.result()


def _g1_result_index(e: _Editor) -> Graph:
    producers = [n for n in e.nodes if OPS[n.op].results]
    if not producers:
        return _g1_arity(e)
    n = e.draws.choice(producers)
    # the first index past the end, or one further (a check off by one misses the first)
    e.node(OpKind.IDENTITY, [Ref(n.name, len(OPS[n.op].results) + e.draws.integer(0, 1))])
    return e.result()


def _own1_orphan(e: _Editor) -> Graph:
    e.storage_of(StorageKind.OWNED, e.shape(), owner=None)
    return e.result()


def _own1_unlisted(e: _Editor) -> Graph:
    if not e.nodes:
        return _own1_orphan(e)
    owner = e.draws.choice(e.nodes).name
    e.storage_of(StorageKind.OWNED, e.shape(), owner=owner)
    return e.result()


def _an_owned(e: _Editor) -> Storage:
    """An owned variable of the graph, or a fresh accumulate that owns one."""
    owned = e.existing(lambda s: s.kind is StorageKind.OWNED)
    if owned is not None:
        return owned
    shape = e.state_shape()
    x = e.storage_of(StorageKind.PLACEHOLDER, shape)
    name = e.name("bad_acc")
    acc = e.storage_of(StorageKind.OWNED, shape, owner=name)
    e.node(OpKind.ACCUMULATE, [x], state=(acc,), name=name)
    return e.storage[[s.name for s in e.storage].index(acc)]


def _reader(e: _Editor, bad: Storage) -> None:
    """A new node reading ``bad`` as a data input: its only one, or at a drawn
    position among a binary or a variadic op's inputs (the others fresh
    placeholders of its type), so that a check that looks at one input only
    misses some of them."""
    form = e.draws.integer(0, 2 if bad.shape else 1)  # concat needs a dimension
    if form == 0:
        e.node(OpKind.IDENTITY, [bad.name])
        return
    n = 2 if form == 1 else e.draws.integer(2, 3)
    others = [e.storage_of(StorageKind.PLACEHOLDER, bad.shape, bad.dtype) for _ in range(n - 1)]
    at = e.draws.integer(0, n - 1)
    op = e.draws.choice([OpKind.ADD, OpKind.MUL]) if form == 1 else OpKind.CONCAT
    e.node(op, [*others[:at], bad.name, *others[at:]])


def _state_user(e: _Editor, bad: Storage) -> None:
    """A new node using ``bad`` as state: an accumulate's only one, or, when
    ``bad``'s type fits, either of a quantization profile's two (the other its
    own fresh owned variable), so that a check that looks at one state operand
    only misses some of them."""
    minmax, hist = bad.shape == (2,), len(bad.shape) == 1
    assert bad.dtype is F32, bad  # every caller passes float32 storage, as all state is
    if not hist or e.draws.integer(0, 3) == 0:  # mostly a profile where one fits
        e.node(OpKind.ACCUMULATE, [e.storage_of(StorageKind.PLACEHOLDER, bad.shape)], state=(bad.name,))
        return
    name = e.name("bad_profile")
    if minmax and e.draws.boolean():
        state = (bad.name, e.storage_of(StorageKind.OWNED, (e.draws.integer(1, MAX_DIM),), owner=name))
    else:
        state = (e.storage_of(StorageKind.OWNED, (2,), owner=name), bad.name)
    e.node(OpKind.QUANTIZATION_PROFILE, [e.storage_of(StorageKind.PLACEHOLDER, e.shape())], state=state, name=name)


def _own2_read(e: _Editor) -> Graph:
    _reader(e, _an_owned(e))
    return e.result()


def _own2_save(e: _Editor) -> Graph:
    owned = _an_owned(e)
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, owned.shape)], attrs={"target": owned.name})
    return e.result()


def _own2_foreign_state(e: _Editor) -> Graph:
    _state_user(e, _an_owned(e))
    return e.result()


def _a_constant(e: _Editor) -> Storage:
    c = e.existing(lambda s: s.kind is StorageKind.CONSTANT and s.dtype is F32)
    if c is not None:
        return c
    name = e.storage_of(StorageKind.CONSTANT, e.state_shape())
    return e.storage[-1] if e.storage[-1].name == name else next(s for s in e.storage if s.name == name)


def _own3_save(e: _Editor) -> Graph:
    c = _a_constant(e)
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, c.shape)], attrs={"target": c.name})
    return e.result()


def _own3_state(e: _Editor) -> Graph:
    _state_user(e, _a_constant(e))
    return e.result()


def _own4_two_saves(e: _Editor) -> Graph:
    saved = {n.target for n in e.nodes if n.op is OpKind.SAVE}
    p = e.existing(lambda s: s.name in saved and s.kind is StorageKind.PLACEHOLDER and s.dtype is F32)
    if p is None:
        target = e.storage_of(StorageKind.PLACEHOLDER, e.shape())
        p = e.storage[-1]
        e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, p.shape)], attrs={"target": target})
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, p.shape)], attrs={"target": p.name})
    return e.result()


def _own4_state(e: _Editor) -> Graph:
    p = e.existing(lambda s: s.kind is StorageKind.PLACEHOLDER and s.dtype is F32)
    if p is None:
        e.storage_of(StorageKind.PLACEHOLDER, e.state_shape())
        p = e.storage[-1]
    _state_user(e, p)
    return e.result()


_BREAKERS: dict[str, list[Callable[[_Editor], Graph]]] = {
    "G-1": [_g1_cycle, _g1_arity, _g1_shape, _g1_dtype, _g1_attr, _g1_save_type, _g1_result_index, _g1_state_dtype],
    "OWN-1": [_own1_orphan, _own1_unlisted],
    "OWN-2": [_own2_read, _own2_save, _own2_foreign_state],
    "OWN-3": [_own3_save, _own3_state],
    "OWN-4": [_own4_two_saves, _own4_state],
}
