"""Data-parallel training speed: one process against ``--nproc`` processes (torchrun, accelerate's DDP) on the
same global batch, measured side by side in one run, and whether they end with the same weights.

Prints training examples per second (steps only, not the end-of-epoch evaluation), peak memory per process
(CUDA: ``torch.cuda.max_memory_allocated``; CPU: the peak resident set) and the speed ratio.

    .venv/bin/python benchmarks/bench_ddp.py [--nproc 2] [--device cpu] [--model offline] [--examples 320]

On CPU each process gets ``threads / nproc`` threads, so both runs use the same cores. On a machine with GPUs,
``--device cuda --nproc <GPUs>``: the single run uses one GPU, the DDP run one GPU per process.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

TASKS = ["bbc-topic", "tweet-sentiment"]


def worker(args) -> None:
    """One run (single process or one of torchrun's); the main process writes its figures to ``args.out``."""
    from mtllib.data.features import load_tokenizer, prepare
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import quiet_notebook
    from mtllib.training import distributed
    from mtllib.training.trainer import TrainConfig, train

    quiet_notebook()
    tokenizer = load_tokenizer(args.model)
    data = prepare(TASKS, tokenizer, max_train=args.examples, max_eval=32, max_length=64)
    torch.manual_seed(0)
    model = MultiTaskModel.from_pretrained(args.model, [data[n].task.spec() for n in TASKS], dropout=0.0,  # no dropout: the runs can agree
                                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    stamps = []
    config = TrainConfig(epochs=1, batch_size=args.batch_size, lr=1e-4, device=args.device)
    train(model, data, config, progress=False, on_step=lambda step: stamps.append(time.perf_counter()))
    world = distributed.launched_world_size()
    rank = int(os.environ.get("RANK", "0"))
    examples = sum(len(d.features["train"]) for d in data.values())
    seconds = (stamps[-1] - stamps[0]) * len(stamps) / (len(stamps) - 1)  # the first step's stamp has no start
    if torch.cuda.is_available() and args.device != "cpu":
        peak = torch.cuda.max_memory_allocated() / 2**20
        memory = "GPU"
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        memory = "RSS"
    if rank == 0:
        weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        torch.save(weights, Path(args.out).with_suffix(".pt"))
        Path(args.out).write_text(json.dumps({"world_size": world, "threads": torch.get_num_threads(), "device": str(next(model.parameters()).device),
                                              "examples_per_s": examples / seconds, "peak_mib": peak, "memory": memory, "steps": len(stamps)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--model", default="offline")
    parser.add_argument("--examples", type=int, default=320, help="training examples per task")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.nproc < 2:
        parser.error("--nproc must be at least 2 (the run compares one process with several)")
    if args.device.startswith("cuda") and torch.cuda.device_count() < args.nproc:
        parser.error(f"--nproc {args.nproc} needs as many GPUs; this machine has {torch.cuda.device_count()}")
    threads = torch.get_num_threads()
    own = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k in ("device", "model", "examples", "batch_size")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, launcher, env in (
            ("1 process", [sys.executable], {"OMP_NUM_THREADS": str(threads)}),
            (f"{args.nproc} processes", [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.nproc}"],
             {"OMP_NUM_THREADS": str(max(1, threads // args.nproc))}),
        ):
            out = Path(tmp) / f"{len(results)}.json"
            subprocess.run([*launcher, __file__, "--worker", f"--out={out}", *own], check=True, env={**os.environ, **env})
            results[name] = json.loads(out.read_text())
            results[name]["weights"] = torch.load(out.with_suffix(".pt"))
    print(f"torch {torch.__version__}; model {args.model}; tasks {TASKS}, {args.examples} training examples each; global batch {args.batch_size}")
    for name, r in results.items():
        print(f"{name:>12}: {r['examples_per_s']:7.1f} examples/s on {r['device']} ({r['threads']} thread(s) each), peak {r['memory']} {r['peak_mib']:.0f} MiB per process, {r['steps']} steps")
    one, many = results.values()
    diff = max(float((one["weights"][k].float() - many["weights"][k].float()).abs().max()) for k in one["weights"])
    print(f"speed ratio {args.nproc} processes / 1 process: {many['examples_per_s'] / one['examples_per_s']:.2f}x; largest weight difference after training: {diff:.2e}")


if __name__ == "__main__":
    main()
