"""The builtin table is the one description of every builtin: what clsim exports, what the
passes read, and what docs/language.md says all come from it."""

import ast

import pytest

import clsim
from clsim import api
from clsim.compiler import builtins as table
from clsim.compiler import helpers as hp
from clsim.compiler.builtins import docs


def test_language_page_is_generated_from_the_table():
    """docs/language.md's builtin tables are what the table renders now (regenerate them with
    `python -m clsim.compiler.builtins.docs` after adding an entry)."""
    text = docs.PAGE.read_text()
    assert docs.current(text) == text, "docs/language.md is stale: run " \
        "python -m clsim.compiler.builtins.docs"


def test_every_public_entry_is_an_exported_marker_and_nothing_else_is():
    """`from clsim import NAME` gives the marker the front end resolves, for exactly the
    table's public names (internal entries stay hidden)."""
    exported = {name for name in clsim.__all__ if api.builtin_by_identity(getattr(clsim, name))}
    assert exported == set(table.PUBLIC_NAMES)
    assert "__cvt_value" in table.TABLE and "__cvt_value" not in exported


def test_every_entry_documents_its_spelling():
    missing = [e.name for e in table.TABLE.values() if e.public and not e.c]
    assert not missing, f"entries without an OpenCL C spelling: {missing}"


@pytest.mark.parametrize("name", sorted(table.HELPERS))
def test_helpers_define_what_they_are_called_and_their_deps_exist(name):
    """Each runtime helper's source is one function of its own name whose dependencies are
    known helpers (a misspelt dep would only fail when a kernel first pulls it in)."""
    h = table.HELPERS[name]
    tree = ast.parse(h.source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [name]
    for dep in h.deps:
        assert dep in table.HELPERS or dep in hp.CORE, f"{name} needs unknown helper {dep}"
    assert name not in hp.CORE, f"{name} is both a core helper and a builtin's helper"


def test_cut_points_and_levels_come_from_the_table():
    assert table.cut_level("barrier") == "work"
    assert table.cut_level("work_group_reduce_add") == "work"
    assert table.cut_level("sub_group_reduce_add") == "sub"
    assert table.cut_level("exp") is None
    assert table.is_varying("get_local_id") and not table.is_varying("get_group_id")
    assert table.lookup("vload4").access == "load"
    assert table.lookup("atomic_add").access == "atomic"


def test_a_duplicate_entry_is_refused(monkeypatch):
    """Two entries with one name would make the passes disagree about it."""
    extra = [*table.math.ENTRIES, table.math.ENTRIES[0]]
    monkeypatch.setattr(table.math, "ENTRIES", extra)
    with pytest.raises(ValueError, match="defined twice"):
        table._build()
