"""The original AdamW / LAMB update rules and schedule (the original optimization.py and lamb_optimizer.py) against a NumPy transcription."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training import optimization

EXCLUDED = ("LayerNorm", "layer_norm", "bias")


def reference_step(params, grads, m, v, lr, layer_adaptation, clip_norm=1.0, wd=0.01,
                   beta_1=0.9, beta_2=0.999, eps=1e-6, encoder_multiplier=1.0):
    """One step of the original optimizers, written from the spec in float64 NumPy."""
    global_norm = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
    scale = clip_norm / max(global_norm, clip_norm)
    for name in params:
        g = grads[name] * scale
        m[name] = beta_1 * m[name] + (1 - beta_1) * g
        v[name] = beta_2 * v[name] + (1 - beta_2) * g * g
        update = m[name] / (np.sqrt(v[name]) + eps)
        excluded = any(re.search(p, name) for p in EXCLUDED)
        if not excluded:
            update = update + wd * params[name]
        ratio = 1.0
        if layer_adaptation and not excluded:
            w_norm, u_norm = np.linalg.norm(params[name]), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        rate = lr * (encoder_multiplier if name.startswith("bert/") else 1.0)
        params[name] = params[name] - ratio * rate * update


def reference_lr(step, init_lr, num_train_steps, num_warmup_steps, poly_power=1.0, start=0):
    decayed = init_lr * (1 - min(step, num_train_steps) / num_train_steps) ** poly_power
    if num_warmup_steps and step - start < num_warmup_steps:
        return init_lr * (step - start) / num_warmup_steps
    return decayed


def _variables(rng):
    # Keras paths deliberately differ from the original names: exclusions must use the names.
    initial = {
        "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel":
            rng.normal(size=(4, 3)),
        "bert/embeddings/LayerNorm/gamma": 1.0 + 0.1 * rng.normal(size=(3,)),
        "cls/predictions/output_bias": 0.1 * rng.normal(size=(5,)),
        "cls/seq_relationship/output_weights": 0.5 * rng.normal(size=(2, 3)),
        "grows/from/zero/kernel": np.zeros((2, 2)),  # ‖w‖ = 0 at the first step
        "never/used/kernel": np.zeros((3,)),  # ‖w‖ = ‖u‖ = 0 for ever (zero gradient)
    }
    variables = {name: keras.Variable(value.astype(np.float32), name=f"v{i}")
                 for i, (name, value) in enumerate(initial.items())}
    return initial, variables


@pytest.mark.parametrize("name", ["adamw", "lamb"])
@pytest.mark.parametrize("gradient_scale,encoder_multiplier", [
    (0.05, 1.0), (10.0, 1.0),  # below / above the clipping norm
    (0.05, 0.1), (10.0, 0.0)])  # the encoder (bert/...) slower than the heads, or frozen
def test_updates_match_numpy_transcription(name, gradient_scale, encoder_multiplier):
    rng = np.random.default_rng(0)
    initial, variables = _variables(rng)
    optimizer = optimization.create_optimizer(
        init_lr=0.01, num_train_steps=20, num_warmup_steps=2, optimizer=name,
        variable_names=variables, encoder_learning_rate_multiplier=encoder_multiplier)
    params = {k: v.astype(np.float64) for k, v in initial.items()}
    m = {k: np.zeros_like(p) for k, p in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    names = list(variables)
    clipped_any = False
    for step in range(6):
        grads = {k: gradient_scale * rng.normal(size=p.shape) for k, p in params.items()}
        grads["never/used/kernel"] = np.zeros(3)
        clipped_any |= np.sqrt(sum(np.sum(g ** 2) for g in grads.values())) > 1.0
        lr = reference_lr(step, 0.01, 20, 2)
        assert float(optimizer.learning_rate) == pytest.approx(lr, rel=1e-6, abs=1e-12)
        optimizer.apply([tf.constant(grads[k], tf.float32) for k in names],
                        [variables[k] for k in names])
        reference_step(params, grads, m, v, lr, layer_adaptation=(name == "lamb"),
                       encoder_multiplier=encoder_multiplier)
        for key in names:
            np.testing.assert_allclose(variables[key].numpy(), params[key], rtol=2e-5,
                                       atol=1e-6, err_msg=f"{name} step {step} {key}")
    assert clipped_any == (gradient_scale > 1)
    assert int(optimizer.iterations) == 6
    slots = optimizer.slot_variables()
    assert list(slots) == [f"{k}/{s}" for k in names for s in ("adam_m", "adam_v")]
    for key in names:
        np.testing.assert_allclose(slots[f"{key}/adam_m"].numpy(), m[key], rtol=2e-5, atol=1e-7)
        np.testing.assert_allclose(slots[f"{key}/adam_v"].numpy(), v[key], rtol=2e-5, atol=1e-9)
    assert np.all(variables["never/used/kernel"].numpy() == 0)  # 0/0 ratio gave 1, not NaN
    frozen = [key for key in names if key.startswith("bert/")]
    assert all(np.array_equal(variables[key].numpy(), initial[key].astype(np.float32))
               for key in frozen) == (encoder_multiplier == 0.0)


def test_exclusions_follow_original_names_not_keras_paths():
    """Same values, same gradient; only the original name decides decay and adaptation."""
    results = {}
    for original in ("cls/predictions/output_bias", "cls/seq_relationship/output_weights"):
        variable = keras.Variable(np.full((4,), 2.0, np.float32), name="bias")
        optimizer = optimization.LAMB(0.1, variable_names={original: variable}, clip_norm=None)
        optimizer.apply([tf.constant([1e-3, -1e-3, 2e-3, 0.0])], [variable])
        results[original] = variable.numpy()
    g = np.array([1e-3, -1e-3, 2e-3, 0.0])
    u = 0.1 * g / (np.sqrt(0.001 * g * g) + 1e-6)  # m/(√v+ε) at step one
    np.testing.assert_allclose(results["cls/predictions/output_bias"], 2.0 - 0.1 * u, rtol=1e-5)
    u_decayed = u + 0.01 * 2.0
    ratio = np.linalg.norm(np.full(4, 2.0)) / np.linalg.norm(u_decayed)
    np.testing.assert_allclose(results["cls/seq_relationship/output_weights"],
                               2.0 - ratio * 0.1 * u_decayed, rtol=1e-5)


@pytest.mark.parametrize("step,expected", [
    (0, 0.0), (5, 5e-4), (9, 9e-4), (10, 1e-3 * 0.9), (55, 1e-3 * 0.45), (100, 0.0), (150, 0.0)])
def test_schedule_warmup_then_decay_from_step_zero(step, expected):
    schedule = optimization.WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    assert float(schedule(step)) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("step,expected", [
    (5, 1e-3 * (5 - 20) / 10),  # negative before start_warmup_step, as in the original
    (25, 5e-4), (30, 1e-3 * 0.7 ** 2), (50, 1e-3 * 0.25), (0, 1e-3 * -2.0)])
def test_schedule_start_warmup_step_and_poly_power(step, expected):
    schedule = optimization.WarmupPolynomialDecay(1e-3, 100, 10, poly_power=2.0,
                                                  start_warmup_step=20)
    assert float(schedule(step)) == pytest.approx(expected, abs=1e-10)


def test_schedule_without_warmup_and_validation():
    schedule = optimization.WarmupPolynomialDecay(2e-5, num_train_steps=4, num_warmup_steps=0)
    assert [float(schedule(s)) for s in range(5)] == pytest.approx([2e-5, 1.5e-5, 1e-5, 5e-6, 0])
    with pytest.raises(ValueError, match="--optimizer must be one of adamw, lamb"):
        optimization.create_optimizer(1e-3, 10, 1, optimizer="sgd")
    with pytest.raises(ValueError, match="num_train_steps"):
        optimization.WarmupPolynomialDecay(1e-3, 0, 0)


def test_unnamed_variables_fall_back_to_keras_path_and_duplicates_are_refused():
    variable = keras.Variable(np.ones(2, np.float32), name="output_bias")
    optimizer = optimization.AdamWeightDecay(0.1)
    optimizer.build([variable])
    assert list(optimizer.slot_variables()) == ["output_bias/adam_m", "output_bias/adam_v"]
    named = keras.Variable(np.ones(2, np.float32), name="a")
    optimizer = optimization.AdamWeightDecay(0.1, variable_names={"output_bias": named})
    with pytest.raises(ValueError, match="share the checkpoint name 'output_bias'"):
        optimizer.build([named, variable])


def test_runs_inside_tf_function():
    variable = keras.Variable(np.ones((2, 2), np.float32))
    optimizer = optimization.create_optimizer(0.1, 10, 0, optimizer="lamb",
                                              variable_names={"w/kernel": variable})
    optimizer.build([variable])

    @tf.function
    def step():
        optimizer.apply([tf.ones((2, 2))], [variable])

    step()
    step()
    assert int(optimizer.iterations) == 2
    assert np.all(variable.numpy() < 1.0)
