// An HTTP endpoint for Prometheus to scrape: GET /metrics answers the daemon's stats in the text
// exposition format (daemon/metrics.hpp). Off unless --metrics-listen is given; loopback unless
// an address is named. One request per connection, a few at a time, each bounded in time, so
// a scraper (or anyone else) can never hold the daemon's event loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace localsa {

class MetricsServer {
public:
    // "PORT", "ADDR:PORT" or "[ADDR6]:PORT"; a bare port listens on 127.0.0.1. Throws
    // std::invalid_argument with the reason on a malformed value.
    static boost::asio::ip::tcp::endpoint parse_listen(const std::string& spec);

    // Binds at once (before privileges drop); throws std::system_error naming the endpoint.
    MetricsServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
                  std::function<std::string()> metrics);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    boost::asio::ip::tcp::endpoint local_endpoint() const;

    static constexpr std::size_t kMaxConnections = 8;

    struct State; // defined in the .cpp; shared with the connections in flight

private:
    void accept();

    std::shared_ptr<State> state_;
};

} // namespace localsa
