// A small blocking HTTP/1.1 client (Boost.Beast) with keep-alive, for the load generator and the serving tests.
// Loopback use only.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "strata/status.h"

namespace strata::serve::bench {

struct HttpResult {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

class HttpClient {
 public:
  HttpClient(std::string host, int port, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request on the kept-alive connection (connecting or reconnecting as needed).
  StatusOr<HttpResult> Request(const std::string& method, const std::string& target, const std::string& body = "",
                               const std::map<std::string, std::string>& headers = {});
  StatusOr<HttpResult> Get(const std::string& target) { return Request("GET", target); }
  StatusOr<HttpResult> Post(const std::string& target, const std::string& body) {
    return Request("POST", target, body);
  }
  void Close();
  // By default a request that fails on a reused keep-alive connection is retried once on a fresh one (the server may
  // have closed an idle connection). The load generator turns this off so that every failure counts.
  void set_retry_stale(bool retry) { retry_stale_ = retry; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  bool retry_stale_ = true;
};

}  // namespace strata::serve::bench
