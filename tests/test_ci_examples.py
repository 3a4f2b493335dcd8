"""The CI examples, docs/github-actions.yml and docs/gitlab-ci.yml: each is a pipeline its
service runs, installs estategen from its own repository at a pinned commit into a virtual
environment (never by bare name from a package index, where the name is not this project's),
refuses to run until that commit is set, and runs only estategen commands that estategen's own
argument parser accepts, so a renamed flag fails here before it fails a user's pipeline.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from estategen.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / "docs" / "github-actions.yml"
GITLAB = ROOT / "docs" / "gitlab-ci.yml"
EXAMPLES = [GITHUB, GITLAB]
# top-level keys of .gitlab-ci.yml that are not jobs
GITLAB_KEYWORDS = {
    "default", "include", "stages", "variables", "workflow", "image", "services", "cache",
    "before_script", "after_script",
}  # fmt: skip
CONTROL = {";", "&&", "||", "|", "&", "(", ")", "\n"}
SHELL_WORDS = {"{", "}", "if", "then", "else", "elif", "fi", "do", "done", "!"}
INSTALLERS = {"pip", "pip3", "pipx", "uv"}
# a requirement by name: `estategen`, `EstateGen[x]`, `estategen==0.1`; not `name @ url`
BY_NAME = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(?:[<>=!~;].*)?")
PINNED = "estategen @ git+$ESTATEGEN_REPOSITORY@$ESTATEGEN_COMMIT"


def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def gitlab_jobs(pipeline: dict[Any, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: job
        for name, job in pipeline.items()
        if name not in GITLAB_KEYWORDS and not str(name).startswith(".")
    }


def scripts(path: Path) -> list[str]:
    """The shell scripts of the example, in the order they run."""
    data = load(path)
    if path == GITHUB:
        jobs = data["jobs"].values()
        return [step["run"] for job in jobs for step in job["steps"] if "run" in step]
    before = data.get("default", {}).get("before_script", [])
    return ["\n".join(before)] + ["\n".join(job["script"]) for job in gitlab_jobs(data).values()]


def commands(script: str) -> Iterator[list[str]]:
    """The simple commands of a shell script, each as its words (quotes removed, variables left
    unexpanded), without redirections, assignments before the command or shell keywords."""
    tokens: list[str] = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens += [*lexer, "\n"]  # a line ends a command
    words: list[str] = []
    redirect = False
    for token in tokens:
        if token in CONTROL:
            if words:
                yield words
            words = []
        elif redirect:
            redirect = False
        elif token and set(token) <= set("<>&"):
            redirect = True
            if words and words[-1].isdigit():  # 2> file
                words.pop()
        elif not words and (token in SHELL_WORDS or re.fullmatch(r"\w+=.*", token)):
            continue
        else:
            words.append(token)
    if words:
        yield words


def all_commands(path: Path) -> list[list[str]]:
    return [words for script in scripts(path) for words in commands(script)]


def installs(words: list[str]) -> list[str]:
    """What a pip/pipx/uv install command asks for (its arguments that are not options)."""
    if "install" not in words or not INSTALLERS & {Path(w).name for w in words}:
        return []
    return [w for w in words[words.index("install") + 1 :] if not w.startswith("-")]


def by_bare_name(requirement: str) -> bool:
    """Whether the requirement names estategen for a package index to resolve."""
    match = BY_NAME.fullmatch(requirement)
    return match is not None and re.sub(r"[-_.]+", "-", match.group(1)).lower() == "estategen"


def estategen_commands(path: Path) -> list[list[str]]:
    return [words for words in all_commands(path) if Path(words[0]).name == "estategen"]


def parse(argv: list[str]) -> argparse.Namespace:
    """The argv as estategen's CLI parses it; an option it does not know fails the test."""
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return _parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"estategen {shlex.join(argv)}: {errors.getvalue().strip()}")


# --- each file is what its service runs ------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_example_is_yaml(path: Path) -> None:
    assert load(path)


def test_the_github_workflow_has_triggers_jobs_and_steps_that_run_or_use() -> None:
    workflow = load(GITHUB)
    triggers = workflow["on" if "on" in workflow else True]  # YAML 1.1 reads `on` as true
    assert "pull_request" in triggers
    assert workflow["jobs"]
    for name, job in workflow["jobs"].items():
        assert job["runs-on"], name
        assert job["steps"], name
        for step in job["steps"]:
            assert len({"run", "uses"} & step.keys()) == 1, step
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", step["uses"]), step["uses"]
            else:
                assert isinstance(step["run"], str) and step["run"].strip(), step


