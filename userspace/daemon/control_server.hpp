// The daemon's control socket (the protocol: control/client.hpp). Only root or the daemon's own
// user may connect.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace localsa::control {

using CommandHandler = std::function<nlohmann::json(const nlohmann::json& request)>;

class ControlServer {
public:
    // Creates the socket (and its directory); throws std::system_error with the path on failure.
    ControlServer(boost::asio::io_context& io, std::string path, CommandHandler handler);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    const std::string& path() const { return path_; }

private:
    void accept();

    std::string path_;
    CommandHandler handler_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
};

} // namespace localsa::control
