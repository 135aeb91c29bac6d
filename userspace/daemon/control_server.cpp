#include "daemon/control_server.hpp"

#include "control/protocol.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <memory>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace localsa::control {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

namespace {

// The peer's uid, or -1 when the kernel does not say.
long peer_uid(stream::socket& socket) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return -1;
    return static_cast<long>(cred.uid);
}

// One connection: one request line read within kRequestTimeout (at most kMaxRequestBytes), one
// answer written within kReplyTimeout (each slice of a streamed answer within kReplyTimeout), the
// client's side read to its end; then closed.
struct Session : std::enable_shared_from_this<Session> {
    stream::socket socket;
    asio::streambuf in{kMaxRequestBytes};
    asio::steady_timer deadline;
    std::string out;
    std::array<char, 512> discard{};
    const CommandHandler& handler;
    const StreamHandler& streams;
    std::unique_ptr<ReplyStream> slices;               // the answer, when it is written in slices
    std::shared_ptr<ControlServer::Sessions> sessions; // shared with the server
    bool reading = true;

    Session(stream::socket s, const CommandHandler& h, const StreamHandler& st,
            std::shared_ptr<ControlServer::Sessions> shared)
        : socket(std::move(s)), deadline(socket.get_executor()), handler(h), streams(st),
          sessions(std::move(shared)) {
        ++sessions->open;
    }
    ~Session() {
        --sessions->open;
        if (sessions->on_closed)
            sessions->on_closed();
    }

    // Past `after`, a read in progress is cancelled (the client gets an error answer), anything
    // else ends with the socket closed.
    void arm_deadline(std::chrono::seconds after) {
        deadline.expires_after(after);
        deadline.async_wait([self = shared_from_this()](auto ec) {
            if (ec)
                return;
            boost::system::error_code ignored;
            if (self->reading)
                self->socket.cancel(ignored); // the read ends with operation_aborted
            else
                self->socket.close(ignored);
        });
    }

    void run() {
        auto self = shared_from_this();
        arm_deadline(kRequestTimeout);
        asio::async_read_until(socket, in, '\n', [self](auto ec, std::size_t) {
            self->reading = false;
            self->on_line(ec);
        });
    }

    void on_line(boost::system::error_code ec) {
        nlohmann::json reply;
        if (ec == asio::error::operation_aborted) {
            spdlog::warn("control: a client sent no complete request line within {} s",
                         kRequestTimeout.count());
            reply = error_reply("no complete request line within " +
                                std::to_string(kRequestTimeout.count()) + " s");
        } else if (ec == asio::error::not_found) {
            spdlog::warn("control: refused a request longer than {} bytes", kMaxRequestBytes - 1);
            reply = error_reply("bad request: longer than " + std::to_string(kMaxRequestBytes - 1) +
                                " bytes");
        } else if (ec && (ec != asio::error::eof || in.size() == 0)) {
            deadline.cancel(); // the client went away
            return;
        } else {
            // A line, or the client's last bytes before it closed its side (no newline).
            const std::string line{asio::buffers_begin(in.data()), asio::buffers_end(in.data())};
            reply = answer(line);
            if (slices) {
                write_slice();
                return;
            }
        }
        out = reply_line(reply);
        write(false);
    }

    // Writes `out`; then the next slice when `more`, else the end of the session.
    void write(bool more) {
        arm_deadline(kReplyTimeout);
        auto self = shared_from_this();
        asio::async_write(socket, asio::buffer(out), [self, more](auto ec, std::size_t) {
            if (ec) {
                self->deadline.cancel();
                return;
            }
            if (more) {
                self->write_slice(); // a turn of its own: MADs that came meanwhile go first
                return;
            }
            // Closed with unread bytes (the rest of an overlong line), the socket would be reset
            // and the client lose the answer: end our side, read the client's to its end.
            boost::system::error_code ignored;
            self->socket.shutdown(stream::socket::shutdown_send, ignored);
            self->arm_deadline(kRequestTimeout);
            self->drain();
        });
    }

    void write_slice() {
        out.clear();
        bool more = false;
        try {
            more = slices->next(out);
        } catch (const std::exception& e) {
            // Part of the answer is out: the client sees it cut short (not valid JSON).
            spdlog::error("control: a streamed answer failed: {}", e.what());
            boost::system::error_code ignored;
            socket.close(ignored);
            deadline.cancel();
            return;
        }
        write(more);
    }

    void drain() {
        auto self = shared_from_this();
        socket.async_read_some(asio::buffer(discard), [self](auto ec, std::size_t) {
            if (ec) {
                self->deadline.cancel();
                return;
            }
            self->drain();
        });
    }

    nlohmann::json answer(const std::string& line) {
        const auto uid = peer_uid(socket);
        if (uid != 0 && uid != static_cast<long>(geteuid())) {
            // Should the socket's mode ever be widened, the peer check still holds: the request
            // is read (so the client sees the answer, not a broken pipe) but never acted on.
            spdlog::warn("control: refused a client with uid {} (only root and the daemon's user)",
                         uid);
            return error_reply("permission denied: uid " + std::to_string(uid) +
                               " is neither root nor the daemon's user");
        }
        const auto parsed = parse_request(line);
        if (!parsed.ok()) {
            spdlog::warn("control: {} ({} bytes)", parsed.error, line.size());
            return error_reply(parsed.error);
        }
        try {
            if (streams && (slices = streams(parsed.request)))
                return {};
            return handler(parsed.request);
        } catch (const std::exception& e) {
            spdlog::error("control: {} failed: {}", parsed.cmd, e.what());
            return error_reply(parsed.cmd + " failed: " + e.what());
        }
    }
};

} // namespace

ControlServer::ControlServer(asio::io_context& io, std::string path, CommandHandler handler,
                             StreamHandler streams)
    : path_(std::move(path)), handler_(std::move(handler)), streams_(std::move(streams)),
      acceptor_(io), sessions_(std::make_shared<Sessions>()) {
    sessions_->on_closed = [this] {
        // A session ended: take the next client waiting in the listen backlog.
        if (accept_paused_ && sessions_->open < kMaxSessions) {
            accept_paused_ = false;
            accept();
        }
    };
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
    sessions_->on_closed = nullptr; // sessions may outlive the server in the io_context
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    ::unlink(path_.c_str());
}

void ControlServer::accept() {
    if (sessions_->open >= kMaxSessions) {
        // Further clients wait in the listen backlog until a session ends (at the latest after
        // kRequestTimeout), so a few stuck clients cannot take every session for long.
        if (!accept_paused_)
            spdlog::warn("control: {} sessions open, further clients wait", sessions_->open);
        accept_paused_ = true;
        return;
    }
    acceptor_.async_accept([this](auto ec, stream::socket socket) {
        if (ec == asio::error::operation_aborted)
            return;
        if (!ec)
            std::make_shared<Session>(std::move(socket), handler_, streams_, sessions_)->run();
        accept();
    });
}

} // namespace localsa::control
