"""CPU bf16 autocast against fp32: speed, head-importance ranking and scores, side by side in one run.

The cpu profile may opt in to ``cpu_bf16`` only if this benchmark passes on the machine that executes the
book: the CPU has native bf16 (avx512_bf16 or AMX), training is faster, the Eq. 4 importance of one trained
model ranks heads alike in both precisions (Spearman >= 0.95), and test scores differ by less than their
noise (the 95% bootstrap half-width of the fp32 score).

    .venv/bin/python benchmarks/bench_bf16.py [--examples 320] [--force]

It writes ``benchmarks/results/bf16_cpu.json`` (figures, verdict, machine, threads, commit). Without native bf16
it prints so and stops; ``--force`` runs the comparison anyway, but both arms then run in
fp32 (the library never emulates bf16 on a CPU), which only checks the script itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch
from scipy import stats

from mtllib.analysis.importance import head_importance
from mtllib.analysis.stats import bootstrap_interval
from mtllib.data import metrics as metric_fns
from mtllib.data.features import collate, load_tokenizer, prepare
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.runtime import autocast, cpu_flags, native_cpu_bf16, quiet_notebook, seed_everything
from mtllib.store import records
from mtllib.store.results import REPO_ROOT
from mtllib.training.trainer import TrainConfig, batch_indices, predict, train

TASK = "bbc-topic"


def steps_per_second(model, batches, cpu_bf16: bool) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()
    start = time.perf_counter()
    for batch in batches:
        with autocast(torch.device("cpu"), cpu_bf16=cpu_bf16):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return len(batches) / (time.perf_counter() - start)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=320, help="training examples for the timing and the model")
    parser.add_argument("--force", action="store_true", help="run even without native bf16 (both arms then fp32)")
    args = parser.parse_args(argv)
    quiet_notebook()
    native = native_cpu_bf16()
    print(f"CPU bf16 flags: {sorted(cpu_flags() & {'avx512_bf16', 'amx_bf16'}) or 'none'}; torch threads {torch.get_num_threads()}")
    if not native and not args.force:
        print("verdict: FAIL (no native bf16 on this CPU): the cpu profile stays fp32")
        return 0
    tokenizer = load_tokenizer("offline")
    data = prepare([TASK], tokenizer, max_train=args.examples, max_eval=400, max_length=64)
    feats = data[TASK].features["train"].to_list()
    batches = [collate([feats[i] for i in b], tokenizer.pad_token_id, task=TASK) for b in batch_indices(np.array([len(f["input_ids"]) for f in feats]), 32, np.random.default_rng(0), True)]

    def fresh():
        seed_everything(0)
        return MultiTaskModel.from_pretrained("offline", [data[TASK].task.spec()])

    speed = {}
    for precision in ("fp32", "bf16", "fp32 again"):  # fp32 twice: the machine's own noise, side by side
        speed[precision] = steps_per_second(fresh(), batches, precision == "bf16")
    print(f"training steps/s: fp32 {speed['fp32']:.2f}, bf16 {speed['bf16']:.2f}, fp32 again {speed['fp32 again']:.2f}; "
          f"bf16/fp32 = {speed['bf16'] / np.mean([speed['fp32'], speed['fp32 again']]):.2f}x")

    model = fresh()
    train(model, data, TrainConfig(epochs=2, batch_size=32, lr=1e-4), progress=False)
    start = time.perf_counter()
    fp32_preds, golds = predict(model, data[TASK], "test")
    t32 = time.perf_counter() - start
    start = time.perf_counter()
    bf16_preds, _ = predict(model, data[TASK], "test", cpu_bf16=True)
    t16 = time.perf_counter() - start
    imp32 = head_importance(model, batches[:8], progress=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        imp16 = head_importance(model, batches[:8], progress=False)
    rho = stats.spearmanr(imp32.flatten().numpy(), imp16.flatten().numpy()).statistic
    s32 = metric_fns.accuracy(fp32_preds, golds) * 100
    s16 = metric_fns.accuracy(bf16_preds, golds) * 100
    half = bootstrap_interval(100.0 * (np.asarray(fp32_preds) == np.asarray(golds))).half_width
    print(f"evaluation: fp32 {t32:.1f} s, bf16 {t16:.1f} s ({t32 / t16:.2f}x); test accuracy fp32 {s32:.2f}, bf16 {s16:.2f} "
          f"(difference {s16 - s32:+.2f}, fp32 95% CI half-width {half:.2f}); importance Spearman {rho:.3f}")
    passed = native and speed["bf16"] > max(speed["fp32"], speed["fp32 again"]) and rho >= 0.95 and abs(s16 - s32) <= half
    print(f"verdict: {'PASS' if passed else 'FAIL'}")
    summary = {"benchmark": "bf16", "task": TASK, "train_examples": args.examples, "training_steps_per_s": speed,
               "training_speedup": speed["bf16"] / np.mean([speed["fp32"], speed["fp32 again"]]),
               "evaluation_seconds": {"fp32": t32, "bf16": t16}, "evaluation_speedup": t32 / t16,
               "test_accuracy": {"fp32": s32, "bf16": s16}, "fp32_ci_half_width": half, "importance_spearman": float(rho),
               "native_bf16": native, "verdict": "PASS" if passed else "FAIL",
               "machine": records.machine("cpu"), "commit": records.commit(REPO_ROOT), "written_at": records.now()}
    (REPO_ROOT / "benchmarks" / "results" / "bf16_cpu.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
