"""The pass registry, the named pipelines, resolve_pipeline and run_pipeline."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from specs import OpKind

from refcompiler.errors import InvariantViolation, UsageError
from dataclasses import replace

from refcompiler.ir import IdentityTable, Operand, OperandKind, Program
from refcompiler.passes import PASSES, PIPELINES, resolve_pipeline, run_pipeline
from refcompiler.variants import registry
from tests.refcompiler.passes.ir_build import alloc, const, copy, dealloc, kernel, placeholder, program, save

SWAP_POINTS = {
    "share_buffers": ("allowed_inputs", "may_reuse", "read_later", "aliases"),
    "eliminate_copies": ("placeholder_read_after",),
    "hoist_dealloc": ("last_use",),
    "dead_store_elimination": ("is_observable",),
}


def sample() -> Program:
    return program(
        [placeholder("A"), placeholder("B"), const("W")],
        alloc("%a"),
        kernel("a", OpKind.ADD, ("%a",), ("A", "W")),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("%a",)),
        dealloc("%a"),
        copy("sb", "B", "%r"),
        dealloc("%r"),
        saves=(save("sb", "B", "r"),),
    )


def test_every_pass_is_a_module_of_its_name():
    assert len(PASSES) == 6
    for name, fn in PASSES.items():
        module = importlib.import_module(f"refcompiler.passes.{name}")
        assert getattr(module, name) is fn
        assert fn.__name__ == name


def test_pipelines():
    assert PIPELINES["O0"] == ()
    assert sorted(PIPELINES["O2"]) == sorted(PASSES)
    assert resolve_pipeline("O0") == []
    assert [name for name, _ in resolve_pipeline("O2")] == list(PIPELINES["O2"])


def test_swap_points_are_registered_top_level_functions():
    keys = registry()
    for module, names in SWAP_POINTS.items():
        for name in names:
            assert f"refcompiler.passes.{module}.{name}" in keys


def test_named_list():
    got = resolve_pipeline(" sink_alloc , hoist_dealloc")
    assert got == [("sink_alloc", PASSES["sink_alloc"]), ("hoist_dealloc", PASSES["hoist_dealloc"])]


@pytest.mark.parametrize("spec", ["O3", "share_buffers,nope", "", "a,,b", "no_such_module_xyz:passes", "json:nope"])
def test_unknown_is_a_usage_error_listing_what_is_known(spec):
    with pytest.raises(UsageError) as info:
        resolve_pipeline(spec)
    if spec in ("O3", "share_buffers,nope", ""):
        assert "share_buffers" in str(info.value) and "O2" in str(info.value)


def test_sequence_of_names_and_functions():
    def mine(p: Program) -> Program:
        return p

    # a user's pass is named module.qualname: two users' passes named alike are two passes
    assert resolve_pipeline(["sink_alloc", mine]) == [("sink_alloc", PASSES["sink_alloc"]), (f"{__name__}.{mine.__qualname__}", mine)]
    with pytest.raises(UsageError):
        resolve_pipeline(["sink_alloc", 3])  # type: ignore[list-item]


def test_a_pipeline_name_in_a_list_stands_for_its_passes(user_module):
    """``["O2", my_pass]``: O2, then the user's pass (it was "unknown pass 'O2'",
    while the message listed O2 among the pipelines it knows)."""
    user_module.AFTER_O2 = ["O2", user_module.identity]
    want = [*PIPELINES["O2"], "user_passes_for_test.identity"]
    assert [name for name, _ in resolve_pipeline(["O2", user_module.identity])] == want
    assert [name for name, _ in resolve_pipeline("user_passes_for_test:AFTER_O2")] == want


@pytest.fixture
def user_module():
    module = types.ModuleType("user_passes_for_test")

    def identity(p: Program) -> Program:
        return p

    identity.__module__, identity.__qualname__ = module.__name__, "identity"  # as if defined there
    module.identity = identity
    module.LIST = ["delete_dead_allocs", identity]
    module.factory = lambda: ["hoist_dealloc"]
    module.NOT_A_PIPELINE = 42
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_module_attribute(user_module):
    assert resolve_pipeline("user_passes_for_test:LIST") == [
        ("delete_dead_allocs", PASSES["delete_dead_allocs"]),
        ("user_passes_for_test.identity", user_module.identity),
    ]
    assert resolve_pipeline("user_passes_for_test:factory") == [("hoist_dealloc", PASSES["hoist_dealloc"])]
    assert resolve_pipeline("user_passes_for_test:identity") == [("user_passes_for_test.identity", user_module.identity)]
    mixed = resolve_pipeline("O2, user_passes_for_test:identity")
    assert [name for name, _ in mixed] == [*PIPELINES["O2"], "user_passes_for_test.identity"]
    with pytest.raises(UsageError):
        resolve_pipeline("user_passes_for_test:NOT_A_PIPELINE")


def test_run_pipeline_records_and_verifies():
    out = run_pipeline(sample(), resolve_pipeline("O2"))
    assert out.passes == PIPELINES["O2"]
    assert run_pipeline(sample(), []) == sample()


def test_run_pipeline_names_the_pass_that_broke_an_invariant():
    def breaks_ir6(p: Program) -> Program:
        # relu becomes a roll that overwrites its own input: a stencil in place
        instrs = [
            i if i.name != "r" else kernel("r", OpKind.ROLL, ("%a",), ("%a",)) for i in p.instrs
        ]
        instrs = [i for i in instrs if i.name != "%r"]
        instrs = [i if i.name != "sb" else copy("sb", "B", "%a") for i in instrs]
        return p.with_instrs(instrs)

    with pytest.raises(InvariantViolation) as info:
        run_pipeline(sample(), [("sink_alloc", PASSES["sink_alloc"]), ("breaks_ir6", breaks_ir6)])
    assert info.value.invariant == "IR-6"
    assert info.value.stage == "after pass breaks_ir6"
    assert str(info.value).startswith("after pass breaks_ir6: IR-6: instruction ")


def test_run_pipeline_verifies_the_lowered_program_first():
    broken = sample().with_instrs(sample().instrs[:-1])  # %r never deallocated
    with pytest.raises(InvariantViolation) as info:
        run_pipeline(broken, [])
    assert str(info.value).startswith("after lowering: IR-1:")


def test_a_pass_must_return_a_program():
    """A pass that returns no program is a finding about it (exit 1, blamed on
    it), as one that raises is: not a usage error of refc's command line."""
    from refcompiler.errors import ExecutionError

    with pytest.raises(ExecutionError, match="pass nothing returned NoneType, not a Program") as e:
        run_pipeline(sample(), [("nothing", lambda p: None)])  # type: ignore[arg-type, return-value]
    assert e.value.component == "nothing" and e.value.exit_code == 1


