"""Every program of the fidelity corpus is an oracle that answers the same every time:
each was run several times side by side by tests/fidelity/check.py, which records it."""

from __future__ import annotations

from tests.fidelity.check import CORPORA, corpus, digest, read_checked


def test_every_corpus_program_was_checked_deterministic_as_it_is_now():
    checked = read_checked()
    unchecked = [program.name for program in corpus(list(CORPORA)) if checked.get(program.name) != digest(program)]
    assert not unchecked, ("not checked as they are now (run `python -m tests.fidelity.check --only "
                           f"{' '.join(unchecked[:20])}`): {unchecked}")


def test_a_changed_program_needs_checking_again():
    program = corpus(["programs_semantics"])[0]
    changed = type(program)(program.name, program.code + "\n", program.stdin, program.files)
    assert digest(changed) != digest(program)
