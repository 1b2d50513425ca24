"""The dependency list asks only for what its distributions provide: an extra a package does not declare makes pip
print `WARNING: math-verify 0.9.0 does not provide the extra 'antlr4_13_2'` on every install. math-verify parses LaTeX
through latex2sympy2_extended's ANTLR parser at scoring time, so the ANTLR runtime is a dependency of its own, pinned
to the version whose parser the scoring tests ran on."""
from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _requirements() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for group in project.get("optional-dependencies", {}).values():
        reqs += [r for r in group if not r.startswith(project["name"])]
    return [Requirement(r) for r in reqs]


def test_every_extra_asked_for_is_one_its_package_declares_as_spelled():
    checked = 0
    for req in _requirements():
        if not req.extras:
            continue
        try:
            provided = metadata.metadata(req.name).get_all("Provides-Extra") or []
        except metadata.PackageNotFoundError:
            continue  # an optional group not installed here (ray, sentence-transformers)
        checked += 1
        assert set(req.extras) <= set(provided), f"{req}: {req.name} declares extras {provided}"
    assert checked >= 1  # ray[default] at least is installed with the test extra


def test_math_verify_is_asked_for_without_an_extra_and_antlr_is_pinned():
    by_name = {r.name: r for r in _requirements()}
    assert str(by_name["math-verify"]) == "math-verify==0.9.0"
    assert str(by_name["antlr4-python3-runtime"]) == "antlr4-python3-runtime==4.13.2"
    assert metadata.version("antlr4-python3-runtime") == "4.13.2"
    assert metadata.version("math-verify") == "0.9.0"


def test_math_verify_parses_latex_on_the_installed_runtime():
    sympy = pytest.importorskip("sympy")
    from math_verify import parse, verify

    half = parse(r"$\frac{1}{2}$")
    assert sympy.Rational(1, 2) in half
    assert verify(half, parse("$0.5$")) is True
    assert verify(parse(r"$\sqrt{16}$"), parse("$4$")) is True
    assert verify(parse(r"$\frac{1}{3}$"), parse("$0.5$")) is False
