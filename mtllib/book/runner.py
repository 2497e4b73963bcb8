"""Execute the source notebooks with papermill into ``book/``, and know which executed copies are stale.

Command line (what ``make book`` and ``make run`` call)::

    python -m mtllib.book.runner status [--profile cpu]
    python -m mtllib.book.runner run [--profile cpu] [--force | --missing] [NOTEBOOK ...]

``run`` re-executes the named notebooks, or else every notebook whose executed copy is missing or stale;
``--missing`` executes only those without an executed copy (and lists the stale ones with a warning);
``--force`` re-executes all. They run in name order, except that a chapter whose parameters name another
(06g's ``shared_from``, 09e's ``chapters``: it reads that chapter's executed copy) runs after it. A profile is
a YAML file ``notebooks/params/<profile>.yml`` that maps every notebook name to the parameters it runs with
(see ``notebooks/params/README.md``); ``notebooks/pages.yml`` names the pages made from another notebook's
source (:meth:`Project.pages`).

An executed copy is *stale* when the hash stored in its metadata differs from the hash of: the source
notebook's cells, the profile's parameters for it, the *normalised* source (:func:`mtllib.store.keys.code_version`:
docstrings, comments and layout do not count) of the ``mtllib`` modules the notebook imports, transitively (so
a change to the IAT code leaves the data chapter fresh), but for the parameter rules and the job machinery
(:data:`NOT_HASHED`), and the digests of the stored results the page reads (:mod:`mtllib.book.page_jobs`: a
result computed again with other numbers stales its pages, the code that computed it does not). Executed copies are
written atomically (a temporary file in ``book/``, then a rename), so a crash never leaves half a notebook.
Each records its profile, parameters, date, git commit and run time in ``metadata["mtllib"]`` and shows them
in a "Run record" box under its title.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import yaml

from mtllib.fingerprint import digest, imported_modules, module_closure
from mtllib.store.keys import code_version

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # mtllib/
REPO_ROOT = PACKAGE_DIR.parent
RUN_RECORD_TAG = "run-record"


class RunnerError(Exception):
    """A bad request (unknown profile, notebook or parameter); raised before any notebook runs."""


class NotebookFailed(RunnerError):
    """A notebook raised while executing; the message names the notebook, the cell and the error."""


#: modules left out of an executed copy's hash (not what they import, where the notebook reaches it otherwise):
#: the parameter rules of every notebook (:mod:`mtllib.book.params`) decide *whether* a notebook runs with its
#: parameters, never what it computes, so adding a chapter's rules leaves the other chapters fresh. That every
#: profile still passes the rules is tested (``tests/book/test_params.py``), not read from staleness.
#: A page reads stored results through the job machinery (:mod:`mtllib.experiments.jobs` and the experiments it
#: registers): their digests are in the hash instead of the code that computed them.
NOT_HASHED = ("mtllib.book.params", "mtllib.experiments.jobs", "mtllib.experiments.registry")
#: the file in ``notebooks/`` that names the pages made from another page's source notebook (:meth:`Project.pages`)
PAGES_FILE = "pages.yml"


def _say(message: str) -> None:
    print(message, flush=True)


@dataclass
class Project:
    """Where the source notebooks, the profiles and the executed copies live (tests point this at a tmp dir)."""

    root: Path = REPO_ROOT
    book_dir: Path | None = None
    library_dir: Path = PACKAGE_DIR
    _profiles: dict = field(default_factory=dict, repr=False)
    _pages: dict | None = field(default=None, repr=False)

    def __post_init__(self):
        self.root = Path(self.root)
        self.book_dir = Path(self.book_dir) if self.book_dir is not None else self.root / "book"

    @property
    def notebooks_dir(self) -> Path:
        return self.root / "notebooks"

    @property
    def params_dir(self) -> Path:
        return self.notebooks_dir / "params"

    @property
    def pages_file(self) -> Path:
        return self.notebooks_dir / PAGES_FILE

    # -- inventory -----------------------------------------------------------------------------------
    def pages(self) -> dict[str, str]:
        """The pages made from another source notebook, ``{page: source}`` (:data:`PAGES_FILE`; none when the
        file is absent): one experiment with other parameters (07c's Table 5 under annealed sampling, 07d its
        Table 12 under proportional), without a second copy of its code. A page is a notebook name like any
        other (an entry in every profile, an executed copy ``book/<page>.ipynb``); only its source is another's."""
        if self._pages is None:
            path, sources = self.pages_file, sorted(p.stem for p in self.notebooks_dir.glob("*.ipynb"))
            try:
                data = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
            except yaml.YAMLError as err:
                raise RunnerError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
            if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
                raise RunnerError(f"{path}: expected a mapping of page name -> source notebook name, got {data!r}")
            for page, source in data.items():
                if page in sources:
                    raise RunnerError(f"{path}: page {page!r} is a source notebook of its own (notebooks/{page}.ipynb): rename one")
                if source not in sources:
                    raise RunnerError(f"{path}: page {page!r} is made from {source!r}, which is not a source notebook; sources are: {', '.join(sources)}")
            self._pages = data
        return self._pages

    def notebook_names(self) -> list[str]:
        """Every page of the book that the runner executes: the source notebooks and the :meth:`pages`."""
        return sorted({p.stem for p in self.notebooks_dir.glob("*.ipynb")} | set(self.pages()))

    def profile_names(self) -> list[str]:
        return sorted(p.stem for p in self.params_dir.glob("*.yml"))

    def source_name(self, name: str) -> str:
        """The source notebook a page is executed from: its own, or the one :meth:`pages` names."""
        return self.pages().get(name, name)

    def source(self, name: str) -> Path:
        return self.notebooks_dir / f"{self.source_name(name)}.ipynb"

    def executed(self, name: str) -> Path:
        return self.book_dir / f"{name}.ipynb"

    # -- profiles ------------------------------------------------------------------------------------
    def profile(self, profile: str) -> dict[str, dict]:
        """``{notebook: {param: value}}`` for a profile, checked against the notebooks' parameter cells."""
        if profile in self._profiles:
            return self._profiles[profile]
        choices = self.profile_names()
        if profile not in choices:
            raise RunnerError(f"unknown profile {profile!r}; choose one of: {', '.join(choices)}")
        path = self.params_dir / f"{profile}.yml"
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise RunnerError(f"{where}: not valid YAML ({problem})") from None
        if not isinstance(data, dict) or not all(isinstance(v, (dict, type(None))) for v in data.values()):
            raise RunnerError(f"{path}: expected a mapping of notebook name -> mapping of parameters")
        names = self.notebook_names()
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise RunnerError(f"{path}: unknown notebook(s) {unknown}; notebooks are: {', '.join(names)}")
        missing = sorted(set(names) - set(data))
        if missing:
            raise RunnerError(f"{path}: no entry for notebook(s) {missing} (an empty mapping `{{}}` is fine)")
        params = {name: dict(data[name] or {}) for name in names}
        for name, values in params.items():
            declared = declared_parameters(self.source(name))
            bad = sorted(set(values) - set(declared))
            if bad:
                raise RunnerError(
                    f"{path}: notebook {name!r} has no parameter(s) {bad}; its parameters are: {', '.join(declared)}"
                )
        self._profiles[profile] = params
        return params

    # -- staleness -----------------------------------------------------------------------------------
    def library_modules(self, name: str) -> list[str]:
        """The ``mtllib`` modules the notebook imports (its code cells, scanned without running them)."""
        nb = json.loads(self.source(name).read_text())
        found = set()
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            # IPython magics and shell lines become `pass` at their indentation (dropped, one inside a block would
            # leave the block empty and the scan would fail)
            lines = [line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines()]
            found |= imported_modules("\n".join(lines))
        return sorted(found)

    def hashed_files(self, name: str) -> list[Path]:
        """The library files whose normalised source is in ``name``'s hash: the closure of the modules it
        imports, less :data:`NOT_HASHED` (nor what only they reach)."""
        modules = [m for m in self.library_modules(name) if m not in NOT_HASHED]
        return module_closure(modules, self.library_dir, exclude=NOT_HASHED)

    def results_read(self, name: str, parameters: dict, profile: str = "cpu") -> list:
        """The digest of every stored result the page reads with ``parameters`` (``["not stored", key]`` for
        one that is missing, stale or corrupt); empty for a page that declares no jobs."""
        from mtllib.book import page_jobs
        from mtllib.experiments import jobs
        from mtllib.store.results import Store

        source = self.source_name(name)
        if source not in page_jobs.DECLARED:
            return []
        store, out = Store(profile=profile), []
        for job in page_jobs.DECLARED[source]({**default_parameters(self.source(name)), **parameters}):
            result = store.read(job.experiment, job.spec_id) if jobs.state(job, store) == "fresh" else None
            out.append([job.name, result.digest if result is not None else ["not stored", job.key]])
        return out

    def source_hash(self, name: str, parameters: dict, profile: str = "cpu") -> str:
        """What determines an executed copy: the source notebook's cells (markdown too: the page shows it),
        its parameters, the normalised source of :meth:`hashed_files` and :meth:`results_read`. A change to a
        module the notebook does not reach, or to a docstring or comment, leaves it fresh."""
        nb = json.loads(self.source(name).read_text())
        cells = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"]) for c in nb["cells"]]
        modules = [m for m in self.library_modules(name) if m not in NOT_HASHED]
        code = code_version(modules, exclude=NOT_HASHED, package_dir=self.library_dir)  # nor reached through another module
        return digest("page/2", cells, parameters, code, self.results_read(name, parameters, profile))

    def state(self, name: str, profile: str) -> str:
        """``"missing"``, ``"stale"`` or ``"fresh"`` for the executed copy of ``name`` under ``profile``."""
        path = self.executed(name)
        if not path.exists():
            return "missing"
        try:  # a copy that cannot be read (truncated, not UTF-8, not a notebook) is stale, never an error
            stored = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("mtllib", {}).get("source_hash")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return "stale"
        return "fresh" if stored == self.source_hash(name, self.profile(profile)[name], profile) else "stale"


