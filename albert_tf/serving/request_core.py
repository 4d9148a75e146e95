"""The request core: Predict, Classify, Regress, MultiInference and GetModelMetadata, each
implemented once on TF Serving's request and response protos (tensorflow-serving-api) and
answered by a `ModelRunner` (TF Serving's predict_impl, classification_service,
regression_service, multi_inference and get_model_metadata_impl). The gRPC front end calls
these with the client's protos, the REST front end with the protos it made from the JSON
(`rest_json`), warm-up with the records of a version's `assets.extra`: one set of rules for all."""

import numpy as np
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, inference_pb2,
                                     predict_pb2, regression_pb2)

from albert_tf.export import signature_methods
from albert_tf.serving import tensor_protos
from albert_tf.serving.errors import Code, ServingError
from albert_tf.serving.model_runner import DEFAULT_SIGNATURE


def set_model_spec(spec, runner, signature_name=""):
    """Fills a response's ModelSpec: the served name, version and signature."""
    spec.name, spec.version.value, spec.signature_name = (runner.model_name, runner.version,
                                                          signature_name)


def _ndarray(name, proto, spec):
    """A request TensorProto as numpy, refused unless its dtype is the signature's (as TF
    Serving: no silent casts)."""
    if proto.dtype != spec.dtype.as_datatype_enum:
        raise ServingError(f"Expects arg '{name}' to be {spec.dtype.name} but "
                           f"{tf.dtypes.as_dtype(proto.dtype).name} is provided")
    try:
        return tensor_protos.ndarray(proto)
    except (TypeError, ValueError) as error:
        raise ServingError(f"input '{name}': malformed TensorProto: {error}") from error


def _check_output_filter(request, output_names):
    """predict_util.cc PreProcessPrediction: each filtered alias exists, none twice."""
    seen = set()
    for alias in request.output_filter:
        if alias not in output_names:
            raise ServingError(f"output tensor alias not found in signature: {alias} Outputs "
                               f"expected to be in the set {{{','.join(sorted(output_names))}}}.")
        if alias in seen:
            raise ServingError(f"duplicate output tensor alias: {alias}")
        seen.add(alias)


def predict(runner, request, as_proto_field=True, signature_def=None):
    """A PredictRequest's PredictResponse, checked as predict_util.cc does before the model
    runs: the signature (FAILED_PRECONDITION when unknown; given as `signature_def` by a front
    end that resolved it), the inputs' names, the output filter; `output_filter` limits the
    outputs returned, `as_proto_field` chooses how their values are written
    (`tensor_protos.tensor_proto`)."""
    signature = request.model_spec.signature_name or DEFAULT_SIGNATURE
    signature_def = signature_def or runner.signature_defs.get(signature)
    if signature_def is None:
        raise ServingError(f"Serving signature key \"{signature}\" not found.",
                           code=Code.FAILED_PRECONDITION)
    specs = runner.input_specs(signature)
    sent, wanted = sorted(request.inputs), sorted(specs)
    if sent != wanted:
        raise ServingError(
            f"input size does not match signature: {len(sent)}!={len(wanted)} "
            f"len({{{','.join(sent)}}}) != len({{{','.join(wanted)}}}). Sent extra: "
            f"{{{','.join(sorted(set(sent) - set(wanted)))}}}. Missing but required: "
            f"{{{','.join(sorted(set(wanted) - set(sent)))}}}.")
    _check_output_filter(request, set(signature_def.outputs))
    columns = {name: _ndarray(name, request.inputs[name], specs[name]) for name in specs}
    outputs = runner.run(signature, columns)
    response = predict_pb2.PredictResponse()
    set_model_spec(response.model_spec, runner, signature)
    for name in list(request.output_filter) or sorted(outputs):
        response.outputs[name].CopyFrom(tensor_protos.tensor_proto(outputs[name], as_proto_field))
    return response


