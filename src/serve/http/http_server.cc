#include "serve/http/http_server.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "core/logging.h"

namespace strata::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// Each connection's operations run on its own strand. The concrete executor type (rather than Beast's default,
// the type-erased any_io_executor) spares every handler invocation the type-erased executor's copies, queries
// and reference counts: about a tenth of the server's CPU time per REST request in a profile.
using ConnectionExecutor = net::strand<net::io_context::executor_type>;
using TcpStream = beast::basic_stream<tcp, ConnectionExecutor>;
using TcpSocket = net::basic_stream_socket<tcp, ConnectionExecutor>;

// A connection, whatever its stream (plain TCP or TLS): what the server needs to close it at shutdown.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection if it is waiting for a request; a connection that is handling one closes after the reply.
  virtual void CloseIfIdle() = 0;
};

// Request-body bytes being received, over every connection: charged as a body's buffer grows, released when the
// request has been handled or dropped.
class BodyBudget {
 public:
  explicit BodyBudget(int64_t limit) : limit_(limit) {}
  bool TryCharge(int64_t n) {
    int64_t used = used_.load();
    do {
      if (used + n > limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + n));
    return true;
  }
  void Release(int64_t n) { used_ -= n; }
  int64_t used() const { return used_.load(); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& o) : body_budget(o.inflight_body_limit), options(o) {}
  // Declared before the io_context: sessions still queued in it when it is destroyed unregister themselves here
  // (and release their bodies' charges).
  BodyBudget body_budget;
  std::mutex sessions_mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;
  std::atomic<int64_t> in_flight{0};
  std::atomic<bool> draining{false};
  HttpServerOptions options;
  HttpHandler handler;
  net::io_context ioc;
  std::optional<net::ssl::context> tls;  // set when options.tls is
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  int port = 0;
  bool stopped = false;

  void DoAccept();
  template <class Stream>
  void StartSession(Stream&& stream);
};

namespace {

// A request body (Beast's BodyReader concept) in a std::string that grows as bytes arrive. Beast's string_body
// reserves the declared Content-Length before reading, so a few header bytes made the server reserve up to the
// body limit per connection. Here the capacity at most doubles per step (never beyond the declared length), and
// every byte of capacity is charged to the server's BodyBudget until the request is handled or dropped.
struct BudgetedBody {
  static constexpr size_t kMinCapacity = 4096;

  class value_type {
   public:
    value_type() = default;
    value_type(const value_type&) = delete;
    value_type& operator=(const value_type&) = delete;
    value_type(value_type&& o) noexcept
        : data(std::move(o.data)),
          budget(o.budget),
          over_budget(o.over_budget),
          charged_(std::exchange(o.charged_, 0)) {}
    value_type& operator=(value_type&& o) noexcept {
      if (this != &o) {
        Release();
        data = std::move(o.data);
        budget = o.budget;
        over_budget = o.over_budget;
        charged_ = std::exchange(o.charged_, 0);
      }
      return *this;
    }
    ~value_type() { Release(); }

    // Makes room for `need` bytes: grows to twice the capacity (at least kMinCapacity, at most `declared` when the
    // length is known), or to exactly `need` when the doubled size does not fit the budget. False (and over_budget
    // set) when even `need` does not fit. The budget counts the capacity held between reads; the old buffer, freed
    // right after the copy, is not counted.
    bool Grow(size_t need, const boost::optional<std::uint64_t>& declared) {
      size_t cap = std::max({need, 2 * data.capacity(), kMinCapacity});
      if (declared && *declared >= need) cap = static_cast<size_t>(std::min<std::uint64_t>(cap, *declared));
      const auto charge = [this](size_t c) { return !budget || budget->TryCharge(static_cast<int64_t>(c) - charged_); };
      if (!charge(cap)) {
        cap = need;
        if (!charge(cap)) {
          over_budget = true;
          return false;
        }
      }
      std::string grown;
      grown.reserve(cap);  // a fresh string: exactly `cap` (reserve on a used one may round up to twice its size)
      grown.append(data);
      data.swap(grown);
      charged_ = budget ? static_cast<int64_t>(cap) : 0;
      return true;
    }
    // Hands the charge to the caller, who releases it once the bytes are gone.
    int64_t TakeCharge() { return std::exchange(charged_, 0); }
    void Release() {
      if (budget && charged_) budget->Release(charged_);
      charged_ = 0;
    }

