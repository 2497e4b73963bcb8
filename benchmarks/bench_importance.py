"""Cost of head importance and of the head gates on the offline model (all-MiniLM-L6-v2, 6 x 12 heads).

Prints, measured side by side in one run (medians over interleaved repeats):

- head importance for all 72 heads (Eq. 4: one forward + backward per batch) vs one evaluation pass over the
  same batches, and vs a naive per-head ablation (one evaluation pass per head, 72 passes);
- a training step (forward, backward, AdamW) with gates attached vs the bare model.

Targets from the models issue: importance <= 3x one evaluation pass; gate overhead <= 3%.

    .venv/bin/python benchmarks/bench_importance.py [--batches 4] [--batch-size 32] [--seq-len 128] [--repeats 5]
"""

import argparse
import statistics
import time

import torch
from transformers import AutoTokenizer

from mtllib.data.assets import resolve_model
from mtllib.data.corpora import load_bbc_news
from mtllib.modeling.gates import HeadGates, ones
from mtllib.analysis.importance import head_importance
from mtllib.modeling.multitask import MultiTaskModel, TaskSpec


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)

    model = MultiTaskModel.from_pretrained("offline", [TaskSpec("topic", "classification", 5)]).eval()
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("offline"))
    bbc = load_bbc_news().sample(args.batches * args.batch_size, random_state=0)
    texts = list(bbc.headline + ". " + bbc.body)
    batches = []
    for i in range(args.batches):
        sl = slice(i * args.batch_size, (i + 1) * args.batch_size)
        enc = tokenizer(texts[sl], truncation=True, max_length=args.seq_len, padding=True, return_tensors="pt")
        batches.append({**enc, "labels": torch.tensor(bbc.label.values[sl]), "task": "topic"})
    num_layers, num_heads = model.num_layers_heads

    def evaluate(values=None):
        with torch.no_grad(), HeadGates(model, values):
            for b in batches:
                model(**b)

    def importance():
        head_importance(model, batches, progress=False)

    def naive_ablation():
        for layer in range(num_layers):
            for head in range(num_heads):
                values = ones(model)
                values[layer, head] = 0
                evaluate(values)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.batches} batches x {args.batch_size} x {args.seq_len} tokens")
    evaluate(), importance()  # warm-up
    eval_t, imp_t = [], []
    for _ in range(args.repeats):
        eval_t.append(timed(evaluate))
        imp_t.append(timed(importance))
    e, i = statistics.median(eval_t), statistics.median(imp_t)
    naive = timed(naive_ablation)  # once: it is 72 evaluation passes
    print(f"one evaluation pass          {e:8.3f} s")
    print(f"importance, all {num_layers * num_heads} heads     {i:8.3f} s   = {i / e:5.2f} x one evaluation pass (target <= 3x)")
    print(f"naive per-head ablation      {naive:8.3f} s   = {naive / e:5.1f} x one evaluation pass, {naive / i:5.1f} x importance")

    # training step with and without gates
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    batch = batches[0]

    def step():
        optimizer.zero_grad(set_to_none=True)
        model(**batch).loss.backward()
        optimizer.step()

    half = ones(model)
    half[0, 0] = 0.5  # a gate that is not 1 forces the multiplication in every layer
    gates_ones, gates_half = HeadGates(model, ones(model)), HeadGates(model, half)
    bare_t, ones_t, half_t = [], [], []
    step()
    for _ in range(args.repeats * 2):
        bare_t.append(timed(step))
        with gates_ones:
            ones_t.append(timed(step))
        with gates_half:
            half_t.append(timed(step))
    b, o, h = (statistics.median(t) for t in (bare_t, ones_t, half_t))
    print(f"training step, bare          {b:8.3f} s")
    print(f"training step, gates at 1    {o:8.3f} s   overhead {100 * (o / b - 1):+5.1f}% (target <= 3%)")
    print(f"training step, a gate at 0.5 {h:8.3f} s   overhead {100 * (h / b - 1):+5.1f}% (gates multiply in all layers)")


if __name__ == "__main__":
    main()
