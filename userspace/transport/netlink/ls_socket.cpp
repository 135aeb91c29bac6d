#include "transport/netlink/ls_socket.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <linux/netlink.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
    // A burst of RESOLVEs (a job start: hundreds of connections at once) arrives faster than
    // one wake-up reads it; the default buffer (rmem_default, ~200 KiB, each RESOLVE's skb
    // about 1 KiB of it) overflows and the kernel drops the rest (ENOBUFS here): each of those
    // waits the whole kernel timeout, then goes to the SA. FORCE passes rmem_max (CAP_NET_ADMIN,
    // which joining the group needs anyway).
    const int size = static_cast<int>(kReceiveBufferBytes);
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
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

std::size_t LsSocket::receive_buffer() {
    int size = 0;
    socklen_t len = sizeof size;
    if (::getsockopt(descriptor_.native_handle(), SOL_SOCKET, SO_RCVBUF, &size, &len) != 0)
        return 0;
    return static_cast<std::size_t>(size);
}

void LsSocket::start(Handler on_message, MalformedHandler on_malformed) {
    on_message_ = std::move(on_message);
    on_malformed_ = std::move(on_malformed);
    receive();
}

void LsSocket::receive() {
    descriptor_.async_wait(boost::asio::posix::descriptor_base::wait_read, [this](auto ec) {
        if (!ec)
            read_batch();
    });
}

void LsSocket::read_batch() {
    // At most a batch per turn: the rest is read after the umad reads and timers that are ready
    // now (a burst must not starve them). The descriptor is edge-triggered: what is left is read
    // on by a posted turn, not by waiting for the next datagram.
    for (std::size_t batch = 0; batch < kReceiveBatch; ++batch) {
        sockaddr_nl from{};
        socklen_t len = sizeof from;
        const auto n = ::recvfrom(descriptor_.native_handle(), buffer_.data(), buffer_.size(),
                                  MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS) {
                if (on_malformed_)
                    on_malformed_("receive buffer overrun: requests lost (the kernel asks the "
                                  "SA after its timeout)");
                continue; // what is queued behind the loss is still there
            }
            receive(); // EAGAIN: all read
            return;
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
    boost::asio::post(descriptor_.get_executor(), [this] {
        if (descriptor_.is_open())
            read_batch();
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

bool unix_socket_listening(const std::string& path) {
    // The file alone says nothing: a local SA killed (SIGKILL), crashed, or unable to unlink
    // it at exit (a RuntimeDirectory of root's) leaves it. A connect does: refused when nobody
    // listens, accepted (or EAGAIN, its backlog full) when someone does.
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof addr.sun_path)
        return false;
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const auto is_socket_file = [&] {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
    };
    if (fd < 0)
        return is_socket_file(); // cannot probe (no descriptor left): the file decides
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    const int e = errno;
    ::close(fd);
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
        return true;
    if (e == EACCES || e == EPERM)
        return is_socket_file(); // not ours to connect to: the file decides
    return false;                // ECONNREFUSED, ENOENT, ENOTSOCK: nobody listens there
}

} // namespace localsa::netlink