    std::string data;
    BodyBudget* budget = nullptr;
    bool over_budget = false;

   private:
    int64_t charged_ = 0;
  };

  static std::uint64_t size(const value_type& body) { return body.data.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      declared_ = length;  // only an upper bound for growth: nothing is reserved from it
      ec = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      const size_t extra = beast::buffer_bytes(buffers);
      const size_t size = body_.data.size();
      if (size + extra > body_.data.capacity() && !body_.Grow(size + extra, declared_)) {
        ec = http::error::buffer_overflow;
        return 0;
      }
      body_.data.resize(size + extra);
      net::buffer_copy(net::buffer(body_.data.data() + size, extra), buffers);
      ec = {};
      return extra;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
    boost::optional<std::uint64_t> declared_;
  };
};

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

// RFC 9112 §6: the only transfer coding this server understands is chunked (identity, which RFC 7230 removed, is
// ignored). Another coding gets 501; chunked that is not the final coding (or appears twice) gets 400, because the
// body's length cannot be known. nullopt when the codings are fine.
std::optional<HttpResponse> TransferEncodingError(const http::fields& fields) {
  std::vector<std::string> codings;
  auto [first, last] = fields.equal_range(http::field::transfer_encoding);
  for (auto it = first; it != last; ++it)
    for (auto token : http::token_list(it->value())) {
      std::string coding(token);
      for (char& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      codings.push_back(std::move(coding));
    }
  int chunked = 0;
  for (const std::string& c : codings) {
    if (c == "chunked") {
      ++chunked;
    } else if (c != "identity") {
      return JsonErrorResponse(501, StrCat("Transfer-Encoding '", c,
                                           "' is not implemented: this server understands "
                                           "only 'chunked' (compress a request body with Content-Encoding: gzip)"));
    }
  }
  if (chunked > 1 || (chunked == 1 && codings.back() != "chunked"))
    return JsonErrorResponse(400, StrCat("malformed HTTP request: Transfer-Encoding '", StrJoin(codings, ", "),
                                         "' does not end with a single 'chunked', so the body length is unknown"));
  return std::nullopt;
}

// One connection. Stream is TcpStream (plain HTTP) or beast::ssl_stream<TcpStream> (HTTPS).
template <class Stream>
class Session : public SessionBase {
  static constexpr bool kTls = !std::is_same_v<Stream, TcpStream>;

 public:
  Session(Stream&& stream, HttpServer::Impl* impl) : stream_(std::move(stream)), impl_(impl) {}
  ~Session() override {
    std::lock_guard<std::mutex> lock(impl_->sessions_mu);
    impl_->sessions.erase(this);
  }

  void Run() {
    if constexpr (kTls) {
      // The handshake gets the idle timeout too: a client that connects and sends nothing is dropped.
      net::dispatch(stream_.get_executor(), [self = self()] {
        self->tcp().expires_after(self->impl_->options.idle_timeout);
        self->stream_.async_handshake(net::ssl::stream_base::server,
                                      [self](beast::error_code ec) { self->OnHandshake(ec); });
      });
    } else {
      net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::DoRead, self()));
    }
  }

  void CloseIfIdle() override {
    net::post(stream_.get_executor(), [self = self()] {
      if (!self->busy_) self->Close();
    });
  }

 private:
  std::shared_ptr<Session> self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  TcpStream& tcp() { return beast::get_lowest_layer(stream_); }

  void OnHandshake(beast::error_code ec) {
    if (ec) {
      // A client that is not speaking TLS, or whose certificate was refused: nothing can be answered in HTTP.
      LogFields(LogLevel::kWarning, "TLS handshake failed",
                {{"peer", PeerAddress()}, {"error", ec.message()}});
      return CloseSocket();
    }
    handshake_done_ = true;
    DoRead();
  }

  std::string PeerAddress() {
    beast::error_code ec;
    const auto ep = tcp().socket().remote_endpoint(ec);
    return ec ? std::string("?") : StrCat(ep.address().to_string(), ":", ep.port());
  }

