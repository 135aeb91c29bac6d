// The netlink socket of the kernel's local path service: joins RDMA_NL_GROUP_LS, receives the
// kernel's RESOLVE requests, sends replies and SET_TIMEOUT. Joining the group and every message
// to the kernel need CAP_NET_ADMIN (rdma netlink: RDMA_NL_ADMIN_PERM, checked on the sender at
// send time), so localsad keeps that one capability while the service is on.
#pragma once

#include "transport/netlink/ls_message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace localsa::netlink {

class SocketError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Asked for the receive buffer: room for a burst of about 4,000 RESOLVEs.
constexpr std::size_t kReceiveBufferBytes = 4 << 20;
// Datagrams read per wake-up of the event loop.
constexpr std::size_t kReceiveBatch = 64;

class LsSocket {
public:
    using Handler = std::function<void(const Message&)>;
    using MalformedHandler = std::function<void(const char* why)>;

    // Opens the socket and joins the group; throws SocketError (no ib_core, no CAP_NET_ADMIN).
    explicit LsSocket(boost::asio::any_io_executor executor);
    LsSocket(const LsSocket&) = delete;
    LsSocket& operator=(const LsSocket&) = delete;

    // Starts receiving: `on_message` for each message, `on_malformed` for unreadable datagrams.
    void start(Handler on_message, MalformedHandler on_malformed);
    // Sends one message to the kernel; false (errno logged by the caller) when refused.
    bool send(Bytes message);
    // The socket's receive buffer in bytes, as the kernel counts it (twice what was asked).
    std::size_t receive_buffer();
    // The socket's netlink port id.
    std::uint32_t port_id() const { return port_id_; }
    void close();

private:
    void receive();
    void read_batch();

    boost::asio::posix::stream_descriptor descriptor_;
    std::uint32_t port_id_ = 0;
    std::vector<std::uint8_t> buffer_;
    Handler on_message_;
    MalformedHandler on_malformed_;
};

// Other sockets on RDMA_NL_GROUP_LS than `own_port_id` (such as ibacm's), from /proc/net/netlink
// (its Groups column: the first 32 groups of each socket). The kernel multicasts each RESOLVE to
// every member and takes the first reply; another member's replies go to the kernel alone and
// cannot be seen, so its membership is what is observable. The local SAs of other ports (a
// member whose port id is the pid of a process named localsad) do not count.
std::size_t other_ls_listeners(std::uint32_t own_port_id,
                               const char* proc_file = "/proc/net/netlink");

// True when a process listens on the unix stream socket at `path` (another port's local SA on
// its control socket).
bool unix_socket_listening(const std::string& path);

} // namespace localsa::netlink
