"""`albert_tf.AlbertMaskedLM`, fill-mask on raw strings (docs/keras.md, "Fill-mask"): its logits
and top-k against Hugging Face `transformers.AlbertForMaskedLM` on the same weights, its `[MASK]`
ids against Hugging Face's sentencepiece `AlbertTokenizer`, the preset folder it writes against
what the scripts read, the page's example as written, and the inputs it refuses."""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf import checkpoints, errors
from albert_tf.huggingface import hf_interop
from albert_tf.keras_tasks import masked_lm, masked_lm_preprocessor, presets
from albert_tf.modeling import encoder, pretraining
from albert_tf.training import checkpointing
from tests.conftest import REPO_ROOT, brown_config

# One and two masks, with the spacing around them varied.
MASKED_TEXTS = ["The [MASK] sat on the mat.", "She said that the[MASK]was [MASK] today.",
                "[MASK] is what they wanted", "It was a long [MASK] [MASK]"]


def randomised_pretraining_model(config, seed):
    """Every variable random (biases, LayerNorm gammas and the vocabulary bias included), so a
    misplaced tensor shows in the logits."""
    model = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(config))
    rng = np.random.default_rng(seed)
    for name, variable in model.checkpoint_variables().items():
        center = 1.0 if name.endswith("gamma") else 0.0
        variable.assign(center + rng.normal(0, 0.1, variable.shape).astype(np.float32))
    return model


def write_masked_lm_preset(folder, spm_model_file, seed=1, drop=()):
    """A tiny pretraining checkpoint in a published tarball's layout; `drop`: name prefixes
    left out (a Hub AlbertForMaskedLM import has no pooler and no sentence-order head)."""
    os.makedirs(folder)
    config = brown_config()
    config.to_json_file(os.path.join(folder, "albert_config.json"))
    shutil.copyfile(spm_model_file, os.path.join(folder, "30k-clean.model"))
    variables = randomised_pretraining_model(config, seed).checkpoint_variables()
    kept = {name: variable for name, variable in variables.items() if not name.startswith(drop)}
    checkpoints.write_checkpoint(os.path.join(folder, "model.ckpt-0"), dict(kept, global_step=0))
    return folder


@pytest.fixture(scope="module")
def preset(spm_model_file, tmp_path_factory):
    return write_masked_lm_preset(str(tmp_path_factory.mktemp("mlm") / "tiny"), spm_model_file)


@pytest.fixture(scope="module")
def model(preset):
    return albert_tf.AlbertMaskedLM.from_preset(preset, max_seq_length=64)


def hugging_face_tokenizer(spm_model_file, lower=True):
    import transformers
    return transformers.AlbertTokenizer(vocab_file=spm_model_file, do_lower_case=lower)


@pytest.mark.parametrize("lower", [True, False])
def test_mask_ids_are_hugging_face_albert_tokenizers(spm_model_file, lower):
    texts = MASKED_TEXTS + ["the[MASK]sat", "  [MASK]  ", "\t[MASK]\nnext", "word[MASK]ing",
                            "It cost 1,000[MASK].", "a [mask] is text, not a mask", "no mask"]
    hf = hugging_face_tokenizer(spm_model_file, lower)
    preprocessor = masked_lm_preprocessor.AlbertMaskedLMPreprocessor(spm_model_file, 64, lower)
    features = {name: value.numpy() for name, value in preprocessor(tf.constant(texts)).items()}
    for row, text in enumerate(texts):
        ours = features["input_ids"][row][features["input_mask"][row] == 1].tolist()
        theirs = hf(text)["input_ids"]
        assert ours == theirs, (text, hf.convert_ids_to_tokens(theirs))
        positions = [i for i, piece in enumerate(theirs) if piece == hf.mask_token_id]
        count = len(positions)
        assert features["masked_lm_positions"][row][:count].tolist() == positions
        assert not features["masked_lm_positions"][row][count:].any()
    assert preprocessor.mask_id == hf.mask_token_id == 4
    # Why the text is cut at [MASK]: SentencePiece alone never yields the control piece.
    plain = preprocessor.tokenizer.tokenize(tf.constant(["the [MASK] sat"])).to_list()[0]
    assert preprocessor.mask_id not in plain