def test_a_users_pass_that_changes_its_input_in_place_is_blamed_and_harms_nothing_shared():
    """The instruction objects a pass is given are shared (with the lowering of
    the graph, and other orders' programs): one changed in place broke those, a
    fault blamed on lowering. A user's pass works on its own copy; changing it
    is a finding about the pass, by name."""
    from refcompiler.errors import ExecutionError

    def renames_in_place(p: Program) -> Program:
        object.__setattr__(p.instrs[1], "name", "a2")  # "an edit in place, for speed"
        return p.with_instrs(p.instrs)

    given = sample()
    shared = given.instrs[1]
    with pytest.raises(ExecutionError) as e:
        run_pipeline(given, [("renames_in_place", renames_in_place)])
    assert e.value.component == "renames_in_place" and e.value.exit_code == 1
    assert str(e.value).startswith(
        "pass renames_in_place changed the program it was given (instruction 1 `kernel  a = add(@out %a, @in A, @in W)` "
        "became `kernel  a2 = add(@out %a, @in A, @in W)`): a pass returns a new Program"
    )
    assert shared.name == "a" and given == sample()  # refc's objects as they were
    kept = run_pipeline(given, [("keeps", lambda p: p)])  # a pass giving its input back: the program verified, not its copy
    assert kept.passes == ("keeps",) and all(a is b for a, b in zip(kept.instrs, given.instrs, strict=True))


def test_a_user_pipeline_function_that_misbehaves_is_an_error_naming_it(user_module):
    import os

    from refcompiler.errors import ExecutionError

    def fail():
        raise ValueError("cannot make passes")

    def itself():
        return itself

    user_module.fail, user_module.itself = fail, itself
    with pytest.raises(ExecutionError, match="pipeline 'user_passes_for_test:fail' raised ValueError: cannot make passes"):
        resolve_pipeline("user_passes_for_test:fail")
    with pytest.raises(UsageError, match="returned another function of no arguments"):
        resolve_pipeline("user_passes_for_test:itself")
    for leave in (lambda p: sys.exit(7), lambda p: os._exit(3)):
        with pytest.raises(ExecutionError, match=r"pass <lambda> called (sys\.exit\(7\)|os\._exit\(3\))"):
            run_pipeline(sample(), [("<lambda>", leave)])


def _fault_of_pass(run) -> InvariantViolation:
    with pytest.raises(InvariantViolation) as info:
        run_pipeline(sample(), [("mine", run)])
    assert info.value.stage == "after pass mine"
    return info.value