  void DoRead() {
    if (impl_->draining) return Close();
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(impl_->options.body_limit));
    parser_->header_limit(1 << 16);
    parser_->get().body().budget = &impl_->body_budget;
    tcp().expires_after(impl_->options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnHeader, self()));
  }

  static bool ConnectionGone(beast::error_code ec) {
    return ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == beast::error::timeout ||
           ec == net::error::eof || ec == net::error::connection_reset || ec == net::ssl::error::stream_truncated;
  }

  void OnHeader(beast::error_code ec, std::size_t) {
    if (ConnectionGone(ec)) return Close();
    if (ec) return Fail(ec);
    if (auto error = TransferEncodingError(parser_->get())) return Reject(std::move(*error));
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, self()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ConnectionGone(ec)) {
      parser_.reset();  // releases the partial body's charge now
      return Close();
    }
    if (ec) return Fail(ec);
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    // The body's charge is released when this returns (the handler has parsed the body by then; it answers later
    // through the Responder, from its own copy of what it needs), or before the reply is written when the handler
    // answers inline: a client that has its reply never sees its body still counted.
    body_charge_ = req.body().TakeCharge();
    struct ReleaseAtExit {
      Session* session;
      ~ReleaseAtExit() { session->ReleaseBodyCharge(); }
    } release{this};
    HttpRequest r;
    r.received = std::chrono::steady_clock::now();
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.origin = std::string(req[http::field::origin]);
    r.request_timeout_ms = std::string(req["X-Request-Timeout-Ms"]);
    r.inference_header_content_length = std::string(req["Inference-Header-Content-Length"]);
    const auto client_id = req["X-Request-Id"];
    r.request_id = RequestIdFor(std::string_view(client_id.data(), client_id.size()));
    const std::string encoding(req[http::field::content_encoding]);
    busy_ = true;
    ++impl_->in_flight;
    if (encoding.find("gzip") != std::string::npos) {
      auto body = GunzipBody(req.body().data, impl_->options.gzip_limit);
      if (!body.ok()) return Write(JsonErrorResponse(400, body.status().message()));
      r.body = std::move(body).value();
    } else {
      r.body = std::move(req.body().data);
    }
    req.body().data = std::string();
    auto self = this->self();
    // What the access log line needs, kept only when lines are written (--log_requests).
    struct AccessLine {
      std::string method, target;
      std::chrono::steady_clock::time_point received;
    };
    std::optional<AccessLine> line;
    if (impl_->options.access_log) line = AccessLine{r.method, r.target, r.received};
    std::string id = r.request_id;
    impl_->handler(std::move(r), [self, id = std::move(id), line = std::move(line)](HttpResponse resp) {
      resp.headers.emplace_back("X-Request-Id", id);
      if (line)
        LogFields(LogLevel::kInfo, "request",
                  {{"request_id", id},
                   {"protocol", kTls ? "REST (TLS)" : "REST"},
                   {"method", line->method},
                   {"path", line->target.substr(0, 512)},
                   {"status", std::to_string(resp.status), true},
                   {"duration_ms", MillisecondsSince(line->received), true},
                   {"response_bytes", std::to_string(resp.body.size()), true}});
      // Inline when the handler answered on the connection's own strand (a model run on the REST thread, no
      // batching): no queueing and no wake-up of another REST thread. From another thread (a batch thread), queued
      // to the strand.
      net::dispatch(self->stream_.get_executor(),
                    [self, resp = std::move(resp)]() mutable { self->Write(std::move(resp)); });
    });
  }

  // A request that cannot be read: answer and close (after draining what the client still sends).
  void Fail(beast::error_code ec) {
    const bool over_budget = parser_->get().body().over_budget;
    if (over_budget) {
      HttpResponse r = JsonErrorResponse(
          503, StrCat("the server is receiving too many request bodies at once (", impl_->body_budget.used(),
                      " bytes in flight, limit ", impl_->body_budget.limit(),
                      " bytes, --rest_api_max_inflight_body_bytes); retry later"));
      r.headers.emplace_back("Retry-After", "1");
      return Reject(std::move(r));
    }
    if (ec == http::error::body_limit)
      return Reject(JsonErrorResponse(
          413, StrCat("request body is larger than the limit of ", impl_->options.body_limit, " bytes")));
    return Reject(JsonErrorResponse(400, StrCat("malformed HTTP request: ", ec.message())));
  }

  void Reject(HttpResponse r) {
    parser_.reset();  // releases the body's charge
    keep_alive_ = false;
    linger_ = true;  // the client may still be sending the rest of the request
    busy_ = true;
    ++impl_->in_flight;
    Write(std::move(r));
  }

  void ReleaseBodyCharge() {
    if (body_charge_) impl_->body_budget.Release(std::exchange(body_charge_, 0));
  }

  void Write(HttpResponse r) {
    ReleaseBodyCharge();
    if (WriteDirect(r)) return;
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "strata");
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_ && !impl_->draining);
    res->body() = std::move(r.body);
    res->prepare_payload();
    tcp().expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res, [self = self(), res](beast::error_code ec, std::size_t) {
      self->OnWrite(ec, res->need_eof());
    });
  }

  // The reply's head written by hand into a buffer the connection reuses, and sent with the body in one gather
  // write: the same bytes as Beast's serializer gives for the response built in Write (start line with Beast's
  // reason phrase; Server, Content-Type, the handler's headers, "Connection: close" when closing, Content-Length),
  // without a response object, its field allocations or the serializer. Replies Beast shapes otherwise (status
  // codes without a body or unknown to it, headers that repeat or replace one of those fields) go through Beast:
  // false, and nothing was sent.
  bool WriteDirect(HttpResponse& r) {
    const http::status status = http::int_to_status(static_cast<unsigned>(r.status));
    if (status == http::status::unknown || r.status < 200 || r.status == 204 || r.status == 304) return false;
    const auto same_name = [](std::string_view a, std::string_view b) {
      return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
             });
    };
    for (size_t i = 0; i < r.headers.size(); ++i) {
      const std::string_view name = r.headers[i].first;
      for (std::string_view reserved : {"Server", "Content-Type", "Content-Length", "Connection", "Transfer-Encoding"})
        if (same_name(name, reserved)) return false;
      for (size_t j = i + 1; j < r.headers.size(); ++j)
        if (same_name(name, r.headers[j].first)) return false;
    }
    const bool close = !(keep_alive_ && !impl_->draining);
    std::string& head = reply_head_;
    head.clear();
    head += "HTTP/1.1 ";
    head += std::to_string(r.status);
    head += ' ';
    const auto reason = http::obsolete_reason(status);
    head.append(reason.data(), reason.size());
    head += "\r\nServer: strata\r\nContent-Type: ";
    head += r.content_type;
    head += "\r\n";
    for (const auto& [name, value] : r.headers) {
      head += name;
      head += ": ";
      head += value;
      head += "\r\n";
    }
    if (close) head += "Connection: close\r\n";
    head += "Content-Length: ";
    head += std::to_string(r.body.size());
    head += "\r\n\r\n";
    reply_body_ = std::move(r.body);
    tcp().expires_after(std::chrono::seconds(60));
    const std::array<net::const_buffer, 2> buffers{net::buffer(reply_head_), net::buffer(reply_body_)};
    net::async_write(stream_, buffers, [self = self(), close](beast::error_code ec, std::size_t) {
      self->reply_body_ = std::string();
      self->OnWrite(ec, close);
    });
    return true;
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
  // read and discard what the client still sends (bounded in time and bytes), then close. Under TLS the TCP
  // connection cannot be half-closed; the reply's "Connection: close" tells the client to stop.
  void LingeringClose() {
    if constexpr (!kTls) {
      beast::error_code ignored;
      tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    tcp().expires_after(std::chrono::seconds(2));
    linger_budget_ = int64_t{64} << 20;
    DrainOnce();
  }

  void DrainOnce() {
    drain_buffer_.resize(64 * 1024);
    stream_.async_read_some(net::buffer(drain_buffer_),
                            [self = self()](beast::error_code ec, std::size_t n) {
                              self->linger_budget_ -= static_cast<int64_t>(n);
                              if (ec || self->linger_budget_ <= 0) return self->Close();
                              self->DrainOnce();
                            });
  }

  // Under TLS: send close_notify first (bounded by a short timeout), then close the socket.
  void Close() {
    if constexpr (kTls) {
      if (handshake_done_ && !shutting_down_) {
        shutting_down_ = true;
        tcp().expires_after(std::chrono::seconds(2));
        stream_.async_shutdown([self = self()](beast::error_code) { self->CloseSocket(); });
        return;
      }
      if (shutting_down_) return;  // the shutdown's handler closes the socket
    }
    CloseSocket();
  }

  void CloseSocket() {
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp().socket().close(ec);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<BudgetedBody>> parser_;
  HttpServer::Impl* impl_;
  bool keep_alive_ = true;
  bool busy_ = false;
  bool linger_ = false;
  int64_t linger_budget_ = 0;
  int64_t body_charge_ = 0;  // the request body's bytes still charged to the BodyBudget
  std::string reply_head_;   // WriteDirect's buffers, alive until the write completes
  std::string reply_body_;
  bool handshake_done_ = false;
  bool shutting_down_ = false;
  std::vector<char> drain_buffer_;
};

}  // namespace

