"""The anti-cheat checks: new axioms and changed theorem statements."""

from __future__ import annotations

from toolserver.lean.guard import check_proof, new_axioms, normalise_statement, statement_changed


def test_a_new_axiom_is_refused_with_its_position():
    code = "theorem t : 1 = 1 := rfl\n  axiom cheat : False\n"
    [violation] = new_axioms(code)
    assert "cheat" in violation.reason
    assert (violation.line, violation.column) == (2, 2)


def test_axioms_with_modifiers_or_attributes_are_refused():
    assert new_axioms("private axiom a : False")
    assert new_axioms("@[simp] axiom b (n : Nat) : n = 0")


def test_axiom_in_comments_strings_or_names_is_not_a_declaration():
    code = ('-- axiom x : False\n/- axiom y : False -/\ndef s := "axiom z : False"\n'
            'theorem uses_axiom : True := trivial\n#print axioms uses_axiom\n')
    assert new_axioms(code) == []


def test_the_fixed_statement_passes_when_proved_as_given():
    statement = "theorem t (n : Nat) : n + 0 = n"
    code = "theorem t (n : Nat) :\n    n + 0 = n := by\n  simp"
    assert statement_changed(code, statement) is None
    assert statement_changed(code, statement + " := by sorry") is None


def test_a_changed_statement_is_refused():
    statement = "theorem t (n : Nat) : n + 0 = n"
    assert statement_changed("theorem t (n : Nat) : n = n := rfl", statement) is not None
    assert statement_changed("theorem t (n : Nat) : n + 0 = n ∨ True := Or.inr trivial", statement) is not None


def test_the_statement_inside_a_comment_does_not_count():
    statement = "theorem t : 1 = 2"
    code = "/- theorem t : 1 = 2 := sorry -/\ntheorem t : 1 = 1 := rfl"
    assert statement_changed(code, statement) is not None


def test_a_longer_name_is_not_the_statement():
    assert statement_changed("theorem t' : 1 = 1 := rfl", "theorem t : 1 = 1") is not None
    assert statement_changed("theorem xt : 1 = 1 := rfl", "t : 1 = 1") is not None


def test_normalise_statement_drops_comments_proof_and_spacing():
    assert normalise_statement("theorem  t --c\n : True  := trivial") == "theorem t : True"


def test_check_proof_collects_every_violation():
    code = "axiom a : False\ntheorem t : 1 = 2 := a.elim"
    assert len(check_proof(code, "theorem t : 2 = 2")) == 2
    assert check_proof("theorem t : 2 = 2 := rfl", "theorem t : 2 = 2") == []
