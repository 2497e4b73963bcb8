"""Training layer: task samplers (Eq. 8 annealing among them), the multi-task trainer and evaluation,
Important Attention-head Training (IAT) and few-shot transfer."""
