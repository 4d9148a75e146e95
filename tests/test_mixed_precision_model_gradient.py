"""The whole pretraining model's gradient under `--precision=mixed_bfloat16`, parameter by
parameter, against PyTorch's bfloat16 autocast on the same weights and batch.

Two checks on a tiny ALBERT (E 16, H 32, 2 layers sharing one block, 8 sequences of 32–64
tokens, 10 masked positions each, dropout off), with the loss of `PretrainingTask` (masked LM
+ sentence order) in the training step's own form (`training=True`, the fused kernels):

1. The float32 gradient equals Hugging Face `AlbertForPreTraining`'s float32 gradient of the same
   loss on the same weights: relative error ≤ 1e-5 per parameter. The key bias is the exception
   that proves it: softmax ignores a shift common to one query's logits, so its exact gradient is
   zero and both float32 gradients are rounding noise; it is held to an absolute 1e-6 of the whole
   gradient's norm instead.
2. The mixed_bfloat16 gradient's error (against our float32 gradient, itself within 1e-5 of the
   truth) is at most twice autocast's error against the float64 truth (HF in float64), for every
   parameter: ‖ours − truth‖ ≤ max(2 ‖autocast − truth‖, 2⁻⁸ ‖truth‖). The floor 2⁻⁸ is one
   bfloat16 rounding of the gradient itself (8 significant bits, round to nearest: ≤ 2⁻⁹
   relative per element, so ≤ 2⁻⁹ in norm; twice that, as for every other parameter), for a
   parameter where autocast happens to be nearly exact. The key bias (truth 0) compares absolute
   errors, as every parameter does here.

Before the residual stream was kept in float32 into each block (`TransformerBlock.input_dtype`),
Keras rounded it to bfloat16 on entry and summed the attention's and the residual's gradients
there in bfloat16: the attention key kernel's error was 2.06× and the embedding LayerNorm beta's
1.83× autocast's on this batch, against 1.93× and 0.98× after.
What remains above 1× is TensorFlow's bfloat16 MatMul on an AVX2 CPU, whose result carries
about twice the error of one rounding to nearest (PyTorch's: one rounding).
"""

import contextlib

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from albert_tf.config import AlbertConfig
from albert_tf.huggingface import hf_format, hf_interop
from albert_tf.modeling import encoder, pretraining
from albert_tf.pretraining import task as pretraining_task
from albert_tf.training import loop, prediction

pytestmark = pytest.mark.slow

BATCH, LENGTH, MASKED = 8, 64, 10
CONFIG = AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=64, max_position_embeddings=LENGTH,
                      type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
KEY_BIAS = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/key/bias"
BFLOAT16_ROUNDING = 2.0 ** -8


