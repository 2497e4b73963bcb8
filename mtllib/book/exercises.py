"""Exercises of the kind "predict, then run" (issue 17): a chapter re-executed under the ``lab`` profile with a few parameters
changed, its glued results stored, and read back by the chapter's solution, so that the outcome a solution
states is a measurement, not typed text.

``notebooks/lab_exercises.yml`` names each variant: ``{chapter: {variant: {parameter: value}}}``, the changes to
the chapter's ``lab`` entry. A stored run (``benchmarks/results/lab_exercises/<chapter>.<variant>.json``) holds
the full parameters it ran with, its commit, date and run time, and every value the notebook glued. A student
runs the same variants with

    python -m mtllib.book.exercises run 01b_iap_by_hand            # every variant of the chapter
    python -m mtllib.book.exercises run 01b_iap_by_hand alpha10    # one
    python -m mtllib.book.exercises list

which prints what each run glued (``--store`` writes the stored copy; maintainers only). A chapter reads a
stored run with :func:`read`, which refuses one whose parameters are no longer what the file and the ``lab``
profile say (re-run it), or with :func:`glue_runs`, in a cell tagged :data:`READS_RUNS`; a variant's own run leaves those cells out (they
would read the runs being made). The stored runs are committed: nothing here depends on a local cache.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from mtllib import checks
from mtllib.book.runner import REPO_ROOT, Project, RunnerError, declared_parameters, git_commit, run_notebook

PROFILE = "lab"
EXERCISES_FILE = Path("notebooks") / "lab_exercises.yml"  #: relative to the project root
RESULTS_DIR = Path("benchmarks") / "results" / "lab_exercises"  #: relative to the project root
READS_RUNS = "reads-exercise-runs"  #: the tag of a chapter's cells that read stored runs (left out of a variant's run)


def glued_values(path: Path) -> dict:
    """The plain-text values an executed notebook glued (``myst_nb.glue``), by name: numbers, strings, lists as
    Python values where they parse, else the text."""
    values = {}
    for cell in json.loads(Path(path).read_text())["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = out.get("data", {}).get("application/papermill.record/text/plain")
            if name and text is not None:
                try:
                    values[name] = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    values[name] = text
    return values


def variants(project: Project | None = None) -> dict[str, dict[str, dict]]:
    """``{chapter: {variant: changes}}`` from the exercises file, checked before anything runs: known chapters
    with a ``lab`` entry, variant names usable in a file name, and parameters the notebook declares."""
    project = project or Project()
    path = project.root / EXERCISES_FILE
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise checks.BadInput(f"{path}: expected a mapping of chapter -> variant -> parameter changes")
    lab = project.profile(PROFILE)
    for chapter, named in data.items():
        if chapter not in lab:
            raise checks.BadInput(f"{path}: {chapter!r} is not a chapter of the {PROFILE} profile; chapters: {', '.join(lab)}")
        if not isinstance(named, dict) or not named:
            raise checks.BadInput(f"{path}: {chapter!r} must map variant names to parameter changes")
        declared = declared_parameters(project.source(chapter))
        for variant, changes in named.items():
            if not isinstance(variant, str) or not variant.replace("_", "").replace("-", "").isalnum():
                raise checks.BadInput(f"{path}: variant name {variant!r} of {chapter!r} must be letters, digits, '-' or '_'")
            if not isinstance(changes, dict) or not changes:
                raise checks.BadInput(f"{path}: variant {variant!r} of {chapter!r} changes no parameter")
            unknown = sorted(set(changes) - set(declared))
            if unknown:
                raise checks.BadInput(f"{path}: variant {variant!r} of {chapter!r} sets unknown parameter(s) {unknown}; "
                                      f"its parameters are: {', '.join(declared)}")
    return data


def _changes(chapter: str, variant: str, project: Project) -> dict:
    named = variants(project)
    if chapter not in named or variant not in named[chapter]:
        known = ", ".join(f"{c}: {', '.join(v)}" for c, v in named.items()) or "none"
        raise checks.BadInput(f"no exercise variant {variant!r} of {chapter!r} in {EXERCISES_FILE}; variants: {known}")
    return named[chapter][variant]


def parameters(chapter: str, variant: str, project: Project | None = None) -> dict:
    """The chapter's ``lab`` parameters with the variant's changes."""
    project = project or Project()
    return {**project.profile(PROFILE)[chapter], **_changes(chapter, variant, project)}


def stored_path(chapter: str, variant: str, project: Project | None = None) -> Path:
    project = project or Project()
    return project.root / RESULTS_DIR / f"{chapter}.{variant}.json"


def run(chapter: str, variant: str, project: Project | None = None, store: bool = False) -> dict:
    """Execute ``chapter`` with the variant's parameters (papermill, into a temporary folder: ``book/`` is not
    touched; cells tagged :data:`READS_RUNS` left out) and return its record: chapter, variant, profile, changes, parameters, commit, date, run time and
    the glued values. ``store``: also write it where :func:`read` finds it."""
    project = project or Project()
    changes = _changes(chapter, variant, project)  # bad input stops here, before any work
    params = {**project.profile(PROFILE)[chapter], **changes}
    with tempfile.TemporaryDirectory(prefix="mtllib-exercise-") as scratch:
        source = json.loads(project.source(chapter).read_text())
        source["cells"] = [c for c in source["cells"] if READS_RUNS not in c.get("metadata", {}).get("tags", [])]
        notebook, out = Path(scratch) / f"{chapter}.source.ipynb", Path(scratch) / f"{chapter}.ipynb"
        notebook.write_text(json.dumps(source))
        start = time.perf_counter()
        run_notebook(project, chapter, out, params, source=notebook)
        seconds = time.perf_counter() - start
        glued = {k: v for k, v in glued_values(out).items() if not k.startswith("fig")}
    record = {"chapter": chapter, "variant": variant, "profile": PROFILE, "changes": changes,
              "parameters": params, "commit": git_commit(project.root), "executed_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "run_time_s": round(seconds, 1), "glued": glued}
    if store:
        path = stored_path(chapter, variant, project)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def read(chapter: str, variant: str, project: Project | None = None) -> dict:
    """The stored run of a variant (see :func:`run`); :class:`mtllib.checks.BadInput` when there is none or when
    it ran with other parameters than the exercises file and the ``lab`` profile give now."""
    project = project or Project()
    wanted = parameters(chapter, variant, project)
    path = stored_path(chapter, variant, project)
    if not path.is_file():
        raise checks.BadInput(f"no stored run of exercise variant {variant!r} of {chapter!r} at {path}: "
                              f"make it with `python -m mtllib.book.exercises run {chapter} {variant} --store`")
    record = json.loads(path.read_text())
    if json.dumps(record.get("parameters"), sort_keys=True) != json.dumps(wanted, sort_keys=True):
        raise checks.BadInput(f"the stored run {path} ran with other parameters than {EXERCISES_FILE} and the {PROFILE} profile give now: "
                              f"re-run it (`python -m mtllib.book.exercises run {chapter} {variant} --store`)")
    return record


def glue_runs(chapter: str, keys, names=None, project: Project | None = None, glue=None) -> dict[str, dict]:
    """What a chapter's solution reads: the stored run of each variant (``names``, default every variant of the
    chapter in the exercises file, in its order; see :func:`read`), with each of ``keys`` that the run glued glued
    again as ``{variant}_{key}`` for the solution's table. ``keys``: glued names, or a mapping of glued name to the
    name used after the variant (``{"ex_D": "D"}`` glues the run's ``ex_D`` as ``alpha10_D``). Returns the records
    by variant. Every run and key is checked before anything is glued. ``glue``: ``myst_nb.glue`` unless given."""
    project = project or Project()
    keys = dict(keys) if isinstance(keys, dict) else {k: k for k in keys}
    names = list(names) if names is not None else list(variants(project).get(chapter, {}))
    if not names:
        raise checks.BadInput(f"{chapter!r} has no exercise variants in {EXERCISES_FILE}")
    records = {v: read(chapter, v, project) for v in names}
    for v, record in records.items():
        missing = sorted(set(keys) - set(record["glued"]))
        if missing:
            raise checks.BadInput(f"the stored run {stored_path(chapter, v, project)} glued no {', '.join(missing)}: the chapter glues "
                                  f"them now, so re-run it (`python -m mtllib.book.exercises run {chapter} {v} --store`)")
    if glue is None:
        from myst_nb import glue
    for v, record in records.items():
        for key, name in keys.items():
            glue(f"{v}_{name}", record["glued"][key], display=False)
    return records


def run_minutes(records: dict[str, dict]) -> str:
    """The run times of stored runs in minutes, one decimal, in order: ``"2.8 / 0.6 / 0.6"``."""
    return " / ".join(f"{r['run_time_s'] / 60:.1f}" for r in records.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtllib.book.exercises", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every chapter's exercise variants and what they change")
    p_run = sub.add_parser("run", help="run a chapter's variants under the lab profile and print what they glued")
    p_run.add_argument("chapter")
    p_run.add_argument("variants", nargs="*", help="variant names (default: every variant of the chapter)")
    p_run.add_argument("--store", action="store_true", help=f"write the stored runs the chapter's solutions read ({RESULTS_DIR})")
    args = parser.parse_args(argv)
    project = Project(root=REPO_ROOT)
    try:
        named = variants(project)
        if args.command == "list":
            for chapter, vs in named.items():
                for variant, changes in vs.items():
                    print(f"{chapter} {variant}: {', '.join(f'{k}={v!r}' for k, v in changes.items())}")
            return 0
        chosen = args.variants or list(named.get(args.chapter, {}))
        for variant in chosen:
            parameters(args.chapter, variant, project)  # every request checked before the first run
        if not chosen:
            raise checks.BadInput(f"{args.chapter!r} has no exercise variants in {EXERCISES_FILE}")
        for variant in chosen:
            print(f"{args.chapter} {variant} ...", flush=True)
            record = run(args.chapter, variant, project, store=args.store)
            print(f"  {record['run_time_s'] / 60:.1f} min; " + "; ".join(f"{k}={v}" for k, v in record["glued"].items() if not isinstance(v, str) or len(v) < 40))
    except (checks.BadInput, RunnerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