def declared_parameters(path: Path) -> list[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (papermill's own parser)."""
    import papermill

    return list(papermill.inspect_notebook(str(path)).keys())


def default_parameters(path: Path) -> dict:
    """The values the notebook's cell tagged ``parameters`` assigns (its defaults, papermill's parser), as Python
    values."""
    import ast

    import papermill

    return {k: ast.literal_eval(v["default"]) for k, v in papermill.inspect_notebook(str(path)).items()}


def git_commit(root: Path) -> str:
    """Short commit of ``root``, with ``-dirty`` when tracked files outside ``book/`` have changes;
    ``"unknown"`` outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        # executed copies in book/ are this runner's own outputs: they do not make the code dirty
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)book"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def _format_duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{seconds:.1f} s"


def _run_record_cell(record: dict):
    import nbformat

    params = ", ".join(f"`{k}={v!r}`" for k, v in record["parameters"].items()) or "the notebook's defaults"
    text = (
        "```{admonition} Run record\n"
        f"Executed with profile **{record['profile']}** on {record['executed_at']} "
        f"at commit `{record['commit']}` in {_format_duration(record['run_time_s'])} "
        f"(Python {record['python']}, torch {record['torch']}, {record.get('threads', '?')} CPU threads).\n"
        f"Parameters: {params}.\n"
        + (f"Source: `{record['source']}` with these parameters.\n" if record.get("source") else "")
        + "```"
    )
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = [RUN_RECORD_TAG]
    cell["id"] = RUN_RECORD_TAG
    return cell


def relabel(nb, source: str, page: str) -> None:
    """Give a page made from another page's source its own cross-reference labels, in place: in the markdown
    cells, every label of the source's chapter (``ex-07c-steps``, ``fig-07c-gains``: a kind, the chapter's number,
    a name) gets the page's number (``ex-07d-steps``), so the two pages' labels do not collide in the book."""
    import re

    old, new = source.split("_")[0], page.split("_")[0]
    pattern = re.compile(rf"\b([a-z]+)-{re.escape(old)}-(?=[a-z0-9])")
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = pattern.sub(rf"\1-{new}-", cell.source)


def run_notebook(project: Project, name: str, out: Path, parameters: dict, source: Path | None = None) -> None:
    """papermill as the book runs it: the source of ``name`` (or the notebook at ``source``, e.g. a copy with
    cells left out) with ``parameters`` into ``out``, from the notebooks' folder (so relative paths resolve as
    in the book), without a progress bar."""
    import papermill

    papermill.execute_notebook(str(source or project.source(name)), str(out), parameters=parameters, kernel_name="python3",
                               progress_bar=False, cwd=str(project.notebooks_dir))



def execute(project: Project, name: str, profile: str) -> Path:
    """Execute one notebook with the profile's parameters into ``book/`` atomically; return the output path."""
    import nbformat
    import papermill
    import torch

    parameters = project.profile(profile)[name]
    source_hash = project.source_hash(name, parameters, profile)  # what is about to run, not what is there afterwards
    commit = git_commit(project.root)
    project.book_dir.mkdir(parents=True, exist_ok=True)
    for leftover in project.book_dir.glob(f".{name}.*.partial.ipynb"):  # from a run that was killed outright
        leftover.unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial.ipynb", dir=project.book_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    start = time.perf_counter()
    try:
        try:
            with mock.patch.dict(os.environ, {"MTLLIB_PROFILE": profile}):  # its kernel stores results under the profile
                run_notebook(project, name, tmp, parameters)
        except papermill.PapermillExecutionError as err:
            cell = _source_cell(tmp, err.cell_index)
            kept = _keep_failed(project, tmp, name, profile)
            first_line = next((line for line in err.source.splitlines() if line.strip()), "")
            raise NotebookFailed(
                f"notebook {name!r} failed in {cell} ({first_line.strip()!r}): {err.ename}: {err.evalue}\n"
                f"the failed copy, with its traceback, is kept at {kept}"
            ) from None
        except Exception as err:
            if type(err).__name__ != "DeadKernelError":
                raise
            running = _running_cell(tmp)
            kept = _keep_failed(project, tmp, name, profile)
            raise NotebookFailed(
                f"notebook {name!r}: the kernel died while running {running} (out of memory? try a smaller profile "
                f"or fewer examples); the partial copy is kept at {kept}"
            ) from None
        elapsed = time.perf_counter() - start
        nb = nbformat.read(tmp, as_version=4)
        record = {
            "profile": profile,
            "parameters": parameters,
            "source_hash": source_hash,
            "commit": commit,
            "executed_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "run_time_s": round(elapsed, 1),
            "python": ".".join(map(str, sys.version_info[:3])),
            "torch": torch.__version__,
            # same seed, profile and thread count give the same numbers on a CPU; 1 and 2 threads differ by ~1e-6
            "threads": torch.get_num_threads(),
        }
        if project.source_name(name) != name:  # a page made from another page's source
            record["source"] = f"notebooks/{project.source_name(name)}.ipynb"
            relabel(nb, project.source_name(name), name)
        nb.metadata["mtllib"] = record
        nb.cells = [c for c in nb.cells if RUN_RECORD_TAG not in c.metadata.get("tags", [])]
        nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, _run_record_cell(record))
        nbformat.write(nb, tmp)
        final = project.executed(name)
        os.replace(tmp, final)
        return final
    finally:
        tmp.unlink(missing_ok=True)