@pytest.mark.slow
def test_logits_and_top_k_are_hugging_face_albert_for_masked_lm(model, preset, spm_model_file,
                                                                tmp_path):
    import torch
    import transformers
    hf_model = transformers.AlbertForMaskedLM(hf_interop.huggingface_config(model.backbone.config))
    # The same checkpoint without the pooler and sentence-order head, which AlbertForMaskedLM
    # does not have.
    stored = checkpoints.read_tensors(presets.read_preset(preset).checkpoint)
    prefix = checkpoints.write_checkpoint(str(tmp_path / "model.ckpt-0"), {
        name: value for name, value in stored.items()
        if not name.startswith(("bert/pooler/", "cls/seq_relationship/"))})
    hf_interop.load_original_checkpoint(hf_model, prefix)
    hf_model.eval()
    tokenizer = hugging_face_tokenizer(spm_model_file)
    ours = model.predict(MASKED_TEXTS, batch_size=3, verbose=0)
    filled = model.fill_mask(MASKED_TEXTS, top_k=5)
    for text, logits, candidates in zip(MASKED_TEXTS, ours, filled):
        ids = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            all_logits = hf_model(**ids).logits[0].numpy()
        theirs = all_logits[ids["input_ids"][0].numpy() == tokenizer.mask_token_id]
        assert logits.shape == theirs.shape == (text.count("[MASK]"), 4000)
        np.testing.assert_allclose(logits, theirs, atol=1e-5, rtol=1e-5, err_msg=text)
        their_top = torch.topk(torch.from_numpy(theirs), 5).indices.numpy()
        their_probabilities = torch.softmax(torch.from_numpy(theirs), -1).numpy()
        for row, mask_candidates in enumerate(candidates):
            assert [piece for piece, _ in mask_candidates] == tokenizer.convert_ids_to_tokens(
                their_top[row].tolist())
            np.testing.assert_allclose([p for _, p in mask_candidates],
                                       their_probabilities[row, their_top[row]], rtol=1e-4)
    assert [len(masks) for masks in filled] == [1, 2, 1, 2]


def test_a_checkpoint_without_the_head_is_refused_naming_the_folder(spm_model_file, tmp_path):
    # (Not test_keras_tasks' writer: its keras.utils.set_random_seed clears TensorFlow's kernel
    # cache, which holds tensorflow-text's SentencePiece model of the models made before.)
    folder = write_masked_lm_preset(str(tmp_path / "encoder_only"), spm_model_file,
                                    drop=("cls/",))
    with pytest.raises(presets.PresetError,
                       match=r"encoder_only: its checkpoint .*model\.ckpt-0 has no masked-LM "
                             r"head \(missing \['cls/predictions/transform/dense/kernel'"):
        albert_tf.AlbertMaskedLM.from_preset(folder)
    # The names checked before building are the head's own.
    head = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(brown_config())).mlm_head
    assert tuple(head.checkpoint_variables()) == masked_lm.HEAD_NAMES


@pytest.mark.slow
def test_texts_without_a_mask_or_with_it_truncated_are_refused_by_index(model, preset):
    with pytest.raises(errors.UserInputError, match=r"x\[1\]: no \[MASK\] in 'no mask here'"):
        model.predict(["a [MASK] here", "no mask here"])
    with pytest.raises(errors.UserInputError, match=r"x\[0\]: no \[MASK\] in 'a \[mask\]'"):
        model.fill_mask(["a [mask]"])
    with pytest.raises(errors.UserInputError, match="not pairs"):
        model.predict((["a [MASK]"], ["b"]))
    with pytest.raises(errors.UserInputError, match=r"top_k=0: expected an integer in \[1, 4000\]"):
        model.fill_mask(["a [MASK]"], top_k=0)
    short = albert_tf.AlbertMaskedLM.from_preset(preset, max_seq_length=16)
    long_text = " ".join(["word"] * 20) + " [MASK] and [MASK]"
    with pytest.raises(errors.UserInputError,
                       match=r"x\[1\]: 2 of its 2 \[MASK\] fall past max_seq_length=16"):
        short.predict(["a [MASK]", long_text])


