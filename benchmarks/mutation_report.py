"""The mutation score of the book's core (issue 18), per module, from the last ``mutmut run``.

``make mutation`` runs mutmut over the modules listed under ``[tool.mutmut]`` in ``pyproject.toml`` (the
papers' formulas and the training mechanics) with the tests listed there, then this script. For every
module it counts the mutants the tests killed and those that survived; a survivor must be *accounted for*:
argued equivalent (it cannot change any result the library promises) in ``benchmarks/mutation_equivalent.yml``,
with the reason; or shown to need a GPU to be killed (a reason starting with ``GPU:``: a device transfer that
is a no-op on a CPU-only machine); or else it is listed as unaccounted with its diff, to be killed by a new test. It writes a
Markdown report and exits non-zero when a module scores below the bar or a survivor is unaccounted.

    .venv/bin/python benchmarks/mutation_report.py --out benchmarks/results/mutation.md

The score is killed / (killed + survived), in percent; mutants that no selected test reaches ("no tests")
and timeouts are shown apart. Mutant names carry a number that changes when the function changes, so the
equivalence file belongs to the commit it was written at (the report records it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import yaml

from mtllib.book.runner import git_commit

ROOT = Path(__file__).resolve().parents[1]
BAR = 85.0  #: percent of mutants killed per module (issue 18)


def status_names() -> dict:
    from mutmut.stats import status_by_exit_code

    return status_by_exit_code


def modules() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return list(config["only_mutate"])


def results(module: str) -> dict[str, str]:
    """``{mutant name: status}`` of ``module`` (a path such as ``mtllib/training/samplers.py``)."""
    meta = ROOT / "mutants" / f"{module}.meta"
    if not meta.exists():
        return {}
    status = status_names()
    found = {name: status[code] for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()}
    return {name: s for name, s in found.items() if s != "not checked"}  # outside the run's selection (MUTANTS)


def diff(name: str) -> str:
    """The changed lines of mutant ``name`` (``mutmut show``)."""
    out = subprocess.run([str(Path(sys.executable).parent / "mutmut"), "show", name], cwd=ROOT, capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def behaviours(entries: list[dict]) -> tuple[list[str], bool]:
    """Run each behaviour's test against its mutant alone (in mutants/, as mutmut does): it must fail."""
    import os

    lines = ["", "## Behaviours and a mutant each test kills", "",
             "Each test run alone against its mutant (`MUTANT_UNDER_TEST`); *killed* means the test failed (without the "
             "mutant every one passes: `make test`).", "",
             "| behaviour | test | mutant | result |", "|---|---|---|---|"]
    ok = True
    for e in entries:
        env = {**os.environ, "MUTANT_UNDER_TEST": e["mutant"], "OMP_NUM_THREADS": "1"}
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", e["test"]], cwd=ROOT / "mutants",
                             env=env, capture_output=True, text=True)
        killed = run.returncode == 1
        ok &= killed
        lines.append(f"| {e['behaviour']} | `{e['test'].split('::')[-1]}` | `{e['mutant'].split('.')[-1]}` | {'killed' if killed else f'NOT killed (exit {run.returncode})'} |")
    return lines, ok


def report(equivalent: dict[str, str]) -> tuple[str, bool]:
    commit = git_commit(ROOT)
    import mutmut

    lines = [f"# Mutation score of the core (mutmut {mutmut.__version__}, commit {commit})", "",
             f"Bar: at least {BAR:.0f}% of mutants killed per module; every survivor argued equivalent below or killed by a test. "
             "Of `mtllib/modeling/multitask.py` only the per-example loss and the checkpoints are mutated "
             "(`_per_example_loss`, `save_checkpoint`, `load_checkpoint`), "
             "of `mtllib/training/trainer.py` only the batch construction (`batch_indices`, `eval_batches`), "
             "of `mtllib/book/runner.py` only the staleness of executed copies (`Project.library_modules`, `source_hash`, "
             "`state`), of `mtllib/experiments/iap.py` only the pruning table (`pruning_table`): the Makefile's `MUTANTS`; the tests run are those listed under `[tool.mutmut]` in `pyproject.toml`.", "",
             "| module | mutants run | killed | survived: equivalent | survived: needs a GPU to kill | survived: unaccounted | not reached / timeout | score (%) |",
             "|---|---|---|---|---|---|---|---|"]
    details, ok = [], True
    for module in modules():
        found = results(module)
        if not found:
            lines.append(f"| `{module}` | not run | | | | | | |")
            ok = False
            continue
        counts = Counter(found.values())
        survivors = sorted(n for n, s in found.items() if s == "survived")
        gpu = [n for n in survivors if equivalent.get(n, "").startswith("GPU:")]
        argued = [n for n in survivors if n in equivalent and n not in gpu]
        open_ = [n for n in survivors if n not in equivalent]
        checked = counts["killed"] + counts["survived"]
        score = 100.0 * counts["killed"] / checked if checked else float("nan")
        other = sum(v for k, v in counts.items() if k not in ("killed", "survived"))
        ok &= score >= BAR and not open_
        lines.append(f"| `{module}` | {len(found)} | {counts['killed']} | {len(argued)} | {len(gpu)} | {len(open_)} | {other} | {score:.1f} |")
        for title, names in (("unaccounted", open_), ("needs a GPU", gpu), ("equivalent", argued)):
            for name in names:
                reason = equivalent.get(name, "**unaccounted: needs a test that kills it**")
                details.append(f"- `{name}` ({title}): {reason}\n\n  ```diff\n" + "\n".join("  " + d for d in diff(name).splitlines()) + "\n  ```")
    lines += ["", "## Survivors", ""] + (details or ["None."])
    return "\n".join(lines) + "\n", ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mutation.md")
    parser.add_argument("--equivalent", type=Path, default=ROOT / "benchmarks" / "mutation_equivalent.yml")
    parser.add_argument("--behaviours", type=Path, default=ROOT / "benchmarks" / "mutation_behaviours.yml",
                        help="behaviours, each with a test and a mutant it must kill (run against mutants/)")
    args = parser.parse_args(argv)
    if not (ROOT / "mutants").exists():
        print("no mutants/ folder: run `make mutation` (or `mutmut run`) first", file=sys.stderr)
        return 2
    equivalent = yaml.safe_load(args.equivalent.read_text()) if args.equivalent.exists() else {}
    text, ok = report(equivalent or {})
    if args.behaviours.exists():
        extra, killed_all = behaviours(yaml.safe_load(args.behaviours.read_text()))
        head, _, tail = text.partition("\n## Survivors")
        text = head + "\n".join(extra) + "\n\n## Survivors" + tail
        ok &= killed_all
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text.split("## Survivors")[0])
    print(f"report: {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