def test_the_gitlab_pipeline_has_stages_and_jobs_with_script_lists() -> None:
    pipeline = load(GITLAB)
    stages = pipeline["stages"]
    assert stages and all(isinstance(s, str) for s in stages)
    jobs = gitlab_jobs(pipeline)
    assert jobs
    for name, job in jobs.items():
        assert job["stage"] in stages, name
        assert job["script"] and all(isinstance(line, str) for line in job["script"]), name
    before = pipeline["default"]["before_script"]
    assert before and all(isinstance(line, str) for line in before)
    assert {job["stage"] for job in jobs.values()} == set(stages)


# --- estategen comes from its repository at one commit ---------------------------------------


@pytest.mark.parametrize(
    ("command", "from_an_index"),
    [
        ("python -m pip install estategen", True),
        ("pip3 install --upgrade EstateGen==0.1.0", True),
        ("pipx install estategen", True),
        ("pip install estate-gen", False),  # another project's name
        ("uv pip install 'estategen[test]>=0.1'", True),
        (f'.venv/bin/python -m pip install "{PINNED}"', False),
        ("python -m pip install .", False),
        ("python -m pip install cerberus", False),
    ],
)
def test_an_install_of_estategen_by_name_is_told_apart_from_one_by_url(
    command: str, from_an_index: bool
) -> None:
    (words,) = commands(command)
    assert any(by_bare_name(r) for r in installs(words)) == from_an_index


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_no_example_installs_estategen_from_a_package_index_by_name(path: Path) -> None:
    named = [words for words in all_commands(path) if any(map(by_bare_name, installs(words)))]
    assert named == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_estategen_is_installed_at_the_pinned_commit_into_a_virtual_environment(
    path: Path,
) -> None:
    every = all_commands(path)
    (install,) = [words for words in every if any("estategen" in r for r in installs(words))]
    assert installs(install) == [PINNED]
    (venv,) = [words[3] for words in every if words[:3] == ["python", "-m", "venv"]]
    assert install[:4] == [f"{venv}/bin/python", "-m", "pip", "install"]
    assert every.index(install) < every.index(estategen_commands(path)[0])
    # later commands find the environment's estategen by name
    text = path.read_text()
    if path == GITHUB:
        assert f'echo "{venv}/bin" >> "$GITHUB_PATH"' in text
    else:
        assert f'export PATH="{venv}/bin:$PATH"' in load(path)["default"]["before_script"]
        assert not any("before_script" in job for job in gitlab_jobs(load(path)).values())


def settings(path: Path) -> dict[str, str]:
    data = load(path)
    found: dict[str, str] = data["env"] if path == GITHUB else data["variables"]
    return found


def guard(path: Path) -> str:
    """The line of the install that refuses a commit that is not a full one."""
    (line,) = [
        line
        for script in scripts(path)
        for line in script.splitlines()
        if "ESTATEGEN_COMMIT" in line and "exit" in line
    ]
    return line


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_commit_is_a_placeholder_explained_in_a_comment_and_refused_until_set(
    path: Path,
) -> None:
    placeholder = settings(path)["ESTATEGEN_COMMIT"]
    assert settings(path)["ESTATEGEN_REPOSITORY"].startswith("https://")
    comments = " ".join(
        line.strip().lstrip("#").strip()
        for line in path.read_text().splitlines()
        if line.strip().startswith("#")
    )
    assert "ESTATEGEN_COMMIT" in comments and "full 40-character commit" in comments

    def refused(commit: str) -> bool:
        env = {**os.environ, "ESTATEGEN_COMMIT": commit}
        run = subprocess.run(["sh", "-c", guard(path)], env=env, capture_output=True)
        return run.returncode != 0

    assert refused(placeholder)
    assert refused("v0.1.0") and refused("6066e77") and refused("")  # a tag, a short commit
    assert not refused("6066e77b0db18f57d8a72e822757e947e8be3fd8")


# --- every estategen command is one the CLI accepts -------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [(p, words) for p in EXAMPLES for words in estategen_commands(p)],
    ids=lambda case: f"{case[0].name}: {shlex.join(case[1])}",
)
def test_every_estategen_command_parses_with_the_cli_parser(argv: tuple[Path, list[str]]) -> None:
    _, words = argv
    parse(words[1:])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_example_validates_checks_the_committed_output_and_plans(path: Path) -> None:
    parsed = [parse(words[1:]) for words in estategen_commands(path)]
    assert {"validate", "render", "plan"} <= {p.command for p in parsed}
    renders = [p for p in parsed if p.command == "render"]
    assert renders and all(p.check for p in renders), "render writes nothing in CI: --check"
    assert {p.blueprint for p in parsed} == {"$BLUEPRINT"}
    assert settings(path)["BLUEPRINT"].startswith("blueprints/")


def test_a_renamed_flag_fails_the_parse() -> None:
    with pytest.raises(pytest.fail.Exception, match="unrecognized arguments: --chek"):
        parse(["render", "$BLUEPRINT", "--chek"])
