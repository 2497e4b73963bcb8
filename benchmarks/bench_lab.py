"""Every chapter under the ``lab`` profile, as a student's machine runs them: in order, from an empty model cache.

Chapters run one after another with papermill in a scratch folder (``book/`` is not touched), sharing one
new model cache (``$MTLLIB_CACHE`` is set to a fresh temporary folder), so a chapter that reuses an earlier
chapter's recipe (04 after 03, 08 after 07) finds its models there, as it would in a lab. For each chapter it
records the wall time and what the chapter's gate let through (the counts it glues: tasks learned, pairs or
targets in the verdicts, claims judged), and writes

- a JSON file (``{"chapters": [{"chapter", "seconds", "minutes", "within_budget", "glued": {...}}], "meta"}``),
- a Markdown table beside it (same stem, ``.md``) that the instructor's page includes.

    .venv/bin/python benchmarks/bench_lab.py --prefetch --json benchmarks/results/lab_cpu.json
    .venv/bin/python benchmarks/bench_lab.py --only 02_dual_task_iap --json /tmp/lab02.json --keep /tmp/lab
    .venv/bin/python benchmarks/bench_lab.py --only 03_multitask_iap 04_task_similarity --update --json benchmarks/results/lab_cpu.json

With ``--prefetch`` the new cache is first prepared as ``make prefetch`` prepares a lab machine (spaCy annotates
every silver task's texts), timed apart from the chapters (``meta["prefetch_seconds"]``, a line under the table).
With ``--update`` only the chapters run are replaced (a chapter that reuses another's models must be run with
it, in order: 04 and 05 after 03, 08 after 07); ``meta`` then describes the last run, and each row records the
commit and date it was measured at.

The lab budget is 5 minutes per chapter on 2 CPU cores (issue 17); a chapter over it is marked, not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

from mtllib.book.exercises import glued_values as glued
from mtllib.book.runner import Project, git_commit, run_notebook

BUDGET_MINUTES = 5.0
#: glued names that say what a chapter's gate let through: (count, its total under the names chapters use, label)
#: other glued names the table reads: few-shot targets judged, transfer targets learned, the copies a chapter read
SHOWN = ("judged", "learned", "not_learned", "sources")
COUNTS = (("n_learned", ("n_tasks",), "tasks learned"), ("n_verdict_pairs", ("n_pairs", "n_all_pairs"), "pairs in the verdicts"),
          ("n_judged", ("n_partners",), "partners judged"))


def what_it_shows(values: dict) -> str:
    parts = []
    for have, totals, label in COUNTS:
        total = next((values[t] for t in totals if t in values), None)
        if have in values and total is not None:
            parts.append(f"{label}: {values[have]} of {total}")
    if "judged" in values:
        parts.append(f"targets in the verdicts: {values['judged']}")
    if "learned" in values and "n_learned" not in values and "not_learned" in values:  # the transfer targets' gate
        parts.append(f"learned: {values['learned']}; not learned: {values['not_learned']}")
    if "sources" in values:  # a chapter that reads other chapters' executed copies instead of training
        profiles = sorted(set(re.findall(r"\((\w+) profile", values["sources"])))
        parts.append(f"read from the {' and '.join(profiles) or 'unknown'}-profile copies in book/, not this run's")
    if "n_claims" in values:
        verdicts = [(values[k], word) for k, word in (("n_hold", "hold"), ("n_not", "do not hold"), ("n_inconclusive", "inconclusive")) if k in values]
        parts.append(f"claims: {values['n_claims']}" + (f" ({', '.join(f'{n} {w}' for n, w in verdicts)})" if verdicts and values["n_claims"] != "\u2014" else ""))
    return "; ".join(parts) or "no claims (the chapter judges none)"


def markdown(rows: list[dict], prefetch_seconds: float | None = None) -> str:
    lines = ["| chapter | run time (min) | what the gate let through |", "|---|---|---|"]
    for r in rows:
        over = "" if r["within_budget"] else " (over the lab budget)"
        lines.append(f"| {r['chapter']} | {r['minutes']:.1f}{over} | {what_it_shows(r['glued'])} |")
    if prefetch_seconds is not None:
        lines += ["", f"Before the chapters, `make prefetch` prepared the empty cache in {prefetch_seconds / 60:.1f} min "
                      "(once per machine; not counted in any chapter's time)."]
    return "\n".join(lines) + "\n"


def prefetch() -> float:
    """What ``make prefetch`` does (spaCy annotates every silver task's texts into the cache); its wall time in s."""
    from mtllib.data import tasks

    start = time.perf_counter()
    for name in tasks.SILVER_TASKS:
        tasks.load_frames(name)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="lab")
    parser.add_argument("--only", nargs="*", help="chapters to run (default: all, in order)")
    parser.add_argument("--json", type=Path, required=True, help="where to write the results (and the .md table beside it)")
    parser.add_argument("--keep", type=Path, help="a folder to keep the executed notebooks in (default: a temporary one)")
    parser.add_argument("--prefetch", action="store_true",
                        help="prepare the empty cache as `make prefetch` does before the chapters (timed apart from them)")
    parser.add_argument("--update", action="store_true",
                        help="replace only the rows of the chapters run in an existing --json file (each row keeps its own commit and date)")
    args = parser.parse_args(argv)

    project = Project()
    profile = project.profile(args.profile)  # a missing or incomplete profile fails here, before any run
    names = args.only or project.notebook_names()
    unknown = [n for n in names if n not in profile]
    if unknown:
        parser.error(f"not in the {args.profile} profile: {', '.join(unknown)}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    rows = []
    with tempfile.TemporaryDirectory(prefix="mtllib-lab-") as scratch:
        os.environ["MTLLIB_CACHE"] = str(Path(scratch) / "cache")  # empty: a student's first run
        prefetch_seconds = None
        if args.prefetch:
            print("make prefetch ...", flush=True)
            prefetch_seconds = round(prefetch(), 1)
            print(f"    {prefetch_seconds / 60:.1f} min", flush=True)
        for i, name in enumerate(names, 1):
            print(f"[{i}/{len(names)}] {name} ...", flush=True)
            out = (args.keep or Path(scratch)) / f"{name}.ipynb"
            start = time.perf_counter()
            run_notebook(project, name, out, profile[name])
            seconds = time.perf_counter() - start
            row = {"chapter": name, "seconds": round(seconds, 1), "minutes": round(seconds / 60, 2),
                   "within_budget": seconds / 60 <= BUDGET_MINUTES, "commit": git_commit(project.root),
                   "executed_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "glued": {k: v for k, v in glued(out).items() if k.startswith("n_") or k in SHOWN}}
            rows.append(row)
            print(f"    {row['minutes']:.1f} min; {what_it_shows(row['glued'])}", flush=True)

    import torch

    if args.update and args.json.exists():
        ran = {r["chapter"] for r in rows}
        before = json.loads(args.json.read_text())
        kept = [r for r in before["chapters"] if r["chapter"] not in ran]
        if prefetch_seconds is None:  # the kept rows may have been measured after a prefetch: keep saying so
            prefetch_seconds = before["meta"].get("prefetch_seconds")
        order = {n: i for i, n in enumerate(project.notebook_names())}
        rows = sorted(kept + rows, key=lambda r: order.get(r["chapter"], len(order)))
    meta = {"profile": args.profile, "commit": git_commit(project.root), "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
            "torch": torch.__version__, "budget_minutes": BUDGET_MINUTES,
            "cache": "empty at the start, shared by the chapters" + (", prepared by make prefetch first" if args.prefetch else ""),
            "prefetch_seconds": prefetch_seconds,
            "executed_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.json.write_text(json.dumps({"chapters": rows, "meta": meta}, indent=1) + "\n")
    args.json.with_suffix(".md").write_text(markdown(rows, prefetch_seconds))
    print(f"wrote {args.json} and {args.json.with_suffix('.md')}")
    over = [r["chapter"] for r in rows if not r["within_budget"]]
    if over:
        print(f"over the {BUDGET_MINUTES:.0f}-minute lab budget: {', '.join(over)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
