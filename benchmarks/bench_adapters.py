"""What adaptation modules cost in time, beside what they cost in parameters ("BERT and PALs", Table 1).

Trains the offline model (all-MiniLM-L6-v2) on two offline tasks with each method, side by side in one run
(same batches, same seed), and prints training throughput relative to the fully shared model, with the
parameter multiplier for the same number of tasks. PALs and low-rank layers use the paper's per-task budget
carried over to this encoder (:func:`mtllib.modeling.adapters.size_for_budget`).

    .venv/bin/python benchmarks/bench_adapters.py [--examples 256] [--repeats 2] [--methods shared pals low_rank lhuc]
"""

import argparse
import statistics
import time

import torch
from transformers import AutoConfig, BertConfig

from mtllib.data.assets import resolve_model
from mtllib.data.features import load_tokenizer, prepare
from mtllib.modeling import adapters as ad
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.runtime import quiet_notebook
from mtllib.training.trainer import TrainConfig, train

TASKS = ["bbc-topic", "tweet-sentiment"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=256, help="training examples per task")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=["shared", "pals", "low_rank", "lhuc", "top_pals"])
    args = parser.parse_args()
    quiet_notebook()
    tokenizer = load_tokenizer("offline")
    data = prepare(TASKS, tokenizer, max_train=args.examples, max_eval=16, max_length=64)
    encoder_config = AutoConfig.from_pretrained(resolve_model("offline"))
    budget = ad.parameter_multiplier(BertConfig(), "pals", 8)
    config = TrainConfig(epochs=1, batch_size=32, lr=1e-4, device="cpu")
    seconds = {m: [] for m in args.methods}
    for _ in range(args.repeats):
        for method in args.methods:  # interleaved, so drifts of the machine hit every method alike
            torch.manual_seed(0)
            model = MultiTaskModel.from_pretrained("offline", [data[n].task.spec() for n in TASKS])
            if method != "shared":
                size = {"size": ad.size_for_budget(encoder_config, method, budget, 8)} if method in ad.DEFAULT_SIZE else {}
                ad.attach(model, ad.AdapterConfig(method, **size))
            start = time.perf_counter()
            train(model, data, config, progress=False)
            seconds[method].append(time.perf_counter() - start)
    n = args.examples * len(TASKS)
    base = statistics.median(seconds["shared"]) if "shared" in seconds else None
    print(f"{n} training examples per run, {args.repeats} repeats, torch threads {torch.get_num_threads()}")
    print(f"{'method':<10} {'examples/s':>11} {'vs shared':>10} {'params (8 tasks)':>17}")
    for method, s in seconds.items():
        med = statistics.median(s)
        size = {"size": ad.size_for_budget(encoder_config, method, budget, 8)} if method in ad.DEFAULT_SIZE else {}
        mult = ad.parameter_multiplier(encoder_config, method, 8, **size)
        ratio = f"{base / med:.2f}x" if base else "-"
        print(f"{method:<10} {n / med:>11.1f} {ratio:>10} {mult:>16.3f}x")


if __name__ == "__main__":
    main()
