"""TF Serving's request and response protos (tensorflow-serving-api) answered by a `ModelRunner`:
Predict, Classify, Regress, MultiInference and GetModelMetadata. Used by the gRPC API and by
warm-up, which replays the same requests from a version's `assets.extra`."""

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, inference_pb2,
                                     predict_pb2, regression_pb2)

from albert_tf.export import signature_methods
from albert_tf.serving.errors import ServingError


def set_model_spec(spec, runner, signature_name):
    """Fills a response's ModelSpec: the served name, version and signature."""
    spec.name = runner.model_name
    spec.version.value = runner.version
    spec.signature_name = signature_name or "serving_default"


def _ndarray(name, proto, spec):
    """A request TensorProto as numpy, refused unless its dtype is the signature's (as TF
    Serving: no silent casts)."""
    if proto.dtype != spec.dtype.as_datatype_enum:
        raise ServingError(f"Expects arg '{name}' to be {spec.dtype.name} but "
                           f"{tf.dtypes.as_dtype(proto.dtype).name} is provided")
    try:
        return tf.make_ndarray(proto)
    except (TypeError, ValueError) as error:
        raise ServingError(f"input '{name}': malformed TensorProto: {error}") from error


def predict(runner, request):
    """A PredictRequest's PredictResponse; `output_filter` limits the outputs returned."""
    signature = request.model_spec.signature_name or None
    specs = runner.input_specs(signature)
    unknown = sorted(set(request.inputs) - set(specs))
    missing = sorted(set(specs) - set(request.inputs))
    if unknown or missing:
        raise ServingError(f"inputs must be exactly {sorted(specs)}; missing {missing}, "
                           f"unknown {unknown}")
    columns = {name: _ndarray(name, request.inputs[name], specs[name]) for name in specs}
    outputs = runner.run(signature, columns)
    wanted = list(request.output_filter) or sorted(outputs)
    unknown = [name for name in wanted if name not in outputs]
    if unknown:
        raise ServingError(f"output tensor alias not found in signature: {unknown[0]} "
                           f"(outputs: {sorted(outputs)})")
    response = predict_pb2.PredictResponse()
    set_model_spec(response.model_spec, runner, signature)
    for name in wanted:
        response.outputs[name].CopyFrom(tf.make_tensor_proto(outputs[name]))
    return response


def serialized_examples(model_input):
    """The serialized tf.Examples of an `Input`: each example merged with the shared context."""
    kind = model_input.WhichOneof("kind")
    if kind == "example_list":
        examples = list(model_input.example_list.examples)
    elif kind == "example_list_with_context":
        context = model_input.example_list_with_context.context
        examples = []
        for example in model_input.example_list_with_context.examples:
            merged = tf.train.Example()
            merged.CopyFrom(context)
            merged.MergeFrom(example)
            examples.append(merged)
    else:
        raise ServingError("Input is empty: it needs example_list or example_list_with_context")
    if not examples:
        raise ServingError("Input is empty: no examples")
    return np.array([example.SerializeToString() for example in examples], dtype=object)


def _run_examples(runner, signature, model_input, method):
    specs = runner.input_specs(signature)
    if len(specs) != 1:
        raise ServingError(f"a {method} signature takes one input of serialized tf.Examples, "
                           f"signature {signature!r} takes {sorted(specs)}")
    return runner.run(signature, {next(iter(specs)): serialized_examples(model_input)}, method)


def classification_result(runner, signature, model_input, result):
    """Fills a ClassificationResult: per example, (label, score) per class."""
    outputs = _run_examples(runner, signature, model_input, signature_methods.CLASSIFY)
    classes = outputs.get(signature_methods.CLASSIFY_CLASSES)
    scores = outputs.get(signature_methods.CLASSIFY_SCORES)
    reference = scores if scores is not None else classes
    if reference is None:
        raise ServingError("the classify signature returns neither 'classes' nor 'scores'",
                           status=500)
    reference = reference.reshape(reference.shape[0], -1)
    for row in range(reference.shape[0]):
        classifications = result.classifications.add()
        for column in range(reference.shape[1]):
            item = classifications.classes.add()
            if classes is not None:
                label = classes.reshape(reference.shape)[row, column]
                item.label = label.decode("utf-8") if isinstance(label, bytes) else str(label)
            if scores is not None:
                item.score = float(scores.reshape(reference.shape)[row, column])


def regression_result(runner, signature, model_input, result):
    """Fills a RegressionResult: one value per example."""
    outputs = _run_examples(runner, signature, model_input, signature_methods.REGRESS)
    if signature_methods.REGRESS_OUTPUTS not in outputs:
        raise ServingError("the regress signature has no 'outputs' output", status=500)
    for value in np.reshape(outputs[signature_methods.REGRESS_OUTPUTS], [-1]):
        result.regressions.add().value = float(value)


def classify(runner, request):
    response = classification_pb2.ClassificationResponse()
    signature = request.model_spec.signature_name or None
    classification_result(runner, signature, request.input, response.result)
    set_model_spec(response.model_spec, runner, signature)
    return response


def regress(runner, request):
    response = regression_pb2.RegressionResponse()
    signature = request.model_spec.signature_name or None
    regression_result(runner, signature, request.input, response.result)
    set_model_spec(response.model_spec, runner, signature)
    return response


def multi_inference(runner, request):
    """Several Classify / Regress signatures of one model on the same input."""
    if not request.tasks:
        raise ServingError("MultiInferenceRequest has no tasks")
    names = {task.model_spec.name for task in request.tasks}
    if len(names) != 1:
        raise ServingError(f"all tasks of a MultiInference must name one model, got {sorted(names)}")
    signatures = [task.model_spec.signature_name or "serving_default" for task in request.tasks]
    if len(set(signatures)) != len(signatures):
        raise ServingError(f"duplicate signature in MultiInference tasks: {signatures}")
    response = inference_pb2.MultiInferenceResponse()
    for task, signature in zip(request.tasks, signatures):
        result = response.results.add()
        if task.method_name == signature_methods.CLASSIFY:
            classification_result(runner, signature, request.input, result.classification_result)
        elif task.method_name == signature_methods.REGRESS:
            regression_result(runner, signature, request.input, result.regression_result)
        else:
            raise ServingError(f"Unsupported signature method_name: {task.method_name!r} "
                               f"(MultiInference runs {signature_methods.CLASSIFY} or "
                               f"{signature_methods.REGRESS})")
        set_model_spec(result.model_spec, runner, signature)
    return response


def metadata(runner, request):
    """GetModelMetadata: the SignatureDefs, TF Serving's only metadata field."""
    fields = list(request.metadata_field)
    if fields != ["signature_def"]:
        raise ServingError(f"Metadata field(s) {fields} not supported; GetModelMetadata "
                           f"answers metadata_field 'signature_def'")
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for name, proto in runner.all_signature_defs.items():
        signature_map.signature_def[name].CopyFrom(proto)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    set_model_spec(response.model_spec, runner, None)
    response.model_spec.ClearField("signature_name")
    response.metadata["signature_def"].Pack(signature_map)
    return response
