"""Registry and CLI: plug-in suites from a user's own package (the README example, verbatim),
clear errors for unknown families and modules, duplicate names refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from corpus.suite.__main__ import main
from corpus.suite.registry import load_suite, register, select, unknown_family_message
from corpus.suite.report import families_markdown, replace_families_table
from corpus.suite.spec import KernelSpec

REPO_ROOT = Path(__file__).resolve().parents[3]
SUITE_DOC = REPO_ROOT / "docs" / "suite.md"
EXAMPLE_MARKER = "<!-- example: mypkg/kernels/axpy.py -->"


def readme_example() -> str:
    """The family module of the "how to add a kernel" section."""
    text = SUITE_DOC.read_text()
    match = re.search(re.escape(EXAMPLE_MARKER) + r"\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, f"{SUITE_DOC} lost its example block"
    return match.group(1)


def broken_example() -> str:
    """The example renamed, with a reference that disagrees with its kernel."""
    source = readme_example()
    changed = source.replace('name = "my_axpy"', 'name = "my_axpy_wrong"').replace(
        "class Axpy(", "class AxpyWrong("
    )
    changed = changed.replace("* x.float() + y.float()", "* x.float() - y.float()")
    assert changed.count("my_axpy_wrong") == 1 and "- y.float()" in changed, (
        "example changed shape; update this test"
    )
    return changed


def write_suite(root: Path, modules: dict[str, str]) -> str:
    """A package ``<unique>.kernels`` under ``root`` with the given modules; returns its name."""
    package = f"usersuite_{uuid.uuid4().hex[:8]}"
    kernels = root / package / "kernels"
    kernels.mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (kernels / "__init__.py").write_text("")
    for name, source in modules.items():
        (kernels / f"{name}.py").write_text(source)
    return f"{package}.kernels"


def test_plugin_suite_registers_lists_and_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path, {"axpy": readme_example()})
    monkeypatch.syspath_prepend(str(tmp_path))
    specs = load_suite(suite)
    assert list(specs) == ["my_axpy"], "a plug-in suite lists its own families only"
    assert "matmul" not in specs

    assert main(["list", "--suite", suite]) == 0
    listing = capsys.readouterr().out
    assert "my_axpy" in listing and "1 family in 1 category" in listing and "add_broadcast" not in listing

    assert main(["list", "--suite", suite, "--suite", "corpus.suite.kernels"]) == 0
    both = capsys.readouterr().out
    assert "my_axpy" in both and "add_broadcast" in both

    assert main(["show", "my_axpy", "--suite", suite]) == 0
    page = capsys.readouterr().out
    assert specs["my_axpy"].default_config().launch in page.replace("\n", "")
    assert "N16777216" in page


def test_plugin_suite_checks_against_reference_in_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write_suite(tmp_path, {"axpy": readme_example(), "axpy_wrong": broken_example()})
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = load_suite(suite)["my_axpy"]
    # --all: every valid tiny config in each interpreter dtype (float16 and float32).
    expected = sum(
        len(spec.valid_configs(dims, d))
        for dims in spec.shapes_for("tiny")
        for d in ("float16", "float32")
    )
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    command = [
        sys.executable,
        "-m",
        "corpus.suite",
        "check",
        "--suite",
        suite,
        "--all",
        "--json",
        str(out),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, (
        f"a mismatching family must fail the check:\n{done.stdout}\n{done.stderr}"
    )
    results = json.loads(out.read_text())
    good = [r for r in results if r["family"] == "my_axpy"]
    bad = [r for r in results if r["family"] == "my_axpy_wrong"]
    assert len(good) == len(bad) == expected
    assert all(r["ok"] for r in good), [r["error"] for r in good if not r["ok"]]
    assert not any(r["ok"] for r in bad)
    assert all("out:" in r["error"] and "differ" in r["error"] for r in bad)


def test_unknown_family_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    specs = load_suite()
    with pytest.raises(
        KeyError, match="unknown kernel family no_such_family; known families: .*add_broadcast"
    ) as caught:
        select(specs, ["no_such_family"])
    assert str(caught.value).startswith("unknown")  # printed as a sentence, not a quoted key
    assert main(["show", "softmx"]) == 2
    [line] = capsys.readouterr().out.splitlines()  # one line, however wide the terminal
    assert line.startswith("error: unknown kernel family softmx (did you mean softmax or ")
    assert "; known families: add_broadcast, " in line and "'" not in line and line.endswith("welford")


def test_each_misspelled_family_gets_its_closest_names():
    message = unknown_family_message(["matmull", "nothing_like_it"], ["matmul", "matmul_splitk", "softmax"])
    assert message == (
        "unknown kernel families matmull (did you mean matmul or matmul_splitk?), nothing_like_it; "
        "known families: matmul, matmul_splitk, softmax"
    )


def test_unknown_suite_module_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(
        ModuleNotFoundError, match="suite module 'no_such_suite_pkg' cannot be imported"
    ):
        load_suite("no_such_suite_pkg")
    assert main(["list", "--suite", "no_such_suite_pkg"]) == 2
    assert "no_such_suite_pkg" in capsys.readouterr().out


def test_duplicate_family_name_is_refused() -> None:
    existing = load_suite()["add_broadcast"]

    class Impostor(type(existing)):  # type: ignore[misc]
        name = "add_broadcast"

    with pytest.raises(ValueError, match="registered twice"):
        register(Impostor)
    assert type(load_suite()["add_broadcast"]) is type(existing)


def test_docs_list_every_builtin_family(specs: dict[str, KernelSpec]) -> None:
    text = SUITE_DOC.read_text()
    missing = [name for name in specs if f"`{name}`" not in text]
    assert not missing, f"docs/suite.md does not list: {', '.join(missing)}"


def test_interpreter_check_refuses_already_compiled_kernels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    load_suite()  # this process holds JIT kernels, as the compile tests need
    assert main(["check", "add_broadcast", "--device", "cpu"]) == 2
    assert "before the interpreter was selected" in capsys.readouterr().out.replace("\n", "")


def _variant(existing: KernelSpec, name: str, **attributes: object) -> type[KernelSpec]:
    """A subclass of ``existing``'s family under a new name, with class attributes replaced."""
    return type(f"Variant_{name}", (type(existing),), {"name": name, **attributes})


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"roles": {"BLOCK_M": "tile_q"}}, "meta-parameter 'BLOCK_M' has unknown role 'tile_q'"),
        ({"roles": {"BLOCK_Q": "tile_m"}}, "'BLOCK_Q', which is not a constexpr parameter"),
        ({"roles": {"stride_om": "tile_m"}}, "'stride_om', which is not a constexpr parameter"),
        (
            {"flag_dims": ("BROADCAST",)},
            "flag dim(s) BROADCAST missing from tiny shape M16_N200_YROWS1",
        ),
        ({"flag_dims": "YROWS"}, "flag_dims must be a tuple of names"),
    ],
)
def test_register_refuses_bad_role_and_flag_declarations(attributes: dict, message: str) -> None:
    existing = load_suite()["add_broadcast"]
    name = f"bad_declaration_{uuid.uuid4().hex[:6]}"
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        register(_variant(existing, name, **attributes))
    assert name in str(raised.value), "the error names the family"
    assert name not in load_suite(), "a refused family is not registered"


