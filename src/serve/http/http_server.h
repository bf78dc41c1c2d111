// An asynchronous HTTP/1.1 server (Boost.Beast/Asio) with keep-alive, a request body limit, gzip request bodies,
// and graceful shutdown. Handlers answer through a Responder that may be called from any thread. No Beast headers
// here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/core/config.h"
#include "strata/status.h"

namespace strata::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent
  std::string body;    // decompressed when Content-Encoding was gzip
  std::string origin;  // Origin header
  std::string request_timeout_ms;  // X-Request-Timeout-Ms header (strata extension), "" when absent
  std::string inference_header_content_length;  // Open Inference Protocol binary extension, "" when absent
  // The client's X-Request-Id when it is a plain token of at most 128 characters, else one made here (16 hex
  // digits); echoed in the response's X-Request-Id and on the access log line.
  std::string request_id;
  std::chrono::steady_clock::time_point received;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using Responder = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(HttpRequest&&, Responder)>;

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0 = pick a free port
  int threads = 2;
  int64_t body_limit = 256ll << 20;  // per request: larger bodies get 413
  // Server-wide budget of request-body bytes being received (the buffers of bodies not yet handed to the handler,
  // over every connection). A request whose body would exceed it gets 503 with Retry-After. Bodies grow as bytes
  // arrive; a declared Content-Length reserves nothing.
  int64_t inflight_body_limit = 1ll << 30;
  int64_t gzip_limit = 100ll << 20;  // decompressed size limit (TF Serving's 100 MiB)
  std::chrono::seconds idle_timeout{75};
  // One log line per answered request (request_id, method, path, status, duration_ms, response_bytes).
  bool access_log = false;
  // HTTPS: the PEM server certificate and key (TF Serving's SSLConfig, the same --ssl_config_file as gRPC). With
  // client_verify, clients must present a certificate signed by custom_ca. TLS 1.2 or newer.
  std::optional<SslOptions> tls;
};

class HttpServer {
 public:
  static StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  int port() const;
  // Stops accepting, lets requests being handled finish (at most `grace`), closes every connection, joins threads.
  void Shutdown(std::chrono::milliseconds grace);
  int64_t in_flight() const;
  // Request-body bytes held by requests being received now (charged against options.inflight_body_limit).
  int64_t body_bytes_in_flight() const;

  struct Impl;

 private:
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
};

// The request id for an X-Request-Id header value (see HttpRequest::request_id); also used by gRPC's x-request-id.
std::string RequestIdFor(std::string_view client_value);
// The time since `since` in milliseconds, 3 decimals (the access log lines' duration_ms).
std::string MillisecondsSince(std::chrono::steady_clock::time_point since);

// Inflates a gzip (or zlib) body; fails above `limit` bytes.
StatusOr<std::string> GunzipBody(std::string_view compressed, int64_t limit);

}  // namespace strata::serve