void HttpServer::Impl::DoAccept() {
  acceptor->async_accept(ConnectionExecutor(ioc.get_executor()), [this](beast::error_code ec, TcpSocket socket) {
    if (!ec && !draining) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (tls)
        StartSession(beast::ssl_stream<TcpStream>(TcpStream(std::move(socket)), *tls));
      else
        StartSession(TcpStream(std::move(socket)));
    }
    if (acceptor->is_open() && !draining) DoAccept();
  });
}

template <class Stream>
void HttpServer::Impl::StartSession(Stream&& stream) {
  auto s = std::make_shared<Session<Stream>>(std::move(stream), this);
  {
    std::lock_guard<std::mutex> lock(sessions_mu);
    sessions[s.get()] = s;
  }
  s->Run();
}

namespace {

// The HTTPS context from the SSLConfig's PEM texts; each error names the field that did not load.
Status MakeTlsContext(const SslOptions& o, std::optional<net::ssl::context>& out) {
  if (o.server_cert.empty() || o.server_key.empty())
    return InvalidArgumentError("--ssl_config_file: REST over TLS needs both server_cert and server_key (PEM); ",
                                o.server_cert.empty() ? "server_cert" : "server_key", " is empty");
  out.emplace(net::ssl::context::tls_server);
  net::ssl::context& ctx = *out;
  beast::error_code ec;
  ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                      net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                      net::ssl::context::single_dh_use,
                  ec);
  if (!ec) ctx.use_certificate_chain(net::buffer(o.server_cert), ec);
  if (ec) return InvalidArgumentError("--ssl_config_file: server_cert is not a usable PEM certificate: ", ec.message());
  ctx.use_private_key(net::buffer(o.server_key), net::ssl::context::pem, ec);
  if (ec) return InvalidArgumentError("--ssl_config_file: server_key is not a usable PEM private key: ", ec.message());
  if (o.client_verify) {
    if (o.custom_ca.empty())
      return InvalidArgumentError("--ssl_config_file: client_verify is true but custom_ca is empty (the PEM CA that "
                                  "signs client certificates)");
    ctx.add_certificate_authority(net::buffer(o.custom_ca), ec);
    if (ec) return InvalidArgumentError("--ssl_config_file: custom_ca is not a usable PEM certificate: ", ec.message());
    ctx.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return InternalError("TLS verify mode: ", ec.message());
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpHandler handler) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>(options);
  Impl& impl = *server->impl_;
  impl.handler = std::move(handler);
  if (options.tls) STRATA_RETURN_IF_ERROR(MakeTlsContext(*options.tls, impl.tls));
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
int64_t HttpServer::body_bytes_in_flight() const { return impl_->body_budget.used(); }

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
    std::vector<std::shared_ptr<SessionBase>> live;
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

std::string MillisecondsSince(std::chrono::steady_clock::time_point since) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count());
  return buf;
}

std::string RequestIdFor(std::string_view client_value) {
  bool ok = !client_value.empty() && client_value.size() <= 128;
  for (char c : client_value)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/' ||
          c == '+' || c == '='))
      ok = false;
  if (ok) return std::string(client_value);
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 gen{std::random_device{}()};
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(gen() ^ counter.fetch_add(1, std::memory_order_relaxed)));
  return buf;
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
