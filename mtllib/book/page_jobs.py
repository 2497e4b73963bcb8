"""Which stored results each page reads, and the commands over them (``make results``, the jobs half of
``make status``; issue 60).

A page names its jobs through its parameters: :data:`DECLARED` maps a source notebook to a function from the
page's parameters (its defaults with the profile's values over them) to the :class:`~mtllib.experiments.jobs.Job`
list it reads. A profile's jobs are the union over its pages. ``ONLY`` picks some of them by page name,
experiment name, job name (``experiment/spec id``) or spec id.

Commands::

    python -m mtllib.book.page_jobs plan   [--profile cpu] [--only NAMES]   what would be computed, and its cost
    python -m mtllib.book.page_jobs run    [--profile cpu] [--only NAMES]   compute what is missing or stale
    python -m mtllib.book.page_jobs status [--profile cpu]                  jobs per page: fresh, stale, missing

``run`` fans jobs out as :mod:`mtllib.experiments.sweep` is told by ``--engine``/``--devices``/``--workers``/
``--address`` or its environment variables (``MTLLIB_SWEEP_DEVICES=cuda:0,cuda:1``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable

from mtllib import checks
from mtllib.experiments import jobs
from mtllib.store.results import Store


def _data_chapter(params: dict) -> list[jobs.Job]:
    """Chapter 01: the surface baselines of every offline task that has them, on its full splits."""
    from mtllib.analysis.surface import KINDS
    from mtllib.data.tasks import OFFLINE_TASKS, get_task

    return [jobs.Job("surface-baselines", task=t) for t in OFFLINE_TASKS if get_task(t).kind in KINDS]


#: source notebook -> its jobs, from the page's parameters
DECLARED: dict[str, Callable[[dict], list]] = {
    "01_offline_model_and_data": _data_chapter,
}


def results(source: str, params: dict, store: Store | None = None, progress: bool = True) -> dict:
    """What a page reads: ``{job: result}`` for every job that ``source``'s parameters ``params`` name (a page
    passes its ``globals()``), read from the store, or computed and stored where missing or stale."""
    if source not in DECLARED:
        raise checks.BadInput(f"notebook {source!r} declares no jobs; these do: {', '.join(DECLARED)}")
    store = store or Store()
    return {job: jobs.get(job, store, progress=progress) for job in DECLARED[source](params)}


def page_parameters(project, profile: str) -> dict[str, dict]:
    """Every page's parameters under ``profile``: the source notebook's defaults, the profile's values over them."""
    from mtllib.book.runner import default_parameters

    overrides = project.profile(profile)
    return {page: {**default_parameters(project.source(page)), **values} for page, values in overrides.items()}


def profile_jobs(project, profile: str, declared: dict | None = None) -> dict[str, list]:
    """``{page: [Job, ...]}`` for every page of ``profile`` whose source declares jobs (:data:`DECLARED`)."""
    declared = DECLARED if declared is None else declared
    params = page_parameters(project, profile)
    return {page: declared[project.source_name(page)](values) for page, values in params.items() if project.source_name(page) in declared}


def select(by_page: dict[str, list], only: list[str]) -> list:
    """The jobs of ``by_page`` that ``only`` names (all when it is empty), once each, in page order. A name that
    matches nothing is :class:`mtllib.checks.BadInput`, listing what can be named."""
    everything = list(dict.fromkeys(j for page_jobs in by_page.values() for j in page_jobs))
    if not only:
        return everything
    chosen, unmatched = [], []
    for name in only:
        hits = by_page.get(name) or [j for j in everything if name in (j.experiment, j.name, j.spec_id)]
        if not hits:
            unmatched.append(name)
        chosen += hits
    if unmatched:
        experiments = sorted({j.experiment for j in everything})
        raise checks.BadInput(f"ONLY names nothing for {unmatched}: name pages ({', '.join(by_page) or 'none declare jobs'}), "
                              f"experiments ({', '.join(experiments) or 'none'}) or jobs (experiment/spec id)")
    return list(dict.fromkeys(chosen))


def _names(values: list[str]) -> list[str]:
    return [n for v in values for n in re.split(r"[,\s]+", v) if n]


def status_lines(by_page: dict[str, list], store: Store) -> list[str]:
    """One line per page: how many of its jobs are fresh, stale, missing or corrupt."""
    lines = []
    for page, page_jobs in by_page.items():
        states = [jobs.state(j, store) for j in page_jobs]
        counts = ", ".join(f"{states.count(s)} {s}" for s in jobs.STATES if s in states) or "no jobs"
        lines.append(f"{'fresh' if set(states) <= {'fresh'} else 'to run':8s} {page}: {len(page_jobs)} jobs ({counts})")
    return lines


def main(argv: list[str] | None = None, project=None) -> int:
    from mtllib.book.runner import Project, RunnerError
    from mtllib.experiments import sweep

    parser = argparse.ArgumentParser(prog="python -m mtllib.book.page_jobs", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {name: sub.add_parser(name, help=text) for name, text in
                [("plan", "show what would be computed"), ("run", "compute missing and stale jobs"), ("status", "jobs per page")]}
    for p in commands.values():
        p.add_argument("--profile", default="cpu", help="parameter profile in notebooks/params (default: cpu)")
    for name in ("plan", "run"):
        commands[name].add_argument("--only", action="append", default=[], help="pages, experiments or jobs (comma-separated)")
    run = commands["run"]
    run.add_argument("--engine", choices=sweep.ENGINES, help="serial (default), processes or ray")
    run.add_argument("--devices", help="comma-separated devices, one worker each (e.g. cuda:0,cuda:1)")
    run.add_argument("--workers", type=int)
    run.add_argument("--address", help="a running Ray cluster")
    args = parser.parse_args(argv)
    project = project or Project()
    try:
        store = Store(profile=args.profile)
        by_page = profile_jobs(project, args.profile)
        if args.command == "status":
            print("\n".join(status_lines(by_page, store)) or f"no page of profile {args.profile!r} reads stored results")
            return 0
        todo = select(by_page, _names(args.only))
        if args.command == "plan":
            print(jobs.describe(jobs.plan(todo, store)))
            return 0
        fanout = sweep.from_environment()
        fanout |= {k: v for k, v in {"engine": args.engine, "workers": args.workers, "address": args.address}.items() if v is not None}
        if args.devices:
            fanout["devices"] = [d.strip() for d in args.devices.split(",") if d.strip()]
            fanout.setdefault("engine", "processes")
        jobs.run(todo, store, **fanout)
    except (checks.BadInput, RunnerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except sweep.SweepFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