def serialized_examples(model_input):
    """The serialized tf.Examples of an `Input`: each example merged with the shared context,
    which may not repeat one of its features (input.proto leaves that undefined; refused)."""
    kind = model_input.WhichOneof("kind")
    if kind == "example_list":
        examples = list(model_input.example_list.examples)
    elif kind == "example_list_with_context":
        context = model_input.example_list_with_context.context
        examples = []
        for index, example in enumerate(model_input.example_list_with_context.examples):
            both = sorted(set(context.features.feature) & set(example.features.feature))
            if both:
                raise ServingError(f"examples[{index}]: features {both} are also in 'context'")
            merged = tf.train.Example()
            merged.CopyFrom(context)
            merged.MergeFrom(example)
            examples.append(merged)
    else:
        raise ServingError("Input is empty: it needs example_list or example_list_with_context")
    if not examples:
        raise ServingError("Input is empty: no examples")
    return np.array([example.SerializeToString() for example in examples], dtype=object)


_KIND = {signature_methods.CLASSIFY: "classification", signature_methods.REGRESS: "regression"}


def _run_examples(runner, name, model_input, method):
    """(number of examples, outputs) of the Classify or Regress signature `name` on the Input's
    examples, the signature checked as classifier.cc and regressor.cc check it, in their words
    and order (with the signature method name check on)."""
    signature_def = runner.signature_defs.get(name)
    if signature_def is None:
        raise ServingError(f"No signature was found with the name: {name}")
    kind = _KIND[method]
    if signature_def.method_name != method:
        raise ServingError(f"Expected {kind} signature method_name to be {method}. Was: "
                           f"{signature_def.method_name}")
    if len(signature_def.inputs) != 1:
        raise ServingError("Expected one input Tensor.")
    outputs = len(signature_def.outputs)
    if method == signature_methods.CLASSIFY and outputs not in (1, 2):
        raise ServingError(f"Expected one or two output Tensors, found {outputs}")
    if method == signature_methods.REGRESS and outputs != 1:
        raise ServingError("Expected one output Tensor.")
    if signature_methods.CLASSIFY_INPUTS not in signature_def.inputs:
        raise ServingError(f"No {kind} inputs found in SignatureDef: "
                           f"{text_format.MessageToString(signature_def)}")
    if method == signature_methods.REGRESS and (
            signature_methods.REGRESS_OUTPUTS not in signature_def.outputs):
        raise ServingError(f"No regression outputs found in SignatureDef: "
                           f"{text_format.MessageToString(signature_def)}")
    if method == signature_methods.CLASSIFY and not (
            {signature_methods.CLASSIFY_CLASSES, signature_methods.CLASSIFY_SCORES}
            & set(signature_def.outputs)):
        raise ServingError(f"Expected classification signature outputs to contain at least one "
                           f"of \"classes\" or \"scores\". Signature was: "
                           f"{text_format.MessageToString(signature_def)}")
    examples = serialized_examples(model_input)
    outputs = runner.run(name, {signature_methods.CLASSIFY_INPUTS: examples})
    return len(examples), outputs


def _dtype(array):
    return types_pb2.DataType.Name(tf.dtypes.as_dtype(np.asarray(array).dtype).as_datatype_enum)


def _check_classify_output(array, what, dtype, examples):
    """classifier.cc PostProcessClassificationResult's checks of `classes` or `scores`."""
    if np.ndim(array) != 2:
        raise ServingError(f"Expected Tensor shape: [batch_size num_classes] but got "
                           f"{tensor_protos.shape_string(np.shape(array))}")
    if _dtype(array) != dtype:
        raise ServingError(f"Expected {what} Tensor of {dtype}. Got: {_dtype(array)}")
    if array.shape[0] != examples:
        raise ServingError(f"Expected {what} output batch size of {examples}. Got: "
                           f"{array.shape[0]}")


def classification_result(runner, signature, model_input, result):
    """Fills a ClassificationResult: per example, (label, score) per class."""
    examples, outputs = _run_examples(runner, signature, model_input,
                                      signature_methods.CLASSIFY)
    classes = outputs.get(signature_methods.CLASSIFY_CLASSES)
    scores = outputs.get(signature_methods.CLASSIFY_SCORES)
    if classes is not None:
        _check_classify_output(classes, "classes", "DT_STRING", examples)
    if scores is not None:
        _check_classify_output(scores, "scores", "DT_FLOAT", examples)
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise ServingError(f"Tensors class and score should match in dim_size(1). Got "
                           f"{classes.shape[1]} vs. {scores.shape[1]}")
    labels = None if classes is None else [[label.decode("utf-8") for label in row]
                                           for row in classes.tolist()]
    values = None if scores is None else scores.tolist()
    for row in range(examples):
        classifications = result.classifications.add()
        for column in range(len((values or labels)[row])):
            item = classifications.classes.add()
            if labels is not None:
                item.label = labels[row][column]
            if values is not None:
                item.score = values[row][column]


