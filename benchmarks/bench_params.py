"""Cost of checking the notebooks' parameters (:func:`mtllib.book.params.check_parameters`), the check every page
runs before any work and the test suite runs for every page under every profile.

Prints, measured side by side in one run: every page's ``cpu`` parameters checked with each offline task's splits
built once per process (:func:`mtllib.book.params.split_sizes`, as the library does) against the same checks with the
splits rebuilt for every check (as before that cache). Pages of the silver tasks (06f, 09*) are left out: their first
build labels text with spaCy and is cached on disk, so it would weigh on whichever side ran first.

    .venv/bin/python benchmarks/bench_params.py [--profile cpu]
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("MTLLIB_CACHE", tempfile.mkdtemp(prefix="mtllib-bench-"))  # no cache a previous run left

from mtllib.book import params, runner  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu")
    args = parser.parse_args()
    project = runner.Project()
    names = [n for n in project.notebook_names() if not n.startswith(("06f", "09"))]
    values = {n: {**runner.default_parameters(project.source(n)), **project.profile(args.profile)[n]} for n in names}
    params.check_parameters(values[names[0]], project.source_name(names[0]))  # imports and the corpora's first read

    def timed(rebuild: bool) -> float:
        params._built_sizes.cache_clear()
        start = time.perf_counter()
        for name in names:
            if rebuild:
                params._built_sizes.cache_clear()
            params.check_parameters(values[name], project.source_name(name))
        return time.perf_counter() - start

    rebuilt, once = timed(rebuild=True), timed(rebuild=False)
    print(f"{len(names)} pages, profile {args.profile}: splits rebuilt for every check {rebuilt:.1f} s; "
          f"built once per process {once:.1f} s; ratio {rebuilt / once:.1f}x")


if __name__ == "__main__":
    main()
