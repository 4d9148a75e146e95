"""Keras 3 layers of ALBERT, one job per module.

- `layers`: initializer, activation, float32 LayerNorm, the 2-D-kernel `Dense`, `ClassificationHead`.
- `embeddings`: `bert/embeddings` (word + type + position, LayerNorm, dropout).
- `attention`: `attention_1` self-attention with 2-D stored [H,H] kernels, key mask −10000.
- `transformer`: `inner_group_k`, the post-LayerNorm attention + FFN block.
- `encoder`: `AlbertEncoder` (embeddings, E→H projection, G groups × K inner groups, pooler).
- `pretraining`: masked-LM and sentence-order heads, `AlbertPretrainingModel`.
- `classifier`: `AlbertClassifier` (GLUE head at the root scope).

Every model and head has `checkpoint_variables()`: an ordered {original name: variable} map,
the only place the original checkpoint names live (`albert_tf/checkpoints.py` reads and writes
through it). Task heads written elsewhere (`squad_heads.py`, `multiple_choice.py`) follow suit:
build the encoder with `dtype=self.dtype_policy, name="bert"`, use `layers.ClassificationHead`
or `layers.Dense`/`layers.LayerNorm` for float32 logits, create variables in `__init__` and set
`self.built = True`, and return
`encoder.checkpoint_variables()` updated with the head's own names.
"""
