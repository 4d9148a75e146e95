"""The REST API's requests as http_rest_api_handler.cc answers them: the JSON document turned
into the request core's protos (`json_values`' rules and TF Serving's error texts), the request
core called as the gRPC API calls it, and its response protos turned back into TF Serving's JSON
(MakeJsonFromTensors, MakeJsonFromClassificationResult, MakeJsonFromRegressionResult).

Each call takes the decoded document and `find_runner()`, which resolves the model version the
URL names: called after the checks TF Serving makes before it looks the model up.
"""

import numpy as np
import tensorflow as tf
from google.protobuf import json_format
from tensorflow.core.framework import types_pb2
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, predict_pb2,
                                     regression_pb2)

from albert_tf.serving import json_values, request_core, tensor_protos
from albert_tf.serving.errors import Code, ServingError
from albert_tf.serving.model_runner import DEFAULT_SIGNATURE


def _signature_hint(name, signature_def):
    """What a refused Predict input is checked against, appended to the error (ours)."""
    inputs = ", ".join(f"{key} ({types_pb2.DataType.Name(info.dtype)})"
                       for key, info in sorted(signature_def.inputs.items()))
    return f" [signature \"{name}\" takes inputs: {inputs}]"


def predict(document, find_runner):
    """`:predict`: `{"predictions": ...}` for the row form (`instances`), `{"outputs": ...}`
    for the columnar form (`inputs`; a single output without its name, as TF Serving)."""
    name = json_values.signature_name(document) or DEFAULT_SIGNATURE
    runner = find_runner()
    signature_def = runner.signature_defs.get(name)
    if signature_def is None:  # GetInfoMap's text: TF Serving's REST API resolves it first
        raise ServingError(f"Serving signature name: \"{name}\" not found in signature def")
    dtypes = {key: tf.dtypes.as_dtype(info.dtype) for key, info in signature_def.inputs.items()}
    try:
        layout, arrays = json_values.predict_inputs(document, dtypes)
        request = predict_pb2.PredictRequest(model_spec={"signature_name": name})
        for key, array in arrays.items():  # numbers as tensor_content: one copy of the bytes
            request.inputs[key].CopyFrom(tensor_protos.tensor_proto(array, False, dtypes[key]))
        response = request_core.predict(runner, request, as_proto_field=False,
                                        signature_def=signature_def)
    except ServingError as error:
        if error.code != Code.INVALID_ARGUMENT or error.status != 400:
            raise
        raise ServingError(f"{error}{_signature_hint(name, signature_def)}") from error
    outputs = {key: json_values.to_json(tensor_protos.ndarray(proto), key)
               for key, proto in response.outputs.items()}
    if layout == "columnar":
        return {"outputs": next(iter(outputs.values())) if len(outputs) == 1 else outputs}
    return {"predictions": json_values.rows_from_columns(outputs)}


def examples_input(document):
    """The Input proto of a `:classify` / `:regress` document: `examples`, with the shared
    `context` as an ExampleListWithContext (FillClassifyRegressRequestFromJson)."""
    context, examples = json_values.examples_from_json(document)
    model_input = classification_pb2.ClassificationRequest().input
    if context is None:
        model_input.example_list.examples.extend(examples)
    else:
        model_input.example_list_with_context.context.CopyFrom(context)
        model_input.example_list_with_context.examples.extend(examples)
    return model_input


def _examples_result(document, find_runner, run, request):
    """The result of a `:classify` / `:regress` document: `request` (its request proto) filled
    from it and answered by the request core's `run`."""
    request.model_spec.signature_name = json_values.signature_name(document) or ""
    request.input.CopyFrom(examples_input(document))
    return run(find_runner(), request).result


def classify(document, find_runner):
    """`:classify`: `{"results": [[[label, score], ...], ...]}`, one list per example."""
    result = _examples_result(document, find_runner, request_core.classify,
                              classification_pb2.ClassificationRequest())
    classes = [list(classifications.classes) for classifications in result.classifications]
    scores = iter(json_values.float32_json(
        np.array([item.score for row in classes for item in row], dtype=np.float32)))
    return {"results": [[[item.label, next(scores)] for item in row] for row in classes]}


def regress(document, find_runner):
    """`:regress`: `{"results": [value, ...]}`, one float per example."""
    result = _examples_result(document, find_runner, request_core.regress,
                              regression_pb2.RegressionRequest())
    return {"results": json_values.float32_json(
        np.array([item.value for item in result.regressions], dtype=np.float32))}


def metadata(runner):
    """`/metadata`: the GetModelMetadataResponse as TF Serving's REST API writes it, the
    SignatureDefMap unpacked from its Any (DT_* dtypes, `tensor_shape.dim`, tensor names)."""
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    response = request_core.metadata(runner, request)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signature_map)
    spec = response.model_spec
    return {"model_spec": {"name": spec.name, "signature_name": spec.signature_name,
                           "version": str(spec.version.value)},
            "metadata": {"signature_def": json_format.MessageToDict(
                signature_map, preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True)}}


def model_status(response):
    """A GetModelStatusResponse printed as TF Serving's ProcessModelStatusRequest prints it:
    proto field names, every field (an OK status too), int64 versions as strings."""
    return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)
