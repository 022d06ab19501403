"""bench/guards.toml lists every guarded statement of the lifecycle modules, so the mutation run (bench/mutants.py)
cannot miss one: a new guarded UPDATE that is not on the list fails here. And every mutant still finds its guard."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUARDS = tomllib.loads((ROOT / "bench" / "guards.toml").read_text())
BUILDERS = ("_statement", "_move_statement", "_generation_statement", "_run_statement", "_enrollment_statement")


def _is_guarded_update(node: ast.AST) -> bool:
    """An ``update(...).where(...)`` chain, or a call of a lifecycle module's statement builder."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Name) and func.id in BUILDERS:
            return True
        if isinstance(func, ast.Attribute) and func.attr == "where":
            for inner in ast.walk(func.value):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "update":
                    return True
    return False


def guarded_statements(path: Path) -> set[str]:
    """The module-level names (or functions) that build a guarded UPDATE in ``path``."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _is_guarded_update(node.value):
                found.add(node.targets[0].id)
        elif isinstance(node, ast.FunctionDef) and node.name not in BUILDERS and _is_guarded_update(node):
            found.add(f"{node.name}()")
    return found


def test_every_guarded_statement_of_the_lifecycle_modules_is_on_the_mutation_runs_list():
    for module, listed in GUARDS["statements"].items():
        found = guarded_statements(ROOT / module)
        assert found - set(listed) == set(), f"{module}: add these to bench/guards.toml and give them mutants"
        assert set(listed) - found == set(), f"{module}: bench/guards.toml lists statements that are gone"


def test_every_mutant_finds_its_guard_exactly_once_and_says_what_kills_it_or_why_it_is_equivalent():
    ids = [mutant["id"] for mutant in GUARDS["mutant"]]
    assert len(ids) == len(set(ids))
    for mutant in GUARDS["mutant"]:
        text = (ROOT / mutant["file"]).read_text()
        assert text.count(mutant["find"]) == 1, mutant["id"]
        assert mutant["find"] != mutant["replace"], mutant["id"]
        assert bool(mutant.get("tests")) != bool(mutant.get("equivalent")), mutant["id"]
        assert mutant.get("db", "sqlite") in ("sqlite", "postgresql"), mutant["id"]
        for test in mutant.get("tests", []):
            path, _, name = test.partition("::")
            name = name.partition("[")[0]  # a parametrized case names its function
            assert f"def {name}(" in (ROOT / path).read_text(), (mutant["id"], test)
