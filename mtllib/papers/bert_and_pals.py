"""The set-up of "BERT and PALs: Projected Attention Layers for Efficient Adaptation in Multi-Task Learning" as
its chapters (06-06f) set ours beside it: the encoder, the tasks and the training of Sec. 4.2, the sampling of
Sec. 4.1. The paper's parameter counts are not transcribed: :mod:`mtllib.modeling.adapters` computes them from
BERT-base's configuration, and the chapters compare them with the text's (Table 1, Sec. 5.1)."""

MODEL = "BERT-base (12 layers x 12 heads, hidden 768)"
#: Sec. 4.2: GLUE's tasks but WNLI
TASKS = "8 GLUE tasks (all but WNLI)"
#: Sec. 4.2: training steps of every GLUE model (the annealed schedule's "epochs" are 2,400 steps of these)
STEPS = 60_000
TRAINING = "60,000 steps, batch 32, best model by average dev score"
#: Sec. 4.1: the schedule the paper's GLUE models use
SAMPLING = "annealed (Sec. 4.1)"
