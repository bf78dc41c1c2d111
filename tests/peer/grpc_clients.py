#!/usr/bin/env python3
"""Official gRPC clients against a real `strata serve` (peer test; run with the peers venv's python).

    tests/peer/grpc_clients.py BUILD/strata

- TF Serving's own Python client (tensorflow-serving-api: PredictionServiceStub, ModelServiceStub) predicts
  half_plus_two (y = 0.5 x + 2, as an ONNX model) with TF Serving's documented request and gets its answer
  [2.5, 3.0, 4.5], reads the model's status (AVAILABLE) and metadata (the serving_default signature).
- grpc's reflection client (grpcio-reflection) lists the server's services: TF Serving's two, the Open Inference
  Protocol's, the health service and reflection itself.
- grpc's health client (grpcio-health-checking) gets SERVING for the server and TF Serving's services, NOT_FOUND for
  an unknown service.

Prints one line per check and "N passed, M failed"; exits 1 when a check failed. Loopback only, bounded in time.
"""
import os, sys, time

try:
    import grpc
    import numpy as np
    from peer_util import HalfPlusTwoServer, Tally
    import tensorflow as tf
    from tensorflow_serving.apis import (get_model_metadata_pb2, get_model_status_pb2, model_service_pb2_grpc,
                                         predict_pb2, prediction_service_pb2_grpc)
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
except ImportError as e:
    print(f'peers venv missing ({e}): run scripts/install-deps.sh --peers')
    sys.exit(77)


def check_tf_serving_client(ch):
    problems = []
    stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
    req = predict_pb2.PredictRequest()
    req.model_spec.name = 'half_plus_two'
    req.model_spec.signature_name = 'serving_default'
    req.inputs['x'].CopyFrom(tf.make_tensor_proto([1.0, 2.0, 5.0], dtype=tf.float32))
    resp = stub.Predict(req, timeout=30)
    got = tf.make_ndarray(resp.outputs['y']).tolist()
    if got != [2.5, 3.0, 4.5]:
        problems.append(f'Predict: {got}, TF Serving documents [2.5, 3.0, 4.5]')
    if resp.model_spec.name != 'half_plus_two' or resp.model_spec.version.value != 1:
        problems.append(f'Predict model_spec: {resp.model_spec}')
    st = model_service_pb2_grpc.ModelServiceStub(ch).GetModelStatus(
        get_model_status_pb2.GetModelStatusRequest(model_spec={'name': 'half_plus_two'}), timeout=30)
    states = [(v.version, get_model_status_pb2.ModelVersionStatus.State.Name(v.state)) for v in st.model_version_status]
    if states != [(1, 'AVAILABLE')]:
        problems.append(f'GetModelStatus: {states}')
    md = stub.GetModelMetadata(get_model_metadata_pb2.GetModelMetadataRequest(
        model_spec={'name': 'half_plus_two'}, metadata_field=['signature_def']), timeout=30)
    if 'signature_def' not in md.metadata:
        problems.append(f'GetModelMetadata: no signature_def in {list(md.metadata)}')
    if not problems:
        print(f'    tensorflow-serving-api: Predict {got}, status {states}, metadata signature_def')
    return problems


def check_reflection(ch):
    stub = reflection_pb2_grpc.ServerReflectionStub(ch)
    responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services='')]),
                                          timeout=30)
    names = sorted(s.name for r in responses for s in r.list_services_response.service)
    want = ['grpc.health.v1.Health', 'inference.GRPCInferenceService', 'tensorflow.serving.ModelService',
            'tensorflow.serving.PredictionService']
    missing = [w for w in want if w not in names]
    if missing:
        return [f'reflection lists {names}; missing {missing}']
    print(f'    reflection: {names}')
    return []


def check_health(ch):
    problems = []
    stub = health_pb2_grpc.HealthStub(ch)
    for service in ('', 'tensorflow.serving.PredictionService', 'tensorflow.serving.ModelService',
                    'inference.GRPCInferenceService'):
        r = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=30)
        if r.status != health_pb2.HealthCheckResponse.SERVING:
            problems.append(f'health of {service!r}: {health_pb2.HealthCheckResponse.ServingStatus.Name(r.status)}')
    try:
        stub.Check(health_pb2.HealthCheckRequest(service='no.such.Service'), timeout=30)
        problems.append('an unknown service did not give NOT_FOUND')
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.NOT_FOUND:
            problems.append(f'an unknown service gave {e.code()}, want NOT_FOUND')
    if not problems:
        print('    health: SERVING for the server, both TF Serving services and the v2 service; NOT_FOUND for an unknown one')
    return problems


def main():
    tally = Tally()
    with HalfPlusTwoServer(os.path.abspath(sys.argv[1]), tally, grpc=True) as server:
        ch = grpc.insecure_channel(f'127.0.0.1:{server.port}')
        grpc.channel_ready_future(ch).result(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline:  # until the version is AVAILABLE
            try:
                st = model_service_pb2_grpc.ModelServiceStub(ch).GetModelStatus(
                    get_model_status_pb2.GetModelStatusRequest(model_spec={'name': 'half_plus_two'}), timeout=5)
                if [v.state for v in st.model_version_status] == [get_model_status_pb2.ModelVersionStatus.AVAILABLE]:
                    break
            except grpc.RpcError:
                pass
            time.sleep(0.2)
        tally.run('tf_serving_client', check_tf_serving_client, ch)
        tally.run('reflection', check_reflection, ch)
        tally.run('health', check_health, ch)
        ch.close()
    return tally.finish()


if __name__ == '__main__':
    sys.exit(main())
