"""Models *trained* in CPU bf16 autocast against models trained in fp32: do the scores and predictions agree?

``bench_bf16.py`` times both precisions and evaluates one fp32-trained model in each; this benchmark trains
the GLUE-like suite's multi-task model (chapter 07c's tasks, sizes and recipe) in both precisions for the same
seeds (same initialisation, same batches), as jobs of the results store, and compares per task and seed:
validation and test scores, the share of test predictions that agree, and the training time. The seed-to-seed
difference of the fp32 models is the yardstick: bf16 passes when its paired differences are no larger.

    .venv/bin/python benchmarks/bench_bf16_training.py [--seeds 0 1]

Results: ``benchmarks/results/bf16_training_cpu.json`` (with machine, threads and commit); the jobs' own
results in ``benchmarks/results/jobs/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import yaml

from mtllib.data.tasks import get_task
from mtllib.experiments import jobs
from mtllib.runtime import native_cpu_bf16
from mtllib.store import records
from mtllib.store.results import REPO_ROOT, Store

OUT = REPO_ROOT / "benchmarks" / "results"


def spec(params: dict, seed: int, bf16: bool) -> jobs.Job:
    return jobs.Job("multitask", tasks=params["tasks"], max_train=params["max_train"], max_eval=params["max_eval"],
                    max_length=params["max_length"], epochs=params["epochs"], batch_size=params["batch_size"], lr=1e-4,
                    sampler=params["sampler"], seed=seed, cpu_bf16=bf16)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args(argv)
    if not native_cpu_bf16():
        print("this CPU has no native bf16: both arms would run in fp32, nothing to compare")
        return 1
    params = yaml.safe_load((REPO_ROOT / "notebooks" / "params" / "cpu.yml").read_text())["07c_iat_glue_like"]
    store = Store(OUT / "jobs", "cpu")
    arms = {(s, b): spec(params, s, b) for s in args.seeds for b in (False, True)}
    jobs.run(list(arms.values()), store)
    results = {k: jobs.get(j, store, progress=False) for k, j in arms.items()}

    def scores(result, split):
        t = result.tables["scores"]
        return t[t.split == split].set_index("task").score

    rows, paired, across = [], [], []
    for seed in args.seeds:
        fp, bf = results[(seed, False)], results[(seed, True)]
        p32, p16 = fp.tables["predictions"], bf.tables["predictions"]
        for task in params["tasks"]:
            sel = lambda p: p[(p.task == task) & (p.split == "test")].prediction.to_numpy()  # noqa: E731
            a, b = sel(p32), sel(p16)
            regression = get_task(task).kind == "regression"  # no two float predictions are equal: their correlation instead
            rows.append({"seed": seed, "task": task, "fp32_validation": scores(fp, "validation")[task], "bf16_validation": scores(bf, "validation")[task],
                         "fp32_test": scores(fp, "test")[task], "bf16_test": scores(bf, "test")[task],
                         "test_predictions_agree" if not regression else "test_predictions_pearson":
                             float(np.mean(a == b)) if not regression else float(np.corrcoef(a.astype(float), b.astype(float))[0, 1])})
            paired.append(abs(rows[-1]["bf16_test"] - rows[-1]["fp32_test"]))
    for a, b in zip(args.seeds, args.seeds[1:]):
        across += list((scores(results[(a, False)], "test") - scores(results[(b, False)], "test")).abs())
    seconds = {("bf16" if b else "fp32") + f"_seed{s}": results[(s, b)].record["seconds"] for (s, b) in arms}
    speedup = np.mean([results[(s, False)].record["seconds"] / results[(s, True)].record["seconds"] for s in args.seeds])
    verdict = "PASS" if np.mean(paired) <= np.mean(across) else "FAIL"
    summary = {
        "benchmark": "bf16_training", "what": "GLUE-like multi-task model (07c's tasks, sizes, recipe) trained in fp32 and in CPU bf16 autocast, same seeds",
        "rows": rows, "mean_abs_test_difference_bf16_vs_fp32": float(np.mean(paired)),
        "mean_abs_test_difference_fp32_seed_to_seed": float(np.mean(across)) if across else None,
        "training_seconds": seconds, "training_speedup_bf16": float(speedup), "verdict": verdict,
        "rule": "PASS when the mean absolute test difference between precisions (paired by seed) is at most the fp32 seed-to-seed one",
        "machine": records.machine("cpu"), "commit": records.commit(REPO_ROOT), "written_at": records.now(),
    }
    path = OUT / "bf16_training_cpu.json"
    path.write_text(json.dumps(summary, indent=1, default=float) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