def fixed_batch():
    """Sequences of 32–64 real tokens (two segments), padding after, 8 weighted positions of 10."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(LENGTH // 2, LENGTH + 1, BATCH)
    mask = (np.arange(LENGTH)[None] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, CONFIG.vocab_size, (BATCH, LENGTH)).astype(np.int32) * mask
    segments = ((np.arange(LENGTH)[None] >= lengths[:, None] // 2) & (mask == 1)).astype(np.int32)
    positions = np.stack([np.sort(rng.choice(length, MASKED, replace=False)) for length in lengths])
    weights = np.ones((BATCH, MASKED), np.float32)
    weights[:, -2:] = 0.0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": positions.astype(np.int32),
            "masked_lm_ids": rng.integers(5, CONFIG.vocab_size, (BATCH, MASKED)).astype(np.int32),
            "masked_lm_weights": weights,
            "next_sentence_labels": rng.integers(0, 2, (BATCH, 1)).astype(np.int32)}


def random_weights():
    """Every variable random (biases and LayerNorm betas too, gammas around 1)."""
    rng = np.random.default_rng(1)
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(CONFIG))
    return {name: ((1.0 if name.endswith("gamma") else 0.0)
                   + rng.normal(0, 0.1, variable.shape)).astype(np.float32)
            for name, variable in model.checkpoint_variables().items()}


def our_gradient(precision, weights, batch):
    """{name: float64 array}: the gradient of PretrainingTask's loss as the training step takes
    it (`loop.precision_policy`, `training=True`, outputs through `prediction.as_float32`)."""
    task = pretraining_task.PretrainingTask(CONFIG, "unused", LENGTH, MASKED)
    with loop.precision_policy(precision):
        model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(CONFIG))
    variables = model.checkpoint_variables()
    for name, variable in variables.items():
        variable.assign(weights[name])
    features = {name: tf.constant(value) for name, value in batch.items()}
    normalizers = task.loss_normalizers(features)

    @tf.function
    def gradient():
        with tf.GradientTape() as tape:
            outputs = prediction.as_float32(task.call_model(model, features, training=True),
                                            keep=task.outputs_in_compute_dtype)
            loss = task.compute_loss(features, outputs, normalizers)
        return tape.gradient(loss, list(variables.values()))

    return {name: tf.convert_to_tensor(value).numpy().astype(np.float64)
            for name, value in zip(variables, gradient())}


def hf_gradient(weights, batch, dtype, autocast=False):
    """{original name: float64 array}: AlbertForPreTraining's gradient of the original loss
    (weighted masked-LM mean + sentence-order mean), dense kernels as [in, out]."""
    model = transformers.AlbertForPreTraining(hf_interop.huggingface_config(
        CONFIG, classifier_dropout_prob=0.0))
    state = hf_format.to_hf_state(weights, CONFIG, "pretraining")
    model.load_state_dict({name: torch.from_numpy(value) for name, value in state.items()},
                          strict=False)  # the decoder is tied to the word embeddings
    model = model.to(dtype).train()
    precision = (torch.autocast("cpu", dtype=torch.bfloat16) if autocast
                 else contextlib.nullcontext())
    with precision:
        outputs = model(input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                        token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long))
    log_probs = torch.log_softmax(outputs.prediction_logits.to(dtype), dim=-1)
    positions = torch.tensor(batch["masked_lm_positions"], dtype=torch.long)
    at_positions = log_probs[torch.arange(BATCH)[:, None], positions]
    picked = torch.gather(at_positions, 2, torch.tensor(batch["masked_lm_ids"],
                                                        dtype=torch.long)[..., None])[..., 0]
    weights_tensor = torch.tensor(batch["masked_lm_weights"], dtype=dtype)
    masked_lm = -(weights_tensor * picked).sum() / (weights_tensor.sum() + 1e-5)
    sentence_order = torch.nn.functional.cross_entropy(
        outputs.sop_logits.to(dtype), torch.tensor(batch["next_sentence_labels"][:, 0],
                                                   dtype=torch.long))
    (masked_lm + sentence_order).backward()
    parameters = dict(model.named_parameters())
    return {name: (parameters[hf_name].grad.double().numpy().T if transposed
                   else parameters[hf_name].grad.double().numpy())
            for name, hf_name, transposed in hf_format.name_table(CONFIG, "pretraining")}


@pytest.fixture(scope="module")
def gradients():
    weights, batch = random_weights(), fixed_batch()
    return {"float32": our_gradient("float32", weights, batch),
            "mixed_bfloat16": our_gradient("mixed_bfloat16", weights, batch),
            "hf_float64": hf_gradient(weights, batch, torch.float64),
            "hf_float32": hf_gradient(weights, batch, torch.float32),
            "autocast": hf_gradient(weights, batch, torch.float32, autocast=True)}


def test_float32_gradient_equals_hugging_face_float32_gradient(gradients):
    ours, theirs = gradients["float32"], gradients["hf_float32"]
    assert ours.keys() == theirs.keys()
    whole = np.sqrt(sum(np.sum(g * g) for g in theirs.values()))
    for name in ours:
        error = np.linalg.norm(ours[name] - theirs[name])
        bound = 1e-6 * whole if name == KEY_BIAS else 1e-5 * np.linalg.norm(theirs[name])
        assert error <= bound, f"{name}: |float32 − HF float32| {error:.3g} > {bound:.3g}"


def test_mixed_bfloat16_gradient_within_twice_autocast_error(gradients):
    ours, reference = gradients["mixed_bfloat16"], gradients["float32"]
    truth, autocast = gradients["hf_float64"], gradients["autocast"]
    over = {}
    for name in truth:
        error = np.linalg.norm(ours[name] - reference[name])
        bound = max(2.0 * np.linalg.norm(autocast[name] - truth[name]),
                    BFLOAT16_ROUNDING * np.linalg.norm(truth[name]))
        if error > bound:
            over[name] = (f"error {error:.3g}, autocast's {np.linalg.norm(autocast[name] - truth[name]):.3g}, "
                          f"|truth| {np.linalg.norm(truth[name]):.3g}")
    assert not over, over
