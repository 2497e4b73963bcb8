"""Trainer speed and padding on the offline model (all-MiniLM-L6-v2) and two offline tasks.

Prints, measured side by side in one run:

- training throughput (examples/s) of :func:`mtllib.training.trainer.train` vs a minimal plain PyTorch loop over the
  same batches (same model, AdamW, clipping, schedule): target >= 0.97x;
- the share of real (non-padding) tokens in training batches with and without length grouping: target >= 90%;
- the cost of an IAT step (head update mask: zeroed gradients, restored slices) vs a plain step.

    .venv/bin/python benchmarks/bench_train.py [--examples 480] [--repeats 2]
"""

import argparse
import statistics
import time

import numpy as np
import torch

from mtllib.data.features import load_tokenizer
from mtllib.training.iat import HeadUpdateMask
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.runtime import quiet_notebook
from mtllib.training.trainer import TrainConfig, _Plan, _make_batch, batch_indices, train
from mtllib.data.features import prepare

TASKS = ["bbc-topic", "tweet-sentiment"]


def fresh_model(data):
    torch.manual_seed(0)
    return MultiTaskModel.from_pretrained("offline", [data[n].task.spec() for n in TASKS])


def plain_loop(data, config, batches):
    """The least a training loop can do: forward, backward, clip, AdamW, schedule."""
    model = fresh_model(data).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    total = len(batches)
    warmup = max(1, round(config.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: (s + 1) / warmup if s < warmup else (total - s) / (total - warmup))
    start = time.perf_counter()
    for batch in batches:
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def trainer_run(data, config):
    """Time the trainer's steps only (its end-of-epoch evaluation is not part of a plain loop)."""
    stamps = []
    train(fresh_model(data), data, config, progress=False, on_step=lambda step: stamps.append(time.perf_counter()))
    return stamps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=480, help="training examples per task")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    quiet_notebook()
    tokenizer = load_tokenizer("offline")
    data = prepare(TASKS, tokenizer, max_train=args.examples, max_eval=32)
    config = TrainConfig(epochs=1, batch_size=32, eval_batch_size=64)
    plan = _Plan(data, config)
    steps = plan.epoch(1)
    batches = [_make_batch(data, plan.examples, task, members) for task, members in steps]
    n_examples = sum(len(m) for _, m in steps)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(steps)} steps, {n_examples} examples, tasks {TASKS}")

    plain_t, trainer_t = [], []
    for _ in range(args.repeats):
        plain_t.append(plain_loop(data, config, batches))
        stamps = trainer_run(data, config)
        # the first step's stamp has no start: scale the remaining steps' time to all steps
        trainer_t.append((stamps[-1] - stamps[0]) * len(stamps) / (len(stamps) - 1))
    p, t = statistics.median(plain_t), statistics.median(trainer_t)
    print(f"plain PyTorch loop   {n_examples / p:7.1f} examples/s")
    print(f"mtllib.training.trainer.train   {n_examples / t:7.1f} examples/s   = {p / t:.3f}x the plain loop (target >= 0.97x)")

    full = prepare(TASKS, tokenizer)
    for group in (False, True):
        real = padded = 0
        for name in TASKS:
            lengths = np.array([len(x) for x in full[name].features["train"]["input_ids"]])
            for b in batch_indices(lengths, 32, np.random.default_rng(0), group):
                real += lengths[b].sum()
                padded += len(b) * lengths[b].max()
        print(f"real tokens in training batches, length grouping {'on ' if group else 'off'}: {100 * real / padded:5.1f}% (target >= 90% with grouping)")

    model = fresh_model(data).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    L, H = model.num_layers_heads
    masks = {n: torch.rand(L, H, generator=torch.Generator().manual_seed(i)) < 0.3 for i, n in enumerate(TASKS)}
    update = HeadUpdateMask(model, masks)
    sample = [(task, b) for (task, _), b in zip(steps, batches)][:6]

    def step(iat):
        times = []
        for task, batch in sample:
            start = time.perf_counter()
            model(**batch).loss.backward()
            if iat:
                update.zero_frozen_grads(task)
                update.step(task, optimizer)
            else:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    step(False)
    plain_step, iat_step = [], []
    for _ in range(args.repeats):
        plain_step.append(step(False))
        iat_step.append(step(True))
    a, b = statistics.median(plain_step), statistics.median(iat_step)
    print(f"training step, plain {a:.3f} s; with IAT head mask {b:.3f} s: overhead {100 * (b / a - 1):+.1f}%")


if __name__ == "__main__":
    main()