FAILED_DIR = "runs/failed"  #: git-ignored; the book never reads it


def _keep_failed(project: Project, tmp: Path, name: str, profile: str) -> Path:
    """Move a failed executed copy out of ``book/`` into :data:`FAILED_DIR`, for its traceback."""
    target = project.root / FAILED_DIR / f"{name}.{profile}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if tmp.exists():
        os.replace(tmp, target)
    return target


def _read(path: Path):
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception:
        return None


def _describe(cells: list, index: int) -> str:
    """``cells``: the executed copy's cells; ``index`` one of them. Papermill's injected-parameters cell is
    not in the source, so it is not counted."""
    added = ("injected-parameters", "papermill-error-cell-tag")
    source = [c for c in cells[: index + 1] if not set(added) & set(c.metadata.get("tags", []))]
    return f"cell {len(source)} of the source notebook (code cell {sum(1 for c in source if c.cell_type == 'code')})"


def _source_cell(path: Path, executed_index: int) -> str:
    """Where the failing cell (the code cell with an error output) sits in the *source* notebook; papermill
    adds cells to the executed copy (parameters, error markers), so ``executed_index`` alone would mislead."""
    nb = _read(path)
    failing = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))), None) if nb is not None else None
    if failing is None:
        return f"cell {executed_index} of the executed copy"
    return _describe(nb.cells, failing)


