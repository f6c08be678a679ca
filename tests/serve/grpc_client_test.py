"""serve's gRPC front end through TensorFlow Serving's own Python client (tensorflow-serving-api),
unchanged: Predict with both signatures and both float encodings, Classify, GetModelMetadata,
GetModelStatus, HandleReloadConfigRequest (two models, one with a version label), and the error
codes. Run by grpc_client_run.sh:

    grpc_client_test.py GRPC_PORT REST_PORT MODEL_NAME MODEL_DIR
"""
import base64
import json
import sys
import urllib.request

import grpc
import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2,
                                     get_model_status_pb2, model_management_pb2,
                                     model_service_pb2_grpc, predict_pb2,
                                     prediction_service_pb2_grpc)

grpc_port, rest_port, model, model_dir = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
models = model_service_pb2_grpc.ModelServiceStub(channel)
pixels = (np.arange(90 * 120 * 3, dtype=np.int64).reshape(90, 120, 3) * 7 % 256).astype(np.uint8)
jpeg = tf.io.encode_jpeg(pixels, quality=90).numpy()
failures = []


def check(condition, what):
    print(("ok     " if condition else "FAILED ") + what)
    if not condition:
        failures.append(what)


def rest(path, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{rest_port}{path}",
                                     data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def code_of(call, request):
    try:
        call(request, timeout=60)
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


# Metadata: the input's size, as the REST metadata reports it.
metadata_request = get_model_metadata_pb2.GetModelMetadataRequest()
metadata_request.model_spec.name = model
metadata_request.metadata_field.append("signature_def")
metadata = stub.GetModelMetadata(metadata_request, timeout=60)
signatures = get_model_metadata_pb2.SignatureDefMap()
check(metadata.metadata["signature_def"].Unpack(signatures), "GetModelMetadata: a SignatureDefMap")
serving = signatures.signature_def["serving_default"]
dims = [d.size for d in serving.inputs["images"].tensor_shape.dim]
rest_dims = [int(d["size"]) for d in rest(f"/v1/models/{model}/metadata")["metadata"]["signature_def"]
             ["signature_def"]["serving_default"]["inputs"]["images"]["tensor_shape"]["dim"]]
check(dims == rest_dims and dims[0] == -1 and dims[3] == 3, f"serving_default images {dims} as REST's")
check(serving.outputs["classes"].dtype == tf.int64.as_datatype_enum, "classes is DT_INT64")
check(signatures.signature_def["classify"].inputs["image_bytes"].dtype == tf.string.as_datatype_enum,
      "classify takes DT_STRING image_bytes")
height, width = dims[1], dims[2]

# Status.
status_request = get_model_status_pb2.GetModelStatusRequest()
status_request.model_spec.name = model
status = models.GetModelStatus(status_request, timeout=60)
version = status.model_version_status[0]
check(version.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE, "GetModelStatus: AVAILABLE")
check(str(version.version) == rest(f"/v1/models/{model}")["model_version_status"][0]["version"],
      "GetModelStatus: REST's version")

# Predict, classify signature: JPEG bytes decoded in the server, as REST's b64.
rest_probabilities = np.array(
    rest(f"/v1/models/{model}:predict",
         {"instances": [{"b64": base64.b64encode(jpeg).decode()}]})["predictions"][0]["probabilities"],
    dtype=np.float32)
request = predict_pb2.PredictRequest()
request.model_spec.name = model
request.model_spec.signature_name = "classify"
request.inputs["image_bytes"].CopyFrom(tf.make_tensor_proto([jpeg], dtype=tf.string))
response = stub.Predict(request, timeout=60)
probabilities = tf.make_ndarray(response.outputs["probabilities"])
check(probabilities.shape == (1, rest_probabilities.size), f"probabilities shape {probabilities.shape}")
check(np.array_equal(probabilities[0], rest_probabilities), "Predict(classify) == REST :predict, bit for bit")
check(tf.make_ndarray(response.outputs["classes"])[0] == int(np.argmax(rest_probabilities)), "classes")

# Predict, serving_default: the same image preprocessed as the server does (the central crop and
# resize differ in detail from TensorFlow's, so the floats come from the server's own
# preprocessing: a float32 REST instance of a constant image is preprocessed by nobody).
image = np.full((2, height, width, 3), 0.25, dtype=np.float32)
image[1] = -0.5
for encoding in ("tensor_content", "float_val"):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    if encoding == "tensor_content":
        request.inputs["images"].CopyFrom(tf.make_tensor_proto(image))
    else:
        tensor = request.inputs["images"]
        tensor.dtype = tf.float32.as_datatype_enum
        for d in image.shape:
            tensor.tensor_shape.dim.add().size = d
        tensor.float_val.extend(image.ravel().tolist())
    response = stub.Predict(request, timeout=60)
    got = tf.make_ndarray(response.outputs["probabilities"])
    want = np.array([p["probabilities"] for p in
                     rest(f"/v1/models/{model}:predict", {"instances": image.tolist()})["predictions"]],
                    dtype=np.float32)
    check(np.array_equal(got, want), f"Predict(serving_default, {encoding}) == REST float instances")

# Classify: tf.Example with image/encoded.
classify_request = classification_pb2.ClassificationRequest()
classify_request.model_spec.name = model
example = classify_request.input.example_list.examples.add()
example.features.feature["image/encoded"].bytes_list.value.append(jpeg)
classified = stub.Classify(classify_request, timeout=60)
top = classified.result.classifications[0].classes
rest_top = rest(f"/v1/models/{model}:classify",
                {"instances": [{"b64": base64.b64encode(jpeg).decode()}]})["result"][0]
check([c.label for c in top] == [label for label, _ in rest_top], "Classify: REST :classify's labels")
check(all(np.float32(c.score) == np.float32(score) for c, (_, score) in zip(top, rest_top)),
      "Classify: REST :classify's scores")

# Reload: the served model's own config is applied; a model without a base_path is refused.
reload = model_management_pb2.ReloadConfigRequest()
own = reload.config.model_config_list.config.add()
own.name = model
own.base_path = model_dir
check(code_of(models.HandleReloadConfigRequest, reload)[0] == grpc.StatusCode.OK, "reload: own config OK")
reload.config.model_config_list.config.add().name = "another"
check(code_of(models.HandleReloadConfigRequest, reload)[0] == grpc.StatusCode.INVALID_ARGUMENT,
      "reload: a model without base_path INVALID_ARGUMENT")

# Two models from one config, the second with a version label; then back to the first alone.
two = model_management_pb2.ReloadConfigRequest()
first = two.config.model_config_list.config.add()
first.name = model
first.base_path = model_dir
second = two.config.model_config_list.config.add()
second.name = "second"
second.base_path = model_dir
second.model_platform = "tensorflow"
second.model_version_policy.latest.num_versions = 1
second.version_labels["stable"] = version.version
check(code_of(models.HandleReloadConfigRequest, two)[0] == grpc.StatusCode.OK, "reload: two models OK")
labelled = predict_pb2.PredictRequest()
labelled.model_spec.name = "second"
labelled.model_spec.version_label = "stable"
labelled.inputs["images"].CopyFrom(tf.make_tensor_proto(image[:1]))
answer = stub.Predict(labelled, timeout=60)
check(answer.model_spec.name == "second" and answer.model_spec.version.value == version.version,
      "Predict by version_label: the label's version")
labelled.model_spec.version_label = "canary"
check(code_of(stub.Predict, labelled)[0] == grpc.StatusCode.NOT_FOUND, "unknown version_label: NOT_FOUND")
second_status = get_model_status_pb2.GetModelStatusRequest()
second_status.model_spec.name = "second"
check(models.GetModelStatus(second_status, timeout=60).model_version_status[0].state ==
      get_model_status_pb2.ModelVersionStatus.AVAILABLE, "GetModelStatus of the second model: AVAILABLE")
check(rest("/v1/models/second/labels/stable")["model_version_status"][0]["version"] == str(version.version),
      "REST status by label")
check(code_of(models.HandleReloadConfigRequest, reload)[0] == grpc.StatusCode.INVALID_ARGUMENT,
      "reload: a bad config leaves the two models")
labelled.model_spec.version_label = "stable"
check(code_of(stub.Predict, labelled)[0] == grpc.StatusCode.OK, "the second model serves after a bad reload")
del two.config.model_config_list.config[1]
check(code_of(models.HandleReloadConfigRequest, two)[0] == grpc.StatusCode.OK, "reload: back to one model")
check(code_of(models.GetModelStatus, second_status)[0] == grpc.StatusCode.NOT_FOUND,
      "the removed model: NOT_FOUND")

# Errors.
def predict_with(change):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.inputs["images"].CopyFrom(tf.make_tensor_proto(image[:1]))
    change(request)
    return code_of(stub.Predict, request)


def set_nan(request):
    bad = image[:1].copy()
    bad[0, 0, 1, 2] = np.nan
    request.inputs["images"].CopyFrom(tf.make_tensor_proto(bad))


cases = [
    ("unknown model", lambda r: setattr(r.model_spec, "name", "nope"), grpc.StatusCode.NOT_FOUND, ""),
    ("unknown version", lambda r: r.model_spec.version.__setattr__("value", 987654),
     grpc.StatusCode.NOT_FOUND, ""),
    ("unknown signature", lambda r: setattr(r.model_spec, "signature_name", "nope"),
     grpc.StatusCode.INVALID_ARGUMENT, "signature_name"),
    ("wrong dtype", lambda r: r.inputs["images"].CopyFrom(tf.make_tensor_proto(image[:1].astype(np.float64))),
     grpc.StatusCode.INVALID_ARGUMENT, "DT_DOUBLE"),
    ("wrong shape", lambda r: r.inputs["images"].CopyFrom(tf.make_tensor_proto(image[:1, :-1])),
     grpc.StatusCode.INVALID_ARGUMENT, "shape"),
    ("NaN", set_nan, grpc.StatusCode.INVALID_ARGUMENT, "[0][0][1][2]"),
]
for what, change, want, text in cases:
    code, details = predict_with(change)
    check(code == want and text in details, f"{what}: {code} ({details})")
huge = predict_pb2.PredictRequest()
huge.model_spec.name = model
huge.inputs["images"].CopyFrom(tf.make_tensor_proto(np.zeros((64, height, width, 3), np.float32)))
code, details = code_of(stub.Predict, huge)
check(code == grpc.StatusCode.RESOURCE_EXHAUSTED, f"over --grpc_max_message_bytes: {code}")

if failures:
    print(f"grpc client: {len(failures)} FAILED")
    sys.exit(1)
print("grpc client: all passed")
