#include "serve_test_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "core/file_util.h"
#include "strata/onnx.h"

namespace strata::serve::testing {

namespace fs = std::filesystem;
using graph::Model;
using graph::Node;

std::string Slurp(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? std::move(text).value() : std::string();
}

std::string FreshDir(const std::string& name) {
  static std::atomic<int> counter{0};
  const std::string d = StrCat(::testing::TempDir(), "/strata_serve_", getpid(), "_", counter++, "_", name);
  std::error_code ec;
  fs::remove_all(d, ec);
  STRATA_CHECK_OK(MakeDirs(d));
  return d;
}

namespace {
Model Base(const std::string& name) {
  Model m;
  m.opset_imports[""] = 17;
  m.graph.name = name;
  return m;
}
Node MakeNode(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  return Node{.name = out[0] + "_" + op, .op_type = op, .inputs = std::move(in), .outputs = std::move(out), .opset = 17};
}
}  // namespace

Model HalfModel() {
  Model m = Base("half");
  m.graph.inputs.push_back({"x", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch")})});
  m.graph.outputs.push_back({"y", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch")})});
  m.graph.initializers["half"] = Tensor::Scalar<float>(0.5f);
  m.graph.initializers["two"] = Tensor::Scalar<float>(2.0f);
  m.graph.nodes = {MakeNode("Mul", {"x", "half"}, {"t"}), MakeNode("Add", {"t", "two"}, {"y"})};
  return m;
}

Model IrisModel(float shift) {
  Model m = Base("iris");
  m.graph.inputs.push_back({"features", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(4)})});
  m.graph.outputs.push_back({"logits", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(3)})});
  m.graph.outputs.push_back({"probabilities", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(3)})});
  m.graph.initializers["W"] =
      Tensor::FromVector<float>({1, 0, -1, 0, 1, 0, 0, 0, 1, 0.5f, 0.5f, 0.5f}, Shape{4, 3});
  m.graph.initializers["b"] = Tensor::FromVector<float>({shift, shift - 1, shift + 0.25f}, Shape{3});
  m.graph.nodes = {MakeNode("MatMul", {"features", "W"}, {"xw"}), MakeNode("Add", {"xw", "b"}, {"logits"}),
                   MakeNode("Relu", {"logits"}, {"probabilities"})};
  return m;
}

Model TaggerModel() {
  Model m = Base("tagger");
  m.graph.inputs.push_back({"text", DType::kString, PartialShape::Of({Dim::Symbol("batch")})});
  m.graph.outputs.push_back({"tags_bytes", DType::kString, PartialShape::Of({Dim::Symbol("batch")})});
  m.graph.nodes = {MakeNode("Identity", {"text"}, {"tags_bytes"})};
  return m;
}

Model PairModel() {
  Model m = Base("pair");
  m.graph.inputs.push_back({"a", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(2)})});
  m.graph.inputs.push_back({"b", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(2)})});
  m.graph.outputs.push_back({"sum", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(2)})});
  m.graph.nodes = {MakeNode("Add", {"a", "b"}, {"sum"})};
  return m;
}

Model ScorerModel() {
  Model m = Base("scorer");
  m.graph.inputs.push_back({"age", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(1)})});
  m.graph.inputs.push_back({"spend", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(1)})});
  m.graph.outputs.push_back({"scores", DType::kFloat32, PartialShape::Of({Dim::Symbol("batch"), Dim(2)})});
  m.graph.initializers["Wa"] = Tensor::FromVector<float>({0.5f, -0.5f}, Shape{1, 2});
  m.graph.initializers["Ws"] = Tensor::FromVector<float>({0.25f, 1.0f}, Shape{1, 2});
  m.graph.nodes = {MakeNode("MatMul", {"age", "Wa"}, {"sa"}), MakeNode("MatMul", {"spend", "Ws"}, {"ss"}),
                   MakeNode("Add", {"sa", "ss"}, {"scores"})};
  return m;
}

void WriteVersion(const std::string& base, int64_t version, const Model& model) {
  const std::string tmp = StrCat(base, "/.tmp-", version, "-", getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  STRATA_CHECK_OK(MakeDirs(tmp));
  STRATA_CHECK_OK(onnx::SaveModel(model, tmp + "/model.onnx"));
  const auto past = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(tmp + "/model.onnx", past, ec);
  fs::last_write_time(tmp, past, ec);
  const std::string dst = StrCat(base, "/", version);
  fs::remove_all(dst, ec);
  fs::rename(tmp, dst, ec);
  STRATA_CHECK(!ec, "rename ", tmp, " -> ", dst, ": ", ec.message());
}

ServerOptions TestServerOptions() {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.grpc_port = -1;
  o.rest_port = -1;
  o.rest_num_threads = 4;
  o.file_system_poll_wait_seconds = 1;
  o.version_stability_ms = 200;
  o.load_retry_interval_micros = 100000;
  o.shutdown_grace_ms = 5000;
  o.intra_op_threads = 1;
  return o;
}

RawConnection::RawConnection(int port, std::chrono::milliseconds timeout) : timeout_(timeout) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Close();
}

RawConnection::~RawConnection() { Close(); }

bool RawConnection::Send(const std::string& bytes) {
  size_t sent = 0;
  while (fd_ >= 0 && sent < bytes.size()) {
    const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

std::string RawConnection::ReadToEnd() {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  char buf[4096];
  while (fd_ >= 0 && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) break;  // closed, reset or timed out
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void RawConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace strata::serve::testing