def _running_cell(path: Path) -> str:
    nb = _read(path)
    for i, c in enumerate(nb.cells if nb is not None else []):
        if c.metadata.get("papermill", {}).get("status") == "running":
            return _describe(nb.cells, i)
    return "an unknown cell"


def select(project: Project, profile: str, names: list[str], force: bool = False, missing_only: bool = False) -> tuple[list[str], list[str]]:
    """Validate the request and return ``(to_run, stale_not_run)``; raises :class:`RunnerError` before any work."""
    all_names = project.notebook_names()
    unknown = [n for n in names if n not in all_names]
    if unknown:
        raise RunnerError(f"unknown notebook(s) {unknown}; notebooks are: {', '.join(all_names)}")
    project.profile(profile)  # validates the profile and every parameter in it
    if names:
        return list(names), []
    states = {n: project.state(n, profile) for n in all_names}
    if force:
        return all_names, []
    if missing_only:
        return [n for n in all_names if states[n] == "missing"], [n for n in all_names if states[n] == "stale"]
    return [n for n in all_names if states[n] != "fresh"], []


def reads(project: Project, profile: str, name: str) -> list[str]:
    """The chapters whose executed copies ``name`` reads under ``profile``: every parameter value that names
    another notebook, alone or in a list (09e's ``chapters``, 06g's ``shared_from``)."""
    names = set(project.notebook_names()) - {name}
    found = []
    for value in project.profile(profile)[name].values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v in names and v not in found:
                found.append(v)
    return found


