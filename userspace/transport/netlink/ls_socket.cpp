#include "transport/netlink/ls_socket.hpp"

#include <boost/asio/buffer.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <linux/netlink.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace localsa::netlink {

namespace {

int open_socket(std::uint32_t& port_id) {
    const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, kProtocolRdma);
    if (fd < 0)
        throw SocketError(std::string("netlink socket (NETLINK_RDMA): ") + std::strerror(errno) +
                          (errno == EPROTONOSUPPORT ? " (ib_core not loaded)" : ""));
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    socklen_t len = sizeof local;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
        const int e = errno;
        ::close(fd);
        throw SocketError(std::string("netlink bind: ") + std::strerror(e));
    }
    port_id = local.nl_pid;
    const int group = static_cast<int>(kGroupLs);
    if (::setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0) {
        const int e = errno;
        ::close(fd);
        throw SocketError(std::string("joining RDMA_NL_GROUP_LS: ") + std::strerror(e) +
                          (e == EPERM ? " (needs CAP_NET_ADMIN)" : ""));
    }
    return fd;
}

} // namespace

LsSocket::LsSocket(boost::asio::any_io_executor executor)
    : descriptor_(executor), buffer_(64 * 1024) {
    descriptor_.assign(open_socket(port_id_));
}

void LsSocket::start(Handler on_message, MalformedHandler on_malformed) {
    on_message_ = std::move(on_message);
    on_malformed_ = std::move(on_malformed);
    receive();
}

void LsSocket::receive() {
    descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read, [this](auto ec) {
        if (ec)
            return; // closed
        for (;;) {
            sockaddr_nl from{};
            socklen_t len = sizeof from;
            const auto n = ::recvfrom(descriptor_.native_handle(), buffer_.data(), buffer_.size(),
                                      MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == ENOBUFS && on_malformed_)
                    on_malformed_("receive buffer overrun: requests lost (the kernel asks the SA "
                                  "after its timeout)");
                break; // EAGAIN: all read
            }
            if (static_cast<std::size_t>(n) > buffer_.size()) {
                if (on_malformed_)
                    on_malformed_("datagram larger than the receive buffer");
                continue;
            }
            auto split = split_messages(Bytes{buffer_.data(), static_cast<std::size_t>(n)});
            for (auto& m : split.messages) {
                m.sender = from.nl_pid;
                on_message_(m);
            }
            if (split.error && on_malformed_)
                on_malformed_(split.error);
        }
        receive();
    });
}

bool LsSocket::send(Bytes message) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK; // nl_pid 0: the kernel
    for (;;) {
        const auto n = ::sendto(descriptor_.native_handle(), message.data(), message.size(), 0,
                                reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel);
        if (n >= 0)
            return static_cast<std::size_t>(n) == message.size();
        if (errno != EINTR)
            return false;
    }
}

void LsSocket::close() {
    boost::system::error_code ignored;
    descriptor_.close(ignored);
}

namespace {

// The local SAs of the node's other ports are members too, each answering its own port: not
// another listener. A process's first netlink socket gets its pid as port id (autobind), and
// localsad opens no other before this one.
bool is_local_sa(unsigned long port_id) {
    std::ifstream comm("/proc/" + std::to_string(port_id) + "/comm");
    std::string name;
    return std::getline(comm, name) && name == "localsad";
}

} // namespace

std::size_t other_ls_listeners(std::uint32_t own_port_id, const char* proc_file) {
    std::ifstream in(proc_file);
    std::string line;
    std::getline(in, line); // header: sk Eth Pid Groups ...
    std::size_t n = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string sk;
        int protocol = -1;
        unsigned long pid = 0, groups = 0;
        fields >> sk >> protocol >> pid >> std::hex >> groups;
        if (!fields || protocol != kProtocolRdma || pid == own_port_id)
            continue;
        if ((groups & (1ul << (kGroupLs - 1))) && !is_local_sa(pid))
            ++n;
    }
    return n;
}

} // namespace localsa::netlink
