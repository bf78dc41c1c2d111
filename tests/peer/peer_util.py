"""Shared by the peer tests: a half_plus_two ONNX model (TF Serving's test model, y = 0.5 x + 2) and a free port."""
import socket

from onnx import TensorProto, helper
import onnx


def half_plus_two(path):
    """Writes y = 0.5 * x + 2 (x, y float [N]) as an ONNX model to `path`."""
    a = helper.make_tensor('a', TensorProto.FLOAT, [], [0.5])
    b = helper.make_tensor('b', TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node('Mul', ['x', 'a'], ['ax']), helper.make_node('Add', ['ax', 'b'], ['y'])]
    g = helper.make_graph(nodes, 'half_plus_two', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N'])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N'])], [a, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), path)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