def regression_result(runner, signature, model_input, result):
    """Fills a RegressionResult: one value per example, checked as regressor.cc's
    PostProcessRegressionResult checks it."""
    examples, outputs = _run_examples(runner, signature, model_input, signature_methods.REGRESS)
    values = outputs[signature_methods.REGRESS_OUTPUTS]
    shape = np.shape(values)
    if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
        raise ServingError(f"Expected output Tensor shape to be either [batch_size] or "
                           f"[batch_size, 1] but got {tensor_protos.shape_string(shape)}")
    if shape[0] != examples:
        raise ServingError(f"Input batch size did not match output batch size: {examples} vs. "
                           f"{shape[0]}")
    if _dtype(values) != "DT_FLOAT":
        raise ServingError(f"Expected output Tensor of DT_FLOAT.  Got: {_dtype(values)}")
    for value in np.reshape(values, [-1]):
        result.regressions.add().value = float(value)


def classify(runner, request):
    """A ClassificationRequest's ClassificationResponse."""
    return _examples_response(runner, request, classification_result,
                              classification_pb2.ClassificationResponse())


def regress(runner, request):
    """A RegressionRequest's RegressionResponse."""
    return _examples_response(runner, request, regression_result,
                              regression_pb2.RegressionResponse())


def _examples_response(runner, request, fill_result, response):
    signature = request.model_spec.signature_name or DEFAULT_SIGNATURE
    fill_result(runner, signature, request.input, response.result)
    set_model_spec(response.model_spec, runner, signature)
    return response


def _check_tasks(runner, request):
    """multi_inference.cc: every task names the one model, a signature once, a signature the
    model has, and a classify or regress method (UNIMPLEMENTED otherwise); checked for every
    task before any runs."""
    signatures = []
    for task in request.tasks:
        if not task.model_spec.name:
            raise ServingError("Found ModelSpec with an empty model name.")
        if task.model_spec.name != request.tasks[0].model_spec.name:
            raise ServingError("All ModelSpecs in a MultiInferenceRequest must access the same "
                               "model name.")
        signature = task.model_spec.signature_name or DEFAULT_SIGNATURE
        if signature in signatures:
            raise ServingError(f"Duplicate evaluation of signature: {signature}")
        signatures.append(signature)
        if signature not in runner.signature_defs:
            raise ServingError(f"Requested signature not found in model graph: {signature}")
        if task.method_name not in (signature_methods.CLASSIFY, signature_methods.REGRESS):
            raise ServingError(f"Unsupported signature method_name: {task.method_name}",
                               code=Code.UNIMPLEMENTED)
    return signatures


def multi_inference(runner, request):
    """Several Classify / Regress signatures of one model on the same input."""
    signatures = _check_tasks(runner, request)
    if request.input.WhichOneof("kind") is None:
        raise ServingError("Input is empty")
    response = inference_pb2.MultiInferenceResponse()
    for task, signature in zip(request.tasks, signatures):
        result = response.results.add()
        if task.method_name == signature_methods.CLASSIFY:
            classification_result(runner, signature, request.input, result.classification_result)
        else:
            regression_result(runner, signature, request.input, result.regression_result)
        set_model_spec(result.model_spec, runner, signature)
    return response


def check_metadata_fields(request):
    """get_model_metadata_impl.cc ValidateGetModelMetadataRequest: at least one field, each
    one TF Serving answers (signature_def)."""
    if not request.metadata_field:
        raise ServingError("GetModelMetadataRequest must specify at least one metadata_field")
    for field in request.metadata_field:
        if field != "signature_def":
            raise ServingError(f"Metadata field {field} is not supported")


def metadata(runner, request):
    """GetModelMetadata: the SignatureDefs, TF Serving's only metadata field."""
    check_metadata_fields(request)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for name, proto in runner.all_signature_defs.items():
        signature_map.signature_def[name].CopyFrom(proto)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    set_model_spec(response.model_spec, runner)
    response.metadata["signature_def"].Pack(signature_map)
    return response
