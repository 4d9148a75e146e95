"""The raw-text `answer` signature against the Python pipeline (features + post-processing).

Random-weight tiny models are enough: the graph must build the same windows and pick the same
span as `squad.features` + `squad.postprocess`, on real SQuAD paragraphs (several windows each)
and on paragraphs with accents, thousands commas and irregular spacing.
"""

import json

import keras
import numpy as np
import pytest

from albert_tf.text import tf_tokenization, tokenization
from albert_tf.export import squad as squad_export
from albert_tf.modeling import encoder, squad_heads
from albert_tf.squad import features, postprocess, reader

from tests.test_squad_data import HARD_PARAGRAPHS, _squad_json
from tests.conftest import brown_config

SEQ, STRIDE, QUERY, MAX_ANSWER = 64, 16, 12, 8


@pytest.fixture(scope="module")
def setup(real_data, spm_model_file, tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "hard.json"
    path.write_text(json.dumps(_squad_json(HARD_PARAGRAPHS)), encoding="utf-8")
    examples = []
    for squad_file in (real_data["squad_v1_excerpt"], str(path)):
        examples += reader.read_squad_examples(squad_file, False)[0]
    tokenizer = tokenization.FullTokenizer(None, True, spm_model_file)
    feats, _ = features.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY,
                                                     False, True)
    config = brown_config(max_position_embeddings=SEQ)
    # Seed first: tf.random.set_seed after an InGraphTokenizer exists destroys its
    # SentencePiece resource (TensorFlow clears the kernel cache that holds it).
    keras.utils.set_random_seed(7)
    models = {version_2: squad_heads.build_squad_model(encoder.AlbertEncoder(config), version_2, start_n_top=4, end_n_top=3)
              for version_2 in (False, True)}
    return examples, feats, models, tf_tokenization.InGraphTokenizer(spm_model_file, True)


def _batch(feats, name):
    return np.array([getattr(f, name) for f in feats], np.int32)


def _signatures(setup, version_2):
    examples, feats, models, in_graph = setup
    signatures = squad_export.SquadSignatures(models[version_2], version_2, SEQ, QUERY, STRIDE, MAX_ANSWER,
                                              in_graph)
    outputs = signatures.ids(*(_batch(feats, n) for n in squad_export.MODEL_INPUTS))
    return signatures, {k: v.numpy() for k, v in outputs.items()}


def _ask(signatures, examples):
    result = signatures.answer(np.array([e.question_text for e in examples]),
                               np.array([e.paragraph_text for e in examples]))
    answers = [a.decode("utf-8") for a in result["answer"].numpy()]
    return answers, {k: v.numpy() for k, v in result.items()}


@pytest.mark.slow
def test_in_graph_windows_equal_the_python_features(setup):
    examples, feats, _, _ = setup
    signatures, _ = _signatures(setup, False)
    inputs, pieces, is_max, _, real, _, _ = signatures._windows(
        np.array([e.question_text for e in examples]),
        np.array([e.paragraph_text for e in examples]))
    input_ids, input_mask, segment_ids = (t.numpy() for t in inputs)
    real, is_max = real.numpy(), is_max.numpy()
    assert max(f.doc_span_index for f in feats) >= 4  # real paragraphs: several windows
    assert real.sum() == len(feats)
    for f in feats:
        row, window = f.example_index, f.doc_span_index
        assert real[row, window]
        assert list(input_ids[row, window]) == f.input_ids
        assert list(input_mask[row, window]) == f.input_mask
        assert list(segment_ids[row, window]) == f.segment_ids
        assert [p for p in range(SEQ) if is_max[row, window, p]] == sorted(
            p for p, v in f.token_is_max_context.items() if v)
        p_mask = squad_export.p_mask_from_inputs(input_mask[row, window][None],
                                                 segment_ids[row, window][None]).numpy()[0]
        assert list(p_mask) == f.p_mask


def test_v1_raw_text_answers_equal_python_post_processing(setup):
    examples, feats, _, _ = setup
    signatures, outputs = _signatures(setup, False)
    results = [postprocess.RawResultV1(f.unique_id, outputs["start_logits"][i],
                                       outputs["end_logits"][i]) for i, f in enumerate(feats)]
    # n_best_size = every position: the graph searches every pair, so must Python here.
    predictions, nbest = postprocess.predict_v1(examples, feats, results, SEQ, MAX_ANSWER)
    answers, raw = _ask(signatures, examples)
    assert answers == [predictions[e.qas_id] for e in examples]
    best_scores = [nbest[e.qas_id][0]["start_logit"] + nbest[e.qas_id][0]["end_logit"]
                   for e in examples]
    np.testing.assert_allclose(raw["score"], best_scores, rtol=1e-5, atol=1e-5)
    # The hard paragraphs keep their accents, commas and spacing in the answers.
    assert any(any(c in a for c in "éüñ,") for a in answers)


def test_v2_raw_text_answers_and_null_scores_equal_python_post_processing(setup):
    examples, feats, _, _ = setup
    signatures, outputs = _signatures(setup, True)
    results = [postprocess.RawResultV2(
        f.unique_id, outputs["start_top_log_probs"][i], outputs["start_top_index"][i],
        outputs["end_top_log_probs"][i], outputs["end_top_index"][i],
        float(outputs["cls_logits"][i])) for i, f in enumerate(feats)]
    best, nbest, null_odds = postprocess.predict_v2(examples, feats, results, 20, MAX_ANSWER,
                                                    4, 3)
    answers, raw = _ask(signatures, examples)  # no threshold exported: never ""
    np.testing.assert_allclose(raw["null_score"], [null_odds[e.qas_id] for e in examples],
                               rtol=1e-5, atol=1e-5)
    for example, answer, score in zip(examples, answers, raw["score"]):
        top = nbest[example.qas_id][0]
        if top["start_log_prob"] == postprocess.V2_EMPTY_LOG_PROB:
            assert answer == "" and score == -np.inf  # no valid pair in the beam
        else:
            assert answer == best[example.qas_id]
            assert score == pytest.approx(top["start_log_prob"] + top["end_log_prob"],
                                          abs=1e-5)
    # With a threshold, exactly the questions whose null score exceeds it answer "".
    threshold = float(np.median(raw["null_score"]))
    signatures.null_threshold = threshold
    thresholded, _ = _ask(signatures, examples)
    expected = postprocess.apply_null_threshold(best, null_odds, threshold)
    assert thresholded == [expected[e.qas_id] for e in examples]