def in_reading_order(project: Project, profile: str, to_run: list[str]) -> list[str]:
    """``to_run`` reordered so that a chapter runs after every chapter in ``to_run`` whose executed copy it
    reads (:func:`reads`), the given order kept otherwise (the runner's is by name: 06g reads 07c)."""
    needs = {n: set(reads(project, profile, n)) for n in to_run}
    ordered, pending = [], list(to_run)
    while pending:
        ready = next((n for n in pending if not needs[n] & (set(pending) - {n})), pending[0])  # a cycle: the given order
        ordered.append(ready)
        pending.remove(ready)
    return ordered


def run(project: Project, profile: str, names: list[str], force: bool = False, missing_only: bool = False, log=_say) -> list[Path]:
    """Execute the selected notebooks one by one, stopping at the first failure."""
    to_run, stale = select(project, profile, names, force=force, missing_only=missing_only)
    to_run = in_reading_order(project, profile, to_run)
    for n in stale:
        log(f"warning: book/{n}.ipynb is stale for profile {profile!r} (re-run with `make run NB={n}`)")
    if not to_run:
        log(f"nothing to execute for profile {profile!r}: every executed notebook is up to date")
    outputs = []
    for i, n in enumerate(to_run, 1):
        log(f"[{i}/{len(to_run)}] {n} (profile {profile}) ...")
        start = time.perf_counter()
        outputs.append(execute(project, n, profile))
        log(f"[{i}/{len(to_run)}] {n} done in {_format_duration(time.perf_counter() - start)}")
    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtllib.book.runner", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_status = sub.add_parser("status", help="show which executed notebooks are missing, stale or fresh")
    p_run = sub.add_parser("run", help="execute missing/stale notebooks, or the named ones, into book/")
    for p in (p_status, p_run):
        p.add_argument("--profile", default="cpu", help="parameter profile in notebooks/params (default: cpu)")
    p_run.add_argument("notebooks", nargs="*", help="notebook names (file stems) to execute")
    group = p_run.add_mutually_exclusive_group()
    group.add_argument("--force", action="store_true", help="re-execute every notebook")
    group.add_argument("--missing", action="store_true", help="only notebooks with no executed copy; warn about stale ones")
    args = parser.parse_args(argv)
    project = Project()
    try:
        if args.command == "status":
            project.profile(args.profile)
            for n in project.notebook_names():
                print(f"{project.state(n, args.profile):8s} {n}")
            return 0
        names = [Path(n).stem for n in args.notebooks]
        run(project, args.profile, names, force=args.force, missing_only=args.missing)
    except NotebookFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except RunnerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
