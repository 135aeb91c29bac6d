#include "sim_client.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace simhca_relay {
namespace {

// abstract unix socket address "\0<name>\0": ibsim counts the terminating NUL in the length
socklen_t make_addr(sockaddr_un& a, const std::string& name) {
    std::memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    const std::size_t n = std::min(name.size(), sizeof(a.sun_path) - 2);
    std::memcpy(a.sun_path + 1, name.data(), n);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n + 1);
}

int dgram_socket(const std::string& bind_name) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    sockaddr_un a{};
    const socklen_t len = make_addr(a, bind_name);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) < 0) {
        const int e = errno;
        ::close(fd);
        throw std::runtime_error("bind " + bind_name + ": " + std::strerror(e));
    }
    return fd;
}

void connect_retry(int fd, const std::string& name, int timeout_ms) {
    sockaddr_un a{};
    const socklen_t len = make_addr(a, name);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (::connect(fd, reinterpret_cast<sockaddr*>(&a), len) < 0) {
        if ((errno != ECONNREFUSED && errno != ENOENT) ||
            std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("connect " + name + ": " + std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

} // namespace

SimClient::SimClient(std::string basename, std::uint32_t sock_id, const std::string& node,
                     bool issm, int connect_timeout_ms, std::uint32_t qp)
    : basename_(std::move(basename)), qp_(qp) {
    if (qp == 1)
        throw std::invalid_argument("ibsim client qp must be 0 or above 1");
    const std::string id = std::to_string(sock_id);
    ctl_fd_ = dgram_socket(basename_ + ":ctl" + id);
    try {
        timeval tv{2, 0};
        ::setsockopt(ctl_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        connect_retry(ctl_fd_, basename_ + ":ctl", connect_timeout_ms);
        data_fd_ = dgram_socket(basename_ + ":in" + id);

        ibsim::ClientInfo info{};
        info.id = sock_id;
        info.qp = qp;
        info.issm = issm ? 1 : 0;
        std::strncpy(info.nodeid, node.c_str(), sizeof(info.nodeid) - 1);
        ctl(ibsim::kCtlConnect, &info, sizeof info);
        client_id_ = static_cast<int>(info.id);
        node_.assign(info.nodeid, strnlen(info.nodeid, sizeof info.nodeid));
        if (node_ != node)
            throw std::runtime_error("ibsim attached us to \"" + node_ + "\", not \"" + node +
                                     "\"");
        connect_retry(data_fd_, basename_ + ":out" + std::to_string(client_id_), 2000);
    } catch (...) {
        if (data_fd_ >= 0)
            ::close(data_fd_);
        ::close(ctl_fd_);
        throw;
    }
}

SimClient::~SimClient() {
    if (client_id_ >= 0) {
        try {
            ctl(ibsim::kCtlDisconnect, nullptr, 0);
        } catch (...) {
        }
    }
    if (data_fd_ >= 0)
        ::close(data_fd_);
    if (ctl_fd_ >= 0)
        ::close(ctl_fd_);
}

void SimClient::ctl(std::uint32_t type, void* data, std::uint32_t len) {
    // An answer that came after its request timed out would be read as the answer to this one:
    // drop what is pending first, and anything not answering this request's type below.
    ibsim::Ctl r{};
    while (::recv(ctl_fd_, &r, sizeof r, MSG_DONTWAIT) > 0)
        ++late_answers_;
    ibsim::Ctl c{};
    c.magic = ibsim::kMagic;
    c.clientid = client_id_ < 0 ? 0 : static_cast<std::uint32_t>(client_id_);
    c.type = type;
    c.len = len;
    if (len)
        std::memcpy(c.data, data, len);
    if (::send(ctl_fd_, &c, sizeof c, 0) != sizeof c)
        throw std::runtime_error("ibsim ctl send: " + std::string(std::strerror(errno)));
    for (;;) {
        if (::recv(ctl_fd_, &r, sizeof r, 0) != sizeof r) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                throw CtlTimeout("ibsim ctl " + std::to_string(type) + ": no answer within 2 s");
            throw std::runtime_error("ibsim ctl: no answer (" + std::string(std::strerror(errno)) +
                                     ")");
        }
        if (r.type == type || r.type == ibsim::kCtlError)
            break;
        ++late_answers_; // the answer to an earlier request that timed out
    }
    if (r.type == ibsim::kCtlError)
        throw std::runtime_error("ibsim ctl " + std::to_string(type) + " refused");
    if (len)
        std::memcpy(data, r.data, len);
}

std::array<std::uint8_t, 64> SimClient::node_info() {
    std::array<std::uint8_t, 64> d{};
    ctl(ibsim::kCtlGetNodeInfo, d.data(), d.size());
    return d;
}

std::array<std::uint8_t, 64> SimClient::port_info() {
    std::array<std::uint8_t, 64> d{}; // d[0] = 0: the client's own port
    ctl(ibsim::kCtlGetPortInfo, d.data(), d.size());
    return d;
}

std::array<std::uint16_t, 32> SimClient::pkeys() {
    std::array<std::uint8_t, 64> d{};
    ctl(ibsim::kCtlGetPkeys, d.data(), d.size());
    std::array<std::uint16_t, 32> p{};
    for (std::size_t i = 0; i < p.size(); ++i)
        p[i] = static_cast<std::uint16_t>(d[2 * i] << 8 | d[2 * i + 1]);
    return p;
}

void SimClient::set_issm(bool on) {
    int v = on ? 1 : 0;
    ctl(ibsim::kCtlSetIsSm, &v, sizeof v);
}

bool SimClient::send(const ibsim::Packet& p) {
    for (;;) {
        if (::send(data_fd_, &p, sizeof p, 0) == sizeof p)
            return true;
        if (errno != EINTR)
            return false;
    }
}

SimClient::SendResult SimClient::try_send(const ibsim::Packet& p) {
    for (;;) {
        if (::send(data_fd_, &p, sizeof p, MSG_DONTWAIT) == sizeof p)
            return SendResult::sent;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return SendResult::busy;
        if (errno != EINTR)
            return SendResult::failed;
    }
}

std::optional<ibsim::Packet> SimClient::receive() {
    ibsim::Packet p{};
    const ssize_t n = ::recv(data_fd_, &p, sizeof p, MSG_DONTWAIT);
    if (n != sizeof p)
        return std::nullopt;
    return p;
}

} // namespace simhca_relay
