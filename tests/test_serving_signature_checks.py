"""The Classify and Regress signature checks of the request core, with TF Serving's codes and
texts. The cases are those of TF Serving's tensorflow_serving/servables/tensorflow/
classifier_test.cc and regressor_test.cc (with the signature method name check on), run, as
there, against a fake session: a servable that answers whatever outputs the case gives it. Plus
the request core's promise that a REST predict resolves its signature once."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow_serving.apis import classification_pb2, regression_pb2

from albert_tf.export import signature_methods as methods
from albert_tf.serving import request_core, rest_json
from albert_tf.serving.errors import Code, ServingError


def _signature(method, inputs=("inputs",), outputs=("classes", "scores")):
    signature = meta_graph_pb2.SignatureDef(method_name=method)
    for key in inputs:
        signature.inputs[key].name, signature.inputs[key].dtype = f"{key}:0", types_pb2.DT_STRING
    for key in outputs:
        signature.outputs[key].name = f"{key}:0"
    return signature


class FakeServable:
    """TF Serving's tests' FakeSession: `outputs(examples)` answers every run."""

    model_name, version = "m", 1

    def __init__(self, signature_defs, outputs):
        self.signature_defs, self._outputs, self.runs = signature_defs, outputs, []

    def run(self, name, columns):
        self.runs.append(name)
        return self._outputs(columns["inputs"])


def _examples(count=2):
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)]))}))
        for i in range(count)]
    request = classification_pb2.ClassificationRequest()
    request.input.example_list.examples.extend(examples)
    return request.input


def _classes_and_scores(examples):
    rows = len(examples)
    return {"classes": np.array([[b"dos", b"uno"]] * rows, dtype=object),
            "scores": np.array([[2.0, 1.0]] * rows, np.float32)}


def _classify(servable, model_input=None, name=""):
    request = classification_pb2.ClassificationRequest(input=model_input or _examples())
    request.model_spec.name, request.model_spec.signature_name = "m", name
    return request_core.classify(servable, request).result


def _regress(servable, model_input=None, name=""):
    request = regression_pb2.RegressionRequest(input=model_input or _examples())
    request.model_spec.name, request.model_spec.signature_name = "m", name
    return request_core.regress(servable, request).result


def _refused(call, servable, **kwargs):
    with pytest.raises(ServingError) as error:
        call(servable, **kwargs)
    assert error.value.code == Code.INVALID_ARGUMENT and error.value.status == 400
    return str(error.value)


def test_classes_and_scores_are_answered_per_example():
    """classifier_test.cc ExampleList, ClassesOnly, ScoresOnly."""
    both = FakeServable({"serving_default": _signature(methods.CLASSIFY)}, _classes_and_scores)
    result = _classify(both)
    assert [[(c.label, c.score) for c in row.classes] for row in result.classifications] == [
        [("dos", 2.0), ("uno", 1.0)]] * 2
    classes_only = FakeServable({"serving_default": _signature(methods.CLASSIFY,
                                                               outputs=["classes"])},
                                lambda examples: {"classes": _classes_and_scores(examples)[
                                    "classes"]})
    assert [[(c.label, c.score) for c in row.classes]
            for row in _classify(classes_only).classifications] == [[("dos", 0.0),
                                                                     ("uno", 0.0)]] * 2


@pytest.mark.parametrize("signature_defs, name, text", [
    # InvalidNamedSignature (a name the MetaGraphDef lacks).
    ({}, "nope", "No signature was found with the name: nope"),
    # MissingClassificationSignature: an empty SignatureDef under serving_default.
    ({"serving_default": meta_graph_pb2.SignatureDef()}, "",
     "Expected classification signature method_name to be tensorflow/serving/classify. Was: "),
    # MethodNameCheck: an unsupported method, and a regress signature.
    ({"serving_default": _signature("not/supported/method")}, "",
     "Expected classification signature method_name to be tensorflow/serving/classify. Was: "
     "not/supported/method"),
    ({"r": _signature(methods.REGRESS, outputs=["outputs"])}, "r",
     "Expected classification signature method_name to be tensorflow/serving/classify. Was: "
     "tensorflow/serving/regress"),
    # PreProcessClassification: one input, one or two outputs, named as the API says.
    ({"serving_default": _signature(methods.CLASSIFY, inputs=("inputs", "more"))}, "",
     "Expected one input Tensor."),
    ({"serving_default": _signature(methods.CLASSIFY, outputs=("classes", "scores", "x"))}, "",
     "Expected one or two output Tensors, found 3"),
    ({"serving_default": _signature(methods.CLASSIFY, inputs=("examples",))}, "",
     "No classification inputs found in SignatureDef: "),
    ({"serving_default": _signature(methods.CLASSIFY, outputs=("labels",))}, "",
     'Expected classification signature outputs to contain at least one of "classes" or '
     '"scores". Signature was: '),
])
def test_classify_signatures_refused_as_classifier_cc_refuses_them(signature_defs, name, text):
    servable = FakeServable(signature_defs, _classes_and_scores)
    assert _refused(_classify, servable, name=name).startswith(text)
    assert servable.runs == []  # refused before the model runs


@pytest.mark.parametrize("outputs, text", [
    # MalformedScores: scores of rank 3.
    ({"scores": np.zeros([2, 1, 10], np.float32)},
     "Expected Tensor shape: [batch_size num_classes] but got [2,1,10]"),
    # ClassesIncorrectTensorBatchSize, ClassesIncorrectTensorType.
    ({"classes": np.array([[b"a", b"b"]], dtype=object), "scores": np.zeros([2, 2], np.float32)},
     "Expected classes output batch size of 2. Got: 1"),
    ({"classes": np.zeros([2, 2], np.float32), "scores": np.zeros([2, 2], np.float32)},
     "Expected classes Tensor of DT_STRING. Got: DT_FLOAT"),
    # ScoresIncorrectTensorBatchSize, ScoresIncorrectTensorType.
    ({"classes": np.array([[b"a", b"b"]] * 2, dtype=object), "scores": np.zeros([1, 2], np.float32)},
     "Expected scores output batch size of 2. Got: 1"),
    ({"classes": np.array([[b"a", b"b"]] * 2, dtype=object),
      "scores": np.array([[b"a", b"b"]] * 2, dtype=object)},
     "Expected scores Tensor of DT_FLOAT. Got: DT_STRING"),
    # MismatchedNumberOfTensorClasses.
    ({"classes": np.array([[b"a", b"b"]] * 2, dtype=object), "scores": np.zeros([2, 3], np.float32)},
     "Tensors class and score should match in dim_size(1). Got 2 vs. 3"),
])
def test_classify_outputs_refused_as_classifier_cc_refuses_them(outputs, text):
    servable = FakeServable({"serving_default": _signature(methods.CLASSIFY)},
                            lambda examples: outputs)
    assert _refused(_classify, servable) == text


def test_empty_inputs_are_refused_before_the_model_runs():
    """classifier_test.cc / regressor_test.cc EmptyInput, EmptyExampleList,
    EmptyExampleListWithContext: 'Input is empty'."""
    empty_list = classification_pb2.ClassificationRequest()
    empty_list.input.example_list.SetInParent()
    empty_context = classification_pb2.ClassificationRequest()
    empty_context.input.example_list_with_context.context.SetInParent()
    for model_input in (classification_pb2.ClassificationRequest().input, empty_list.input,
                        empty_context.input):
        classify = FakeServable({"serving_default": _signature(methods.CLASSIFY)},
                                _classes_and_scores)
        regress = FakeServable({"serving_default": _signature(methods.REGRESS,
                                                              outputs=["outputs"])}, None)
        assert "Input is empty" in _refused(_classify, classify, model_input=model_input)
        assert "Input is empty" in _refused(_regress, regress, model_input=model_input)
        assert classify.runs == regress.runs == []


def _regress_signature(**kwargs):
    return {"serving_default": _signature(methods.REGRESS, **{"outputs": ["outputs"], **kwargs})}


def test_regressions_are_one_value_per_example():
    """regressor_test.cc BasicExampleList ([batch_size]) and ValidNamedSignature
    ([batch_size, 1])."""
    for shape in ([2], [2, 1]):
        servable = FakeServable(_regress_signature(),
                                lambda examples, shape=shape: {"outputs": np.reshape(
                                    np.array([3.0, 4.0], np.float32), shape)})
        assert [item.value for item in _regress(servable).regressions] == [3.0, 4.0]


@pytest.mark.parametrize("signature_defs, text", [
    # MissingRegressionSignature, MethodNameCheck.
    ({"serving_default": meta_graph_pb2.SignatureDef()},
     "Expected regression signature method_name to be tensorflow/serving/regress. Was: "),
    ({"serving_default": _signature(methods.CLASSIFY)},
     "Expected regression signature method_name to be tensorflow/serving/regress. Was: "
     "tensorflow/serving/classify"),
    ({}, "No signature was found with the name: serving_default"),
    # PreProcessRegression: one input "inputs", one output "outputs".
    (_regress_signature(inputs=("inputs", "b")), "Expected one input Tensor."),
    (_regress_signature(outputs=("outputs", "b")), "Expected one output Tensor."),
    (_regress_signature(inputs=("x",)), "No regression inputs found in SignatureDef: "),
    (_regress_signature(outputs=("y",)), "No regression outputs found in SignatureDef: "),
])
def test_regress_signatures_refused_as_regressor_cc_refuses_them(signature_defs, text):
    servable = FakeServable(signature_defs, None)
    assert _refused(_regress, servable).startswith(text)


@pytest.mark.parametrize("outputs, text", [
    # MalformedOutputs: [batch_size, 1, 10].
    (np.zeros([2, 1, 10], np.float32), "Expected output Tensor shape to be either [batch_size] "
                                       "or [batch_size, 1] but got [2,1,10]"),
    # UnexpectedOutputTensorSize: 1 example, 2 values.
    (np.zeros([3], np.float32), "Input batch size did not match output batch size: 2 vs. 3"),
    # UnexpectedOutputTensorType.
    (np.array([b"a", b"b"], dtype=object), "Expected output Tensor of DT_FLOAT.  Got: DT_STRING"),
])
def test_regress_outputs_refused_as_regressor_cc_refuses_them(outputs, text):
    servable = FakeServable(_regress_signature(), lambda examples: {"outputs": outputs})
    assert _refused(_regress, servable) == text


class CountingSignatures(dict):
    """A signature map counting how often a request looks a signature up."""

    lookups = 0

    def get(self, key, default=None):
        self.lookups += 1
        return super().get(key, default)

    def __getitem__(self, key):
        self.lookups += 1
        return super().__getitem__(key)

    def __contains__(self, key):
        self.lookups += 1
        return super().__contains__(key)


def test_a_rest_predict_resolves_its_signature_once():
    predict = meta_graph_pb2.SignatureDef(method_name=methods.PREDICT)
    predict.inputs["x"].dtype = predict.outputs["y"].dtype = types_pb2.DT_FLOAT
    servable = FakeServable(CountingSignatures(serving_default=predict), None)
    servable.input_specs = lambda name: {"x": tf.TensorSpec([None], tf.float32)}
    servable.run = lambda name, columns: {"y": columns["x"] * 2}
    answer = rest_json.predict({"instances": [1.0, 2.0]}, lambda: servable)
    assert answer == {"predictions": [2.0, 4.0]}
    assert servable.signature_defs.lookups == 1
