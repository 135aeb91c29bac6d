#include "daemon/metrics_server.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace localsa {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr auto kRequestTimeout = std::chrono::seconds(5);
constexpr std::size_t kMaxRequestBytes = 8192;
} // namespace

struct MetricsServer::State {
    State(asio::io_context& io, std::function<std::string()> m)
        : acceptor(io), metrics(std::move(m)) {}
    tcp::acceptor acceptor;
    std::function<std::string()> metrics;
    std::size_t connections = 0;
};

namespace {

struct Exchange : std::enable_shared_from_this<Exchange> {
    Exchange(tcp::socket s, std::shared_ptr<MetricsServer::State> st)
        : stream(std::move(s)), state(std::move(st)) {
        parser.body_limit(kMaxRequestBytes);
        parser.header_limit(kMaxRequestBytes);
    }
    ~Exchange() { --state->connections; }

    void run() {
        stream.expires_after(kRequestTimeout);
        http::async_read(stream, buffer, parser,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) {
                             if (ec)
                                 return; // timed out, closed or not HTTP: nothing to answer
                             self->respond(self->parser.get());
                         });
    }

    void respond(const http::request<http::string_body>& request) {
        response.version(request.version());
        response.keep_alive(false);
        response.set(http::field::server, "localsad");
        if (request.method() != http::verb::get && request.method() != http::verb::head) {
            response.result(http::status::method_not_allowed);
            response.set(http::field::allow, "GET, HEAD");
            response.body() = "only GET /metrics\n";
        } else if (request.target() != "/metrics") {
            response.result(http::status::not_found);
            response.body() = "only GET /metrics\n";
        } else {
            response.result(http::status::ok);
            response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            response.body() = state->metrics();
        }
        if (response.result() != http::status::ok)
            response.set(http::field::content_type, "text/plain; charset=utf-8");
        response.prepare_payload();
        if (request.method() == http::verb::head)
            response.body().clear();
        http::async_write(stream, response,
                          [self = shared_from_this()](beast::error_code, std::size_t) {
                              beast::error_code ignored;
                              self->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
                          });
    }

    beast::tcp_stream stream;
    std::shared_ptr<MetricsServer::State> state;
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    http::response<http::string_body> response;
};

} // namespace

tcp::endpoint MetricsServer::parse_listen(const std::string& spec) {
    std::string address = "127.0.0.1", port = spec;
    if (!spec.empty() && spec.front() == '[') {
        const auto close = spec.find("]:");
        if (close == std::string::npos)
            throw std::invalid_argument("expected [ADDRESS]:PORT");
        address = spec.substr(1, close - 1);
        port = spec.substr(close + 2);
    } else if (const auto colon = spec.rfind(':'); colon != std::string::npos) {
        address = spec.substr(0, colon);
        port = spec.substr(colon + 1);
    }
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
        port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535)
        throw std::invalid_argument("'" + port + "' is not a TCP port (1-65535)");
    boost::system::error_code ec;
    const auto ip = asio::ip::make_address(address, ec);
    if (ec)
        throw std::invalid_argument("'" + address + "' is not an IP address");
    return {ip, static_cast<unsigned short>(std::stoul(port))};
}

MetricsServer::MetricsServer(asio::io_context& io, const tcp::endpoint& endpoint,
                             std::function<std::string()> metrics)
    : state_(std::make_shared<State>(io, std::move(metrics))) {
    auto& acceptor = state_->acceptor;
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec)
        acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec)
        acceptor.bind(endpoint, ec);
    if (!ec)
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        std::ostringstream where;
        where << endpoint;
        throw std::system_error(ec, "cannot listen for metrics on " + where.str());
    }
    accept();
}

MetricsServer::~MetricsServer() {
    boost::system::error_code ignored;
    state_->acceptor.close(ignored);
}

tcp::endpoint MetricsServer::local_endpoint() const {
    return state_->acceptor.local_endpoint();
}

void MetricsServer::accept() {
    state_->acceptor.async_accept(
        [this, state = state_](boost::system::error_code ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted || !state->acceptor.is_open())
                return;
            if (!ec) {
                if (state->connections >= kMaxConnections) {
                    spdlog::debug("metrics: {} connections open, one refused", state->connections);
                } else {
                    ++state->connections;
                    std::make_shared<Exchange>(std::move(socket), state)->run();
                }
            }
            accept();
        });
}

} // namespace localsa