def test_user_suite_without_roles_gets_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with_roles = readme_example()
    without_roles = re.sub(r"\n    roles = .*\n", "\n", with_roles).replace(
        'name = "my_axpy"', 'name = "my_axpy_plain"'
    )
    assert "roles" not in without_roles and "roles" in with_roles, (
        "example changed shape; update this test"
    )
    suite = write_suite(tmp_path, {"axpy": with_roles, "axpy_plain": without_roles})
    monkeypatch.syspath_prepend(str(tmp_path))
    specs = load_suite(suite)
    assert specs["my_axpy"].role_of("BLOCK") == "tile_n"
    plain = specs["my_axpy_plain"]
    assert plain.role_of("BLOCK") == "other" and plain.flag_dims == ()
    assert (
        plain.problem_sizes({"N": 1000}) == {"N": 1000} and plain.problem_flags({"N": 1000}) == {}
    )
    assert main(["show", "my_axpy", "--suite", suite]) == 0
    assert "(role tile_n)" in capsys.readouterr().out
    assert main(["show", "my_axpy_plain", "--suite", suite]) == 0
    page = capsys.readouterr().out
    assert "(role other)" in page and "flag dims" in page


def test_docs_families_table_is_current(specs: dict[str, KernelSpec]) -> None:
    text = SUITE_DOC.read_text()
    current = replace_families_table(text, families_markdown(specs, "default"))
    assert current == text, "docs/suite.md is stale: run python -m corpus.suite doc"
    assert "BLOCK_V (reduction_block)" in text and "| TRANS_B |" in text