def test_a_users_pass_may_not_change_the_module_buffers_or_the_saves():
    """They are the graph's: the verifier checks the instructions against them,
    so a pass that changed them could make its own writes look legal."""
    from dataclasses import replace

    from refcompiler.ir import BufferKind, Save

    unconst = lambda p: replace(p, buffers=tuple(replace(b, kind=BufferKind.PLACEHOLDER) if b.kind is BufferKind.CONSTANT else b for b in p.buffers))
    fault = _fault_of_pass(unconst)
    assert fault.invariant == "IR-1" and "changed module buffer(s) 'W'" in str(fault) and fault.program is not None
    fault = _fault_of_pass(lambda p: replace(p, buffers=p.buffers[1:]))
    assert fault.invariant == "IR-1" and "changed module buffer(s) 'A' (gone):" in str(fault)
    # renamed: the old name gone, the new one new
    fault = _fault_of_pass(lambda p: replace(p, buffers=(replace(p.buffers[0], name="A2"), *p.buffers[1:])))
    assert fault.invariant == "IR-1" and "changed module buffer(s) 'A' (gone), 'A2' (new):" in str(fault)
    fault = _fault_of_pass(lambda p: replace(p, saves=p.saves + (Save("r", "A", "r"),)))
    assert fault.invariant == "IR-4" and "changed the program's saves" in str(fault)
    # the same buffers and saves as lists, and the instructions as a list, are the IR's tuples again
    out = run_pipeline(sample(), [("lists", lambda p: replace(p, buffers=list(p.buffers), saves=list(p.saves), instrs=list(p.instrs),
                                                          schedule=list(p.schedule)))])
    assert out == sample() and all(type(getattr(out, f)) is tuple for f in ("buffers", "saves", "instrs", "schedule"))


@pytest.mark.parametrize("make, says", [
    (lambda p: p.with_instrs([*p.instrs, 7]), "instruction 7 is int 7, not an Instr"),
    (lambda p: replace(p, instrs=None), "whose instrs is NoneType, not a tuple"),
    (lambda p: p.with_instrs([replace(p.instrs[1], operands=(Operand(OperandKind.OUT, 5),))]), "has operands"),
    (lambda p: p.with_instrs([replace(p.instrs[1], name=None)]), "has name None, not a str"),
    (lambda p: p.with_instrs([replace(p.instrs[1], op="add")]), "has op 'add', not an OpKind or None"),
    (lambda p: p.with_instrs([replace(p.instrs[1], attrs=[("a", 1)])]), "has attrs"),
    (lambda p: p.with_instrs([replace(p.instrs[1], attrs=(("a", object()),))]), "has attrs"),
    (lambda p: replace(p, name=5), "whose name 5 is not a str"),
    (lambda p: replace(p, schedule=(1,)), "whose schedule (1,) is not a tuple of node names"),
    (lambda p: replace(p, offsets=[["%a", "x"]]), "whose offsets"),
    (lambda p: replace(p, peak_bytes="x"), "whose peak_bytes 'x' is not None or a whole number"),
])
def test_a_malformed_instruction_from_a_users_pass_is_ir1_not_a_crash(make, says):
    fault = _fault_of_pass(make)
    assert fault.invariant == "IR-1" and says in str(fault) and fault.program is None  # nothing to draw


def test_a_kernel_a_users_pass_typed_wrong_is_ir1_after_it():
    from dataclasses import replace

    swapped = lambda p: p.with_instrs([replace(i, op=OpKind.MATMUL) if i.op is OpKind.ADD else i for i in p.instrs])
    fault = _fault_of_pass(swapped)
    assert fault.invariant == "IR-1" and "matmul of" in str(fault)


def test_a_built_in_pass_is_run_once_for_programs_holding_the_same_objects(monkeypatch: pytest.MonkeyPatch):
    # Two orders that compiled alike hold the same instruction objects: a
    # built-in pass gives the second what it gave the first, with the second's
    # schedule and passes (it reads neither); a program of other objects runs it.
    import refcompiler.passes as passes

    first = sample()
    second = replace(first, schedule=("another", "order"), passes=("earlier",))
    ran: list[Program] = []
    real = passes.PASSES["eliminate_copies"]

    def counting(p: Program) -> Program:
        ran.append(p)
        return real(p)

    monkeypatch.setattr(passes, "_RESULTS", IdentityTable(8))
    monkeypatch.setattr(passes, "_BUILT_IN", passes._BUILT_IN | {counting})  # trusted as a built-in pass is
    pipeline = [("eliminate_copies", counting)]
    out_first, out_second = run_pipeline(first, pipeline), run_pipeline(second, pipeline)
    assert ran == [first]
    assert out_second.instrs is out_first.instrs and out_second.schedule == ("another", "order")
    assert out_second.passes == ("earlier", "eliminate_copies") and out_second == replace(real(second), passes=out_second.passes)
    run_pipeline(program([placeholder("A"), placeholder("B"), const("W")], *first.instrs, saves=first.saves), pipeline)
    assert len(ran) == 2  # the same instructions, but other buffers and saves objects: run again


def test_a_users_pass_named_as_a_built_in_one_is_named_by_its_module_too(user_module):
    """A user's ``share_buffers`` after O2's was named ``share_buffers`` too: a
    wrong result it made was blamed on "pass share_buffers", refc's own."""

    def share_buffers(p: Program) -> Program:
        return p

    share_buffers.__module__, share_buffers.__qualname__ = user_module.__name__, "share_buffers"
    got = resolve_pipeline(["O2", share_buffers])
    assert [name for name, _ in got] == [*PIPELINES["O2"], "user_passes_for_test.share_buffers"]
    assert got[-1][1] is share_buffers
    # refc's own pass, given as a function, keeps its name
    assert resolve_pipeline([PASSES["share_buffers"]]) == [("share_buffers", PASSES["share_buffers"])]
