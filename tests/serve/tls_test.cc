// --ssl_config_file: gRPC and REST over TLS with certificates made by openssl for the test.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

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

namespace net = boost::asio;
using tcp = net::ip::tcp;

// Runs a shell command; fails the test with its output when it does not exit 0.
void Shell(const std::string& cmd, const std::string& dir) {
  ASSERT_EQ(std::system((cmd + " > " + dir + "/cmd.log 2>&1").c_str()), 0) << cmd << "\n" << Slurp(dir + "/cmd.log");
}

// A self-signed server certificate for "localhost" in dir/key.pem, dir/cert.pem.
void MakeServerCert(const std::string& dir) {
  Shell("mkdir -p " + dir, "/tmp");
  Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost "
        "-keyout " + dir + "/key.pem -out " + dir + "/cert.pem", dir);
}

void WriteSslConfig(const std::string& path, const std::string& key, const std::string& cert,
                    const std::string& ca = "", bool client_verify = false) {
  std::string text = "server_key: \"" + TextEscape(key) + "\"\nserver_cert: \"" + TextEscape(cert) + "\"\n";
  if (!ca.empty()) text += "custom_ca: \"" + TextEscape(ca) + "\"\n";
  text += client_verify ? "client_verify: true\n" : "client_verify: false\n";
  STRATA_CHECK_OK(WriteFileAtomic(path, text));
}

struct HttpsResult {
  std::string error;     // "" when a whole response was read
  std::string response;  // status line, headers and body
};

// One HTTP/1.1 exchange per request over a single TLS connection to 127.0.0.1:port, verifying the server against
// `ca_pem` for the name "localhost"; with client_cert_pem/client_key_pem it presents that certificate.
HttpsResult Https(int port, const std::string& ca_pem, const std::vector<std::string>& requests,
                  const std::string& client_cert_pem = "", const std::string& client_key_pem = "") {
  HttpsResult out;
  net::io_context ioc;
  net::ssl::context ctx(net::ssl::context::tls_client);
  boost::system::error_code ec;
  ctx.add_certificate_authority(net::buffer(ca_pem), ec);
  if (!client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(client_cert_pem), ec);
    ctx.use_private_key(net::buffer(client_key_pem), net::ssl::context::pem, ec);
  }
  ctx.set_verify_mode(net::ssl::verify_peer);
  net::ssl::stream<tcp::socket> stream(ioc, ctx);
  SSL_set_tlsext_host_name(stream.native_handle(), "localhost");
  stream.set_verify_callback(net::ssl::host_name_verification("localhost"));
  stream.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)),
                              ec);
  if (!ec) stream.handshake(net::ssl::stream_base::client, ec);
  for (const std::string& request : requests) {
    if (!ec) net::write(stream, net::buffer(request), ec);
    // Read one response: headers, then Content-Length bytes of body.
    std::string data;
    char buf[4096];
    size_t body_start = std::string::npos, want = 0;
    while (!ec) {
      if (body_start == std::string::npos && (body_start = data.find("\r\n\r\n")) != std::string::npos) {
        body_start += 4;
        const size_t at = data.find("Content-Length: ");
        want = at == std::string::npos ? 0 : std::stoul(data.substr(at + 16));
      }
      if (body_start != std::string::npos && data.size() >= body_start + want) break;
      const size_t n = stream.read_some(net::buffer(buf), ec);
      data.append(buf, n);
    }
    out.response += data;
  }
  if (ec) out.error = ec.message();
  return out;
}

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
}

std::string Post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A plaintext HTTP request to 127.0.0.1:port; what came back before the server closed (or 3 s passed).
std::string PlainHttp(int port, const std::string& request) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return "connect: " + ec.message();
  timeval tv{3, 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  net::write(socket, net::buffer(request), ec);
  std::string data;
  char buf[4096];
  while (!ec) {
    const size_t n = socket.read_some(net::buffer(buf), ec);
    data.append(buf, n);
  }
  return data;
}

StatusOr<std::unique_ptr<Server>> StartHalf(const std::string& dir, bool rest_tls = true) {
  testing::WriteVersion(dir + "/half", 1, testing::HalfModel());
  ServerOptions o = testing::TestServerOptions();
  o.rest_port = -1;
  o.grpc_port = -1;
  o.model_name = "half";
  o.model_base_path = dir + "/half";
  o.ssl_config_file = dir + "/ssl.config";
  o.rest_tls = rest_tls;
  STRATA_ASSIGN_OR_RETURN(auto server, Server::Start(o));
  STRATA_RETURN_IF_ERROR(server->WaitUntilReady(std::chrono::seconds(30)));
  return server;
}

