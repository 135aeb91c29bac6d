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

// An answer written in slices, for one too large to build on the event loop in one go (a dump of
// a million cached answers): the session asks for the next slice only once the previous one is
// written, each time from its own turn of the loop, so MADs are served in between.
class ReplyStream {
public:
    virtual ~ReplyStream() = default;
    // Appends the next part of the answer line to `out`; false once the line is complete (its
    // newline included).
    virtual bool next(std::string& out) = 0;
};

// The answer to `request` in slices, or nullptr when the CommandHandler answers it.
using StreamHandler = std::function<std::unique_ptr<ReplyStream>(const nlohmann::json& request)>;

class ControlServer {
public:
    // Creates the socket (and its directory); throws std::system_error with the path on failure.
    ControlServer(boost::asio::io_context& io, std::string path, CommandHandler handler,
                  StreamHandler streams = {});
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
    StreamHandler streams_;
    boost::asio::local::stream_protocol::acceptor acceptor_;
    std::shared_ptr<Sessions> sessions_;
    bool accept_paused_ = false; // kMaxSessions open: clients wait in the listen backlog
};

} // namespace localsa::control