@pytest.mark.slow
def test_save_to_preset_writes_the_original_layout_and_reloads_equal(model, tmp_path):
    saved = model.save_to_preset(str(tmp_path / "saved"))
    assert sorted(os.listdir(saved)) == ["30k-clean.model", "albert_config.json", "checkpoint",
                                         "masked_lm.json", "model.ckpt-0.data-00000-of-00001",
                                         "model.ckpt-0.index"]
    with open(os.path.join(saved, "masked_lm.json"), encoding="utf-8") as reader:
        assert json.load(reader) == {"do_lower_case": True, "max_seq_length": 64}
    names = model.checkpoint_variables()
    stored = checkpoints.read_tensors(saved)
    assert set(stored) == set(names) | {"global_step"}
    assert "cls/predictions/output_bias" in stored and "cls/seq_relationship/output_weights" in stored
    for name, variable in names.items():
        np.testing.assert_array_equal(stored[name], variable.numpy(), err_msg=name)
    reloaded = albert_tf.AlbertMaskedLM.from_preset(saved)
    assert reloaded.preprocessor.max_seq_length == 64
    for ours, theirs in zip(reloaded.predict(MASKED_TEXTS, verbose=0),
                            model.predict(MASKED_TEXTS, verbose=0)):
        np.testing.assert_array_equal(ours, theirs)
    # run_pretraining.py --init_checkpoint=<folder> warm-starts every variable from it.
    fresh = pretraining.AlbertPretrainingModel(encoder.AlbertEncoder(brown_config()))
    checkpointing.warm_start(fresh.checkpoint_variables(), saved)
    for name, variable in fresh.checkpoint_variables().items():
        np.testing.assert_array_equal(variable.numpy(), stored[name], err_msg=name)
    with pytest.raises(errors.UserInputError, match="exists and is not an empty"):
        model.save_to_preset(saved)


@pytest.mark.slow
def test_a_hub_masked_lm_without_pooler_loads_and_saves_no_untrained_weights(spm_model_file,
                                                                            tmp_path):
    folder = write_masked_lm_preset(str(tmp_path / "hf_mlm"), spm_model_file, seed=3,
                                    drop=("bert/pooler/", "cls/seq_relationship/"))
    model = albert_tf.AlbertMaskedLM.from_preset(folder)
    assert model.preprocessor.max_seq_length == 64  # min(128, max_position_embeddings)
    saved = checkpoints.list_variables(model.save_to_preset(str(tmp_path / "saved")))
    assert not [name for name in saved if name.startswith(("bert/pooler/", "cls/seq_"))]
    assert "cls/predictions/transform/LayerNorm/gamma" in saved


def fill_mask_example():
    with open(os.path.join(REPO_ROOT, "docs", "keras.md"), encoding="utf-8") as reader:
        page = reader.read()
    section = page[page.index("## Fill-mask"):]
    return re.search(r"^```python\n(.*?)^```", section, flags=re.S | re.M).group(1)


@pytest.mark.slow
def test_the_fill_mask_docs_example_runs_as_written(spm_model_file, tmp_path, monkeypatch,
                                                    capsys):
    write_masked_lm_preset(str(tmp_path / "albert_base"), spm_model_file)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(fill_mask_example(), "docs/keras.md", "exec"), namespace)  # noqa: S102

    filled = namespace["filled"]
    assert [len(masks) for masks in filled] == [1, 2]
    assert all(len(candidates) == 3 for masks in filled for candidates in masks)
    printed = capsys.readouterr().out
    assert filled[0][0][0][0] in printed
    assert "cls/predictions/output_bias" in checkpoints.list_variables(
        str(tmp_path / "my_masked_lm"))


@pytest.mark.slow
def test_a_folder_transformers_saved_imports_and_fills_masks_as_hugging_face(spm_model_file,
                                                                            tmp_path):
    """What a user brings: `AlbertForMaskedLM.save_pretrained` and `AlbertTokenizer
    .save_pretrained` into one folder, `import_from_hf.py`'s import, then `from_preset`: the
    logits at the masks are transformers' own on the same text."""
    import torch
    from albert_tf.huggingface import hf_import
    from tests.test_hf_import import hf_model
    theirs_model = hf_model("AlbertForMaskedLM", seed=5)
    saved = str(tmp_path / "saved_by_transformers")
    theirs_model.save_pretrained(saved)
    tokenizer = hugging_face_tokenizer(spm_model_file)
    tokenizer.save_pretrained(saved)
    hf_import.import_folder(saved, str(tmp_path / "imported"))
    model = albert_tf.AlbertMaskedLM.from_preset(str(tmp_path / "imported"))
    for text, logits in zip(MASKED_TEXTS, model.predict(MASKED_TEXTS, verbose=0)):
        ids = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            all_logits = theirs_model(**ids).logits[0].numpy()
        theirs = all_logits[ids["input_ids"][0].numpy() == tokenizer.mask_token_id]
        np.testing.assert_allclose(logits, theirs, atol=1e-5, rtol=1e-5, err_msg=text)
