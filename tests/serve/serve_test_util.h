// Helpers for the serving tests: small models built through the IR and written as ONNX, version directories
// written atomically, and a server on 127.0.0.1 with ephemeral ports.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "strata/graph.h"
#include "strata/serve.h"

namespace strata::serve::testing {

// The whole file as text ("" when it cannot be read): server logs for failure messages.
std::string Slurp(const std::string& path);

// A fresh, empty directory under the test temp dir.
std::string FreshDir(const std::string& name);

// half: x float32[batch] -> y = x * 0.5 + 2 (the spec's §1.5 example).
graph::Model HalfModel();
// iris: features float32[batch,4] -> logits = features @ W + b [batch,3], probabilities = Relu(logits) [batch,3].
// `shift` is added to b, so versions can be told apart.
graph::Model IrisModel(float shift = 0);
// tagger: text string[batch] -> tags_bytes = Identity(text) (a string output named *_bytes: b64 in JSON).
graph::Model TaggerModel();
// pair: a float32[batch,2], b float32[batch,2] -> sum = a + b (two inputs).
graph::Model PairModel();
// scorer: age float32[batch,1], spend float32[batch,1] -> scores = [age, spend] * W [batch,2] (classify/regress).
graph::Model ScorerModel();

// Writes `model` as <base>/<version>/model.onnx, atomically (written next to it, then renamed into place), with
// modification times in the past so that the version is immediately stable.
void WriteVersion(const std::string& base, int64_t version, const graph::Model& model);

// Options for a test server on 127.0.0.1 with ephemeral REST and gRPC ports and fast polling.
ServerOptions TestServerOptions();

// A raw TCP connection to 127.0.0.1:port, for requests an HTTP client library would not send (odd headers, a body
// that stops half way). Every call is bounded by `timeout`.
class RawConnection {
 public:
  explicit RawConnection(int port, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false on error.
  bool Send(const std::string& bytes);
  // Reads until the server closes the connection (or the timeout passes) and returns what arrived.
  std::string ReadToEnd();
  void Close();

 private:
  int fd_ = -1;
  std::chrono::milliseconds timeout_;
};

}  // namespace strata::serve::testing
