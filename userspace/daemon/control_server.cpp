#include "daemon/control_server.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace localsa::control {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

namespace {

struct Session : std::enable_shared_from_this<Session> {
    stream::socket socket;
    asio::streambuf in;
    std::string out;
    const CommandHandler& handler;

    Session(stream::socket s, const CommandHandler& h) : socket(std::move(s)), handler(h) {}

    // The peer's uid, or -1 when the kernel does not say.
    long peer_uid() {
        ucred cred{};
        socklen_t len = sizeof cred;
        if (getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
            return -1;
        return static_cast<long>(cred.uid);
    }

    void run() {
        auto self = shared_from_this();
        asio::async_read_until(socket, in, '\n', [self](auto ec, std::size_t) {
            if (ec)
                return;
            std::string line{asio::buffers_begin(self->in.data()),
                             asio::buffers_end(self->in.data())};
            self->out = self->answer(line).dump() + "\n";
            asio::async_write(self->socket, asio::buffer(self->out), [self](auto, std::size_t) {
                boost::system::error_code ignored;
                self->socket.shutdown(stream::socket::shutdown_both, ignored);
            });
        });
    }

    nlohmann::json answer(const std::string& line) {
        const auto uid = peer_uid();
        if (uid != 0 && uid != static_cast<long>(geteuid())) {
            // Should the socket's mode ever be widened, the peer check still holds: the request
            // is read (so the client sees the answer, not a broken pipe) but never acted on.
            spdlog::warn("control: refused a client with uid {} (only root and the daemon's user)",
                         uid);
            return {{"error", "permission denied: uid " + std::to_string(uid) +
                                  " is neither root nor the daemon's user"}};
        }
        try {
            return handler(nlohmann::json::parse(line));
        } catch (const std::exception& e) {
            return {{"error", std::string("bad request: ") + e.what()}};
        }
    }
};

} // namespace

ControlServer::ControlServer(asio::io_context& io, std::string path, CommandHandler handler)
    : path_(std::move(path)), handler_(std::move(handler)), acceptor_(io) {
    const auto dir = std::filesystem::path(path_).parent_path();
    if (!dir.empty())
        std::filesystem::create_directories(dir);
    ::unlink(path_.c_str()); // a stale socket of an earlier run
    const auto old_mask = ::umask(0177);
    try {
        acceptor_.open();
        acceptor_.bind(stream::endpoint(path_));
        acceptor_.listen();
    } catch (...) {
        ::umask(old_mask);
        throw;
    }
    ::umask(old_mask);
    accept();
}

ControlServer::~ControlServer() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    ::unlink(path_.c_str());
}

void ControlServer::accept() {
    acceptor_.async_accept([this](auto ec, stream::socket socket) {
        if (ec == asio::error::operation_aborted)
            return;
        if (!ec)
            std::make_shared<Session>(std::move(socket), handler_)->run();
        accept();
    });
}

} // namespace localsa::control
