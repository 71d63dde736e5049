"""The sanitizer's shadow memory, driven directly (the interpreter's rules are
tested through programs in test_interpreter.py)."""

from __future__ import annotations

import numpy as np
import pytest

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Operand, OperandKind
from refcompiler.ir_text import parse_program
from refcompiler.sanitizer import DEAD, INIT, NO_OWNER, Shadow

PROGRAM = parse_program(
    'program "shadow"\nbuffer X : placeholder float32[4]\npeak_bytes 32\n'
    "0: alloc %a : float32[4] at 0\n1: alloc %b : float32[4] at 8\n2: dealloc %a\n3: dealloc %b\n"
)


@pytest.mark.parametrize("k", [1, 1 << 14])  # bytes per byte of the layout; 1 << 14: each range is filled by numpy
def test_a_dealloc_kills_only_the_bytes_its_activation_still_owns(k: int) -> None:
    shadow = Shadow(PROGRAM, 32 * k)
    shadow.alloc(0, "%a", 0, 16 * k)
    shadow.alloc(1, "%b", 8 * k, 24 * k)  # takes over bytes 8..16 of %a
    shadow.wrote(0, 24 * k)
    owned = shadow.dealloc(2, "%a", 0, 16 * k)
    assert owned is not None and owned.tolist() == [True] * 8 * k + [False] * 8 * k  # what the interpreter poisons
    assert (shadow.state[: 8 * k] == DEAD).all() and (shadow.owner[: 8 * k] == NO_OWNER).all()
    assert (shadow.state[8 * k : 24 * k] == INIT).all() and (shadow.owner[8 * k : 24 * k] == shadow.ids["%b"]).all()
    shadow.check_read(3, Operand(OperandKind.IN, "%b"), "%b", 8 * k, 24 * k)  # %b's bytes stay readable
    with pytest.raises(InvariantViolation) as e:
        shadow.check_read(3, Operand(OperandKind.IN, "%a"), "%a", 0, 16 * k)
    assert e.value.invariant == "IR-1" and "byte 0 of the arena (byte 0 of %a)" in str(e.value) and "dead" in str(e.value)
    assert shadow.dealloc(3, "%b", 8 * k, 24 * k) is None  # owns all its bytes
    assert (shadow.state == DEAD).all() and (shadow.owner == NO_OWNER).all()
    shadow.alloc(0, "%a", 0, 16 * k)
    with pytest.raises(InvariantViolation) as e:
        shadow.check_read(1, Operand(OperandKind.IN, "%a"), "%a", 0, 16 * k)
    assert e.value.invariant == "IR-2" and (shadow.owner[: 16 * k] == shadow.ids["%a"]).all()


def test_the_first_bad_byte_is_reported_dead_or_uninitialised() -> None:
    shadow = Shadow(PROGRAM, 32)
    shadow.alloc(0, "%a", 0, 16)
    shadow.wrote(0, 4)
    with pytest.raises(InvariantViolation) as e:
        shadow.check_read(1, Operand(OperandKind.IN, "%a"), "%a", 0, 16)
    assert e.value.invariant == "IR-2" and "byte 4 of the arena (byte 4 of %a)" in str(e.value)
    with pytest.raises(InvariantViolation) as e:
        shadow.check_read(1, Operand(OperandKind.IN, "%v"), "%a", 12, 20)
    assert e.value.invariant == "IR-2" and "byte 12 of the arena (byte 0 of %a (through %v))" in str(e.value)
    shadow.wrote(4, 16)
    with pytest.raises(InvariantViolation) as e:
        shadow.check_read(1, Operand(OperandKind.IN, "%a"), "%a", 8, 20)
    assert e.value.invariant == "IR-1" and "byte 16 of the arena" in str(e.value)
    assert np.array_equal(shadow.state[:16], np.full(16, INIT, np.uint8))


ENTRY_SAVE = """\
program "entry_save"
buffer X : placeholder float32[4] init {"value": [1.0, 2.0, 3.0, 4.0]}
buffer Y : placeholder float32[4] init {"value": [10.0, 20.0, 30.0, 40.0]}
buffer out : placeholder float32[4]
save s : X <- b
save t : out
peak_bytes 0
"""


def test_a_save_of_an_entry_value_read_after_its_placeholder_was_written_is_ir4_at_run_time() -> None:
    """``t`` saves X's value at entry (``Save.producer`` None) into ``out``; ``b``
    writes X itself (copy elimination of ``s``). Read before that write, the
    entry value is copied; read after it, the value is gone: IR-4 at the copy,
    as the IR verifier says, not a wrong ``out`` (SEM-1 naming no instruction)."""
    from refcompiler.interpreter import execute
    from refcompiler.ir_verifier import program_violations
    from refcompiler.values import same_bits

    first = parse_program(ENTRY_SAVE + "0: copy t(@out out, @in X)\n1: kernel b = neg(@out X, @in Y)\n")
    got = execute(first, {})
    assert same_bits(got["out"], np.array([1.0, 2.0, 3.0, 4.0], np.float32)) and same_bits(got["X"], -got["Y"])
    late = parse_program(ENTRY_SAVE + "0: kernel b = neg(@out X, @in Y)\n1: copy t(@out out, @in X)\n")
    with pytest.raises(InvariantViolation) as e:
        execute(late, {})  # the verifier is not asked: the sanitizer alone
    message = "placeholder X is read by save t, which saves its value at entry, after instruction 0 wrote it"
    assert e.value.invariant == "IR-4" and e.value.instruction == 1 and message in str(e.value)
    assert [v.invariant for v in program_violations(late)] == ["IR-4"] and message in str(program_violations(late)[0])
    produced = parse_program(ENTRY_SAVE.replace("save t : out", "save t : out <- b") + "0: kernel b = neg(@out X, @in Y)\n1: copy t(@out out, @in X)\n")
    assert same_bits(execute(produced, {})["out"], -got["Y"])  # a save of b's value reads it where b wrote it