TEST(TlsTest, RestOverHttpsWithTheSslConfigFile) {
  const std::string dir = testing::FreshDir("rest_tls");
  MakeServerCert(dir);
  const std::string key = Slurp(dir + "/key.pem"), cert = Slurp(dir + "/cert.pem");
  WriteSslConfig(dir + "/ssl.config", key, cert);
  auto server = StartHalf(dir);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->rest_port();
  // Two requests on one kept-alive TLS connection: status, then a prediction (half_plus_two).
  HttpsResult r = Https(port, cert, {Get("/v1/models/half"), Post("/v1/models/half:predict", R"({"instances": [1.0, 2.0, 5.0]})")});
  ASSERT_EQ(r.error, "") << r.response;
  EXPECT_EQ(r.response.rfind("HTTP/1.1 200", 0), 0u) << r.response;
  EXPECT_NE(r.response.find("AVAILABLE"), std::string::npos) << r.response;
  EXPECT_NE(r.response.find("2.5"), std::string::npos) << r.response;
  EXPECT_NE(r.response.find("4.5"), std::string::npos) << r.response;
  // A client that does not trust the certificate (another CA) refuses the server.
  MakeServerCert(dir + "/other");
  HttpsResult untrusted = Https(port, Slurp(dir + "/other/cert.pem"), {Get("/v1/models/half")});
  EXPECT_NE(untrusted.error, "");
  EXPECT_EQ(untrusted.response.find("HTTP/1.1 200"), std::string::npos);
  // Plaintext HTTP to the HTTPS port gets no HTTP answer, and the server keeps serving TLS clients.
  EXPECT_EQ(PlainHttp(port, Get("/v1/models/half")).find("HTTP/1.1"), std::string::npos);
  HttpsResult again = Https(port, cert, {Get("/v1/models/half")});
  EXPECT_EQ(again.error, "");
  EXPECT_EQ(again.response.rfind("HTTP/1.1 200", 0), 0u) << again.response;
}

TEST(TlsTest, RestClientVerifyNeedsACertificateFromTheCustomCa) {
  const std::string dir = testing::FreshDir("rest_mtls");
  MakeServerCert(dir);
  Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout " + dir + "/ca.key -out " + dir +
            "/ca.pem",
        dir);
  Shell("openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout " + dir + "/client.key -out " + dir +
            "/client.csr",
        dir);
  Shell("openssl x509 -req -days 2 -in " + dir + "/client.csr -CA " + dir + "/ca.pem -CAkey " + dir +
            "/ca.key -CAcreateserial -out " + dir + "/client.pem",
        dir);
  const std::string cert = Slurp(dir + "/cert.pem");
  WriteSslConfig(dir + "/ssl.config", Slurp(dir + "/key.pem"), cert, Slurp(dir + "/ca.pem"), true);
  auto server = StartHalf(dir);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->rest_port();
  HttpsResult no_cert = Https(port, cert, {Get("/v1/models/half")});
  EXPECT_NE(no_cert.error, "");
  EXPECT_EQ(no_cert.response.find("HTTP/1.1 200"), std::string::npos) << no_cert.response;
  // A certificate the CA did not sign (self-signed) is refused too.
  MakeServerCert(dir + "/other");
  HttpsResult wrong = Https(port, cert, {Get("/v1/models/half")}, Slurp(dir + "/other/cert.pem"),
                            Slurp(dir + "/other/key.pem"));
  EXPECT_EQ(wrong.response.find("HTTP/1.1 200"), std::string::npos) << wrong.response;
  HttpsResult ok = Https(port, cert, {Get("/v1/models/half")}, Slurp(dir + "/client.pem"), Slurp(dir + "/client.key"));
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.response.rfind("HTTP/1.1 200", 0), 0u) << ok.response;
}

TEST(TlsTest, RestApiTlsFalseKeepsRestPlaintext) {
  const std::string dir = testing::FreshDir("rest_tls_off");
  MakeServerCert(dir);
  WriteSslConfig(dir + "/ssl.config", Slurp(dir + "/key.pem"), Slurp(dir + "/cert.pem"));
  auto server = StartHalf(dir, /*rest_tls=*/false);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string reply = PlainHttp((*server)->rest_port(), "GET /v1/models/half HTTP/1.1\r\nHost: x\r\n"
                                                              "Connection: close\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
}

TEST(TlsTest, UnusableKeyOrMissingCaIsAStartError) {
  const std::string dir = testing::FreshDir("rest_tls_bad");
  MakeServerCert(dir);
  const std::string cert = Slurp(dir + "/cert.pem");
  WriteSslConfig(dir + "/ssl.config", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", cert);
  auto bad_key = StartHalf(dir);
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().message().find("server_key"), std::string::npos) << bad_key.status().ToString();
  WriteSslConfig(dir + "/ssl.config", Slurp(dir + "/key.pem"), cert, "", /*client_verify=*/true);
  auto no_ca = StartHalf(dir);
  ASSERT_FALSE(no_ca.ok());
  EXPECT_NE(no_ca.status().message().find("custom_ca"), std::string::npos) << no_ca.status().ToString();
}

}  // namespace
}  // namespace strata::serve
