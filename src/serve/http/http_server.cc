#include "serve/http/http_server.h"

#include <zlib.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/logging.h"

namespace strata::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {
class Session;
}

struct HttpServer::Impl {
  // Declared before the io_context: sessions still queued in it when it is destroyed unregister themselves here.
  std::mutex sessions_mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
  std::atomic<int64_t> in_flight{0};
  std::atomic<bool> draining{false};
  HttpServerOptions options;
  HttpHandler handler;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  int port = 0;
  bool stopped = false;

  void DoAccept();
};

namespace {

HttpResponse JsonErrorResponse(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  std::string body = "{\"error\": \"";
  for (char c : message) {
    if (c == '"' || c == '\\') body.push_back('\\');
    body.push_back(c);
  }
  r.body = body + "\"}";
  return r;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, HttpServer::Impl* impl) : stream_(std::move(socket)), impl_(impl) {}
  ~Session() {
    std::lock_guard<std::mutex> lock(impl_->sessions_mu);
    impl_->sessions.erase(this);
  }

  void Run() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, shared_from_this()));
  }

  // Closes the connection if it is waiting for a request; a connection that is handling one closes after the reply.
  void CloseIfIdle() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }

 private:
  void DoRead() {
    if (impl_->draining) return Close();
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(impl_->options.body_limit));
    parser_->header_limit(1 << 16);
    stream_.expires_after(impl_->options.idle_timeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == beast::error::timeout ||
        ec == net::error::eof || ec == net::error::connection_reset)
      return Close();
    if (ec) {
      keep_alive_ = false;
      linger_ = true;  // the client may still be sending the rest of the request
      busy_ = true;
      ++impl_->in_flight;
      if (ec == http::error::body_limit)
        return Write(JsonErrorResponse(413, StrCat("request body is larger than the limit of ",
                                                   impl_->options.body_limit, " bytes")));
      return Write(JsonErrorResponse(400, StrCat("malformed HTTP request: ", ec.message())));
    }
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    HttpRequest r;
    r.received = std::chrono::steady_clock::now();
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.origin = std::string(req[http::field::origin]);
    r.request_timeout_ms = std::string(req["X-Request-Timeout-Ms"]);
    const std::string encoding(req[http::field::content_encoding]);
    busy_ = true;
    ++impl_->in_flight;
    if (encoding.find("gzip") != std::string::npos) {
      auto body = GunzipBody(req.body(), impl_->options.gzip_limit);
      if (!body.ok()) return Write(JsonErrorResponse(400, body.status().message()));
      r.body = std::move(body).value();
    } else {
      r.body = std::move(req.body());
    }
    auto self = shared_from_this();
    impl_->handler(std::move(r), [self](HttpResponse resp) {
      net::post(self->stream_.get_executor(),
                [self, resp = std::move(resp)]() mutable { self->Write(std::move(resp)); });
    });
  }

  void Write(HttpResponse r) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "strata");
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_ && !impl_->draining);
    res->body() = std::move(r.body);
    res->prepare_payload();
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
      self->OnWrite(ec, res->need_eof());
    });
  }

  void OnWrite(beast::error_code ec, bool close) {
    busy_ = false;
    --impl_->in_flight;
    if (!ec && close && linger_) return LingeringClose();
    if (ec || close) return Close();
    DoRead();
  }

  // After an error reply to a request whose body was not read (413, malformed), closing at once would make the
  // kernel answer the unread bytes with a reset, and the client could lose the reply. Instead: stop sending, then
  // read and discard what the client still sends (bounded in time and bytes), then close.
  void LingeringClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    linger_budget_ = int64_t{64} << 20;
    DrainOnce();
  }

  void DrainOnce() {
    drain_buffer_.resize(64 * 1024);
    stream_.async_read_some(net::buffer(drain_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->linger_budget_ -= static_cast<int64_t>(n);
                              if (ec || self->linger_budget_ <= 0) return self->Close();
                              self->DrainOnce();
                            });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpServer::Impl* impl_;
  bool keep_alive_ = true;
  bool busy_ = false;
  bool linger_ = false;
  int64_t linger_budget_ = 0;
  std::vector<char> drain_buffer_;
};

}  // namespace

void HttpServer::Impl::DoAccept() {
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (!ec && !draining) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      auto s = std::make_shared<Session>(std::move(socket), this);
      {
        std::lock_guard<std::mutex> lock(sessions_mu);
        sessions[s.get()] = s;
      }
      s->Run();
    }
    if (acceptor->is_open() && !draining) DoAccept();
  });
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler handler) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.options = options;
  impl.handler = std::move(handler);
  beast::error_code ec;
  const auto address = net::ip::make_address(options.host, ec);
  if (ec) return InvalidArgumentError("bad listen address '", options.host, "': ", ec.message());
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  impl.acceptor.emplace(impl.ioc);
  impl.acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl.acceptor->bind(endpoint, ec);
  if (!ec) impl.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return UnavailableError("cannot listen for HTTP on ", options.host, ":", options.port, ": ", ec.message());
  impl.port = impl.acceptor->local_endpoint().port();
  impl.work.emplace(impl.ioc.get_executor());
  impl.DoAccept();
  const int threads = std::max(1, options.threads);
  for (int i = 0; i < threads; ++i) impl.threads.emplace_back([&impl] { impl.ioc.run(); });
  return server;
}

HttpServer::~HttpServer() { Shutdown(std::chrono::milliseconds(0)); }

int HttpServer::port() const { return impl_->port; }
int64_t HttpServer::in_flight() const { return impl_->in_flight.load(); }

void HttpServer::Shutdown(std::chrono::milliseconds grace) {
  Impl& impl = *impl_;
  if (impl.stopped) return;
  impl.stopped = true;
  impl.draining = true;
  net::post(impl.ioc, [&impl] {
    beast::error_code ec;
    impl.acceptor->close(ec);
  });
  auto close_idle = [&impl] {
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(impl.sessions_mu);
      for (auto& [p, w] : impl.sessions)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->CloseIfIdle();
  };
  close_idle();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (impl.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (impl.in_flight.load() > 0)
    LogWarning("HTTP shutdown: ", impl.in_flight.load(), " requests still running after ", grace.count(), " ms");
  close_idle();
  impl.work.reset();
  // Give the closes a moment to run, then stop the loop.
  const auto settle = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (std::chrono::steady_clock::now() < settle) {
    {
      std::lock_guard<std::mutex> lock(impl.sessions_mu);
      if (impl.sessions.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  impl.ioc.stop();
  for (auto& t : impl.threads)
    if (t.joinable()) t.join();
}

StatusOr<std::string> GunzipBody(std::string_view compressed, int64_t limit) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return InternalError("zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return InvalidArgumentError("Failed to decompress the gzip request body: ", zs.msg ? zs.msg : "corrupt data");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (static_cast<int64_t>(out.size()) > limit) {
      inflateEnd(&zs);
      return InvalidArgumentError("decompressed request body exceeds the limit of ", limit, " bytes");
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return InvalidArgumentError("Failed to decompress the gzip request body: truncated data");
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace strata::serve
