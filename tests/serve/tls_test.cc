// --ssl_config_file: gRPC over TLS with a self-signed certificate made by openssl for the test.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "serve_test_util.h"
#include "tensorflow_serving/apis/model_service.grpc.pb.h"

namespace strata::serve {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Escapes PEM text for a protobuf text-format string.
std::string TextEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '"' || c == '\\') out += std::string("\\") + c;
    else out.push_back(c);
  }
  return out;
}

TEST(TlsTest, GrpcOverTlsWithTheSslConfigFile) {
  const std::string dir = testing::FreshDir("tls");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext "
                          "subjectAltName=DNS:localhost -keyout " + dir + "/key.pem -out " + dir +
                          "/cert.pem > " + dir + "/openssl.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << Slurp(dir + "/openssl.log");
  const std::string key = Slurp(dir + "/key.pem"), cert = Slurp(dir + "/cert.pem");
  STRATA_CHECK_OK(WriteFileAtomic(dir + "/ssl.config", "server_key: \"" + TextEscape(key) + "\"\nserver_cert: \"" +
                                                           TextEscape(cert) + "\"\nclient_verify: false\n"));
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  ServerOptions o = testing::TestServerOptions();
  o.rest_port = 0;
  o.model_name = "half";
  o.model_base_path = dir + "/half";
  o.ssl_config_file = dir + "/ssl.config";
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->WaitUntilReady(std::chrono::seconds(30)).ok());
  const std::string target = "127.0.0.1:" + std::to_string((*server)->grpc_port());
  tensorflow::serving::GetModelStatusRequest req;
  req.mutable_model_spec()->set_name("half");
  {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = cert;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto stub = tensorflow::serving::ModelService::NewStub(
        grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    tensorflow::serving::GetModelStatusResponse resp;
    grpc::Status s = stub->GetModelStatus(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.model_version_status(0).state(), tensorflow::serving::ModelVersionStatus::AVAILABLE);
  }
  {  // A plaintext client cannot talk to the TLS port.
    auto stub = tensorflow::serving::ModelService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    tensorflow::serving::GetModelStatusResponse resp;
    EXPECT_FALSE(stub->GetModelStatus(&ctx, req, &resp).ok());
  }
}

}  // namespace
}  // namespace strata::serve
