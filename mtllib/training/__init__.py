"""Training layer: task samplers (Eq. 8 annealing among them), the multi-task trainer and evaluation,
data-parallel training under a launcher (``distributed``), Important Attention-head Training (IAT),
few-shot transfer and the trained-model cache."""
