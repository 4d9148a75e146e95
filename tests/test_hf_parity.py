"""Parity with an independent implementation: Hugging Face `transformers` ALBERT on PyTorch.

Both directions go through the original checkpoint layout: our checkpoint → HF (the name
table of `albert_tf.huggingface.hf_format`, as transformers 5 has no TF checkpoint loader), and HF weights
written under the original names (the same table, read the other way) →
`checkpoints.load_into`. Every variable is randomised first (biases, LayerNorm gammas/betas
included), so a misplaced tensor shows.
"""

import numpy as np
import pytest

import torch  # noqa: E402
import transformers  # noqa: E402

from albert_tf import checkpoints  # noqa: E402
from albert_tf.huggingface import hf_format, hf_interop  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.modeling import encoder, pretraining  # noqa: E402

pytestmark = pytest.mark.slow
TOLERANCE = 1e-4

CASES = {
    # E != H, one shared block over 3 layers.
    "embedding_ne_hidden": dict(embedding_size=16, hidden_size=32, num_hidden_layers=3),
    # E == H: no projection variable is written or read.
    "embedding_eq_hidden": dict(embedding_size=32, hidden_size=32, num_hidden_layers=2),
    # 2 groups x 2 inner groups over 4 layers, with dropout in the config (inference mode).
    "groups_and_dropout": dict(embedding_size=16, hidden_size=32, num_hidden_layers=4,
                               num_hidden_groups=2, inner_group_num=2, hidden_dropout_prob=0.1,
                               attention_probs_dropout_prob=0.1),
}


def make_config(**fields):
    base = dict(vocab_size=97, num_attention_heads=4, intermediate_size=37,
                max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu")
    base.update(fields)
    return AlbertConfig(**base)


def hf_config(config):
    return hf_interop.huggingface_config(config)


def padded_batch(config, seed=0):
    """Three sequences of lengths 12, 7 and 3 padded to 12, two segments each, 3 masked positions."""
    rng = np.random.default_rng(seed)
    lengths = [12, 7, 3]
    ids = rng.integers(5, config.vocab_size, size=(3, 12)).astype(np.int32)
    mask = np.zeros((3, 12), np.int32)
    segments = np.zeros((3, 12), np.int32)
    for row, length in enumerate(lengths):
        mask[row, :length] = 1
        ids[row, length:] = 0
        segments[row, length // 2:length] = 1
    positions = np.array([[1, 5, 11], [0, 2, 6], [1, 2, 1]], np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "masked_lm_positions": positions}


def our_outputs(model, batch):
    outputs = model(batch, training=False)
    return {name: outputs[name].numpy() for name in
            ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")}


def hf_outputs(hf_model, batch):
    hf_model.eval()
    with torch.no_grad():
        result = hf_model(
            input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
            output_hidden_states=True)
    sequence = result.hidden_states[-1].numpy()
    pooled = hf_model.albert.pooler_activation(
        hf_model.albert.pooler(torch.tensor(sequence[:, 0]))).detach().numpy()
    mlm = np.take_along_axis(result.prediction_logits.numpy(),
                             batch["masked_lm_positions"][:, :, None].astype(np.int64), axis=1)
    return {"sequence_output": sequence, "pooled_output": pooled, "mlm_logits": mlm,
            "sop_logits": result.sop_logits.numpy()}


def assert_close(ours, theirs):
    for name in ours:
        assert ours[name].shape == theirs[name].shape, name
        difference = np.abs(ours[name] - theirs[name]).max()
        assert difference <= TOLERANCE, f"{name}: max |diff| {difference}"


def identity_projection_if_absent(hf_model, config):
    """HF always has an E→H projection; the original has none when E == H: make HF's a no-op."""
    if config.embedding_size == config.hidden_size:
        mapping = hf_model.albert.encoder.embedding_hidden_mapping_in
        with torch.no_grad():
            mapping.weight.copy_(torch.eye(config.hidden_size))
            mapping.bias.zero_()


def randomise_ours(model, seed):
    rng = np.random.default_rng(seed)
    for name, variable in model.checkpoint_variables().items():
        center = 1.0 if name.endswith("gamma") else 0.0
        variable.assign(center + rng.normal(0, 0.1, variable.shape).astype(np.float32))


def hf_weights_in_original_names(hf_model, config):
    """HF's state dict under the original's names (`hf_format`); dense kernels to [in, out]."""
    state = {name: tensor.detach().numpy() for name, tensor in hf_model.state_dict().items()}
    out = hf_format.from_hf_state(state, config, "pretraining", "the HF model")
    out["global_step"] = np.int64(0)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_our_checkpoint_loads_into_hf_with_identical_outputs(case, tmp_path):
    config = make_config(**CASES[case])
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    randomise_ours(model, seed=1)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-1"), model.checkpoint_variables())
    if config.embedding_size == config.hidden_size:
        assert not any("embedding_hidden_mapping_in" in name for name in checkpoints.list_variables(prefix))

    torch.manual_seed(0)
    hf_model = transformers.AlbertForPreTraining(hf_config(config))
    hf_interop.load_original_checkpoint(hf_model, prefix)  # E == H: an identity projection
    batch = padded_batch(config)
    assert_close(our_outputs(model, batch), hf_outputs(hf_model, batch))


@pytest.mark.parametrize("case", sorted(CASES))
def test_hf_weights_in_original_names_load_here_with_identical_outputs(case, tmp_path):
    config = make_config(**CASES[case])
    torch.manual_seed(2)
    hf_model = transformers.AlbertForPreTraining(hf_config(config))
    with torch.no_grad():
        for name, parameter in hf_model.named_parameters():
            center = 1.0 if "LayerNorm" in name and name.endswith("weight") else 0.0
            parameter.copy_(center + 0.1 * torch.randn_like(parameter))
    identity_projection_if_absent(hf_model, config)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-best"),
                                          hf_weights_in_original_names(hf_model, config))

    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    report = checkpoints.load_into(model.checkpoint_variables(), prefix)
    assert not report.missing and not report.mismatched and not report.unused
    assert len(report.mapped) == len(model.checkpoint_variables())
    assert report.skipped == ["global_step"]
    batch = padded_batch(config, seed=3)
    assert_close(our_outputs(model, batch), hf_outputs(hf_model, batch))


def test_padding_does_not_change_real_positions():
    """The same sequence alone and padded in a batch: outputs at real positions agree."""
    config = make_config(**CASES["embedding_ne_hidden"])
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    randomise_ours(model, seed=4)
    batch = padded_batch(config)
    full = model(batch)["sequence_output"].numpy()
    alone = {name: value[1:2, :7] for name, value in batch.items() if name != "masked_lm_positions"}
    single = model(alone)["sequence_output"].numpy()
    np.testing.assert_allclose(single[0], full[1, :7], atol=1e-5)
