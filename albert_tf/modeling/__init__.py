"""Keras 3 layers of ALBERT, one job per module.

- `layers`: initializer, activation, float32 LayerNorm, the 2-D-kernel `Dense`, `ClassificationHead`.
- `fused`: the tanh-GELU, LayerNorm and masked-LM cross-entropy that training calls of static
  shape run instead, each XLA-compiled into one kernel forward and one backward.
- `embeddings`: `bert/embeddings` (word + type + position, LayerNorm, dropout).
- `attention`: `attention_1` self-attention with 2-D stored [H,H] kernels, key mask −10000.
- `transformer`: `inner_group_k`, the post-LayerNorm attention + FFN block.
- `encoder`: `AlbertEncoder` (embeddings, E→H projection, G groups × K inner groups, pooler).
- `task_model`: `AlbertTaskModel`, the base of every task model: an `AlbertEncoder` passed in
  (built once by the caller, e.g. `AlbertClassifier(AlbertEncoder(config), num_labels=3)`) plus
  the task's head.
- `pretraining`: masked-LM and sentence-order heads, `AlbertPretrainingModel`.
- `classifier`: `AlbertClassifier` (GLUE head at the root scope); `token_classifier`,
  `multiple_choice`, `squad_heads`: the tagging, RACE and SQuAD models.
- `saving`: `get_config`/`from_config` for `.keras` files.

Every model and head has `checkpoint_variables()`: an ordered {original name: variable} map,
the only place the original checkpoint names live (`albert_tf/checkpoints.py` reads and writes
through it). A task model subclasses `task_model.AlbertTaskModel`, records its own arguments
with `_record_arguments`, uses `layers.ClassificationHead` or `layers.Dense`/`layers.LayerNorm`
for float32 logits, creates its variables in `__init__` and sets `self.built = True`, and returns
`self.encoder.checkpoint_variables()` updated with the head's own names.
"""
