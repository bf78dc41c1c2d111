#include "http_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace strata::serve::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpClient::Impl {
  std::string host;
  int port;
  std::chrono::milliseconds timeout;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  Status Connect() {
    stream.emplace(ioc);
    beast::error_code ec;
    const auto address = net::ip::make_address(host, ec);
    if (ec) return InvalidArgumentError("bad address ", host);
    stream->expires_after(timeout);
    stream->socket().connect(tcp::endpoint(address, static_cast<unsigned short>(port)), ec);
    if (ec) {
      stream.reset();
      return UnavailableError("connect to ", host, ":", port, ": ", ec.message());
    }
    stream->socket().set_option(tcp::no_delay(true), ec);
    buffer.clear();
    return Status::OK();
  }

  StatusOr<HttpResult> Once(const std::string& method, const std::string& target, const std::string& body,
                            const std::map<std::string, std::string>& headers) {
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, host);
    req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    beast::error_code ec;
    // Synchronous I/O with a socket-level timeout: beast::tcp_stream timeouts apply to async operations only.
    struct timeval tv;
    tv.tv_sec = timeout.count() / 1000;
    tv.tv_usec = (timeout.count() % 1000) * 1000;
    setsockopt(stream->socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(stream->socket().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    http::write(stream->socket(), req, ec);
    if (ec) return UnavailableError("write: ", ec.message());
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 31);
    http::read(stream->socket(), buffer, parser, ec);
    if (ec) return UnavailableError("read: ", ec.message());
    auto& res = parser.get();
    HttpResult out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    if (!res.keep_alive()) stream.reset();
    return out;
  }
};

HttpClient::HttpClient(std::string host, int port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->timeout = timeout;
}

HttpClient::~HttpClient() { Close(); }

void HttpClient::Close() {
  if (impl_->stream) {
    beast::error_code ec;
    impl_->stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    impl_->stream.reset();
  }
}

StatusOr<HttpResult> HttpClient::Request(const std::string& method, const std::string& target, const std::string& body,
                                         const std::map<std::string, std::string>& headers) {
  const bool fresh = !impl_->stream;
  if (fresh) STRATA_RETURN_IF_ERROR(impl_->Connect());
  auto r = impl_->Once(method, target, body, headers);
  if (r.ok() || fresh || !retry_stale_) {
    if (!r.ok()) impl_->stream.reset();
    return r;
  }
  // A kept-alive connection the server closed meanwhile: reconnect once.
  impl_->stream.reset();
  STRATA_RETURN_IF_ERROR(impl_->Connect());
  r = impl_->Once(method, target, body, headers);
  if (!r.ok()) impl_->stream.reset();
  return r;
}

}  // namespace strata::serve::bench
