// The daemon's control socket (the protocol and its limits: control/protocol.hpp). Only root or
// the daemon's own user may connect.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <memory>
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

    // What the server and its sessions share (sessions may outlive the server).
    struct Sessions {
        std::size_t open = 0;
        std::function<void()> on_closed;
    };

private:
    void accept();

    std::string path_;
    CommandHandler handler_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
    std::shared_ptr<Sessions> sessions_;
    bool accept_paused_ = false; // kMaxSessions open: clients wait in the listen backlog
};

} // namespace localsa::control
