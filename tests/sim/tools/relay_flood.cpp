// sim-relay-flood: simhca-relay's data path under load in both directions at once, against the
// real ibsim, without a kernel.
//
// A simhca_relay::Relay is attached to ibsim node --node (its SM slot). Its device is one end of
// a SOCK_SEQPACKET socket pair this program holds, standing in for /dev/simhcaN: what the
// program writes there is what the kernel would send, what it reads is what the kernel would
// receive. A second ibsim client takes the SM slot of --peer. Then, at the same time:
//   - the "kernel" sends --count SA Gets to the peer's LID through the relay;
//   - the peer sends --count SA Gets to the relay's node.
// This is the traffic of a burst at the master's node in the vm tier: requests arriving while
// the node's own answers leave. ibsim writes to a client in a loop until the client reads, so
// a relay that blocks sending to ibsim while ibsim writes to it stops the whole fabric.
//
// Prints one line, "to_peer A/N to_device B/N ...", and exits 0 when both directions
// delivered all N within --timeout-s, 1 otherwise (the relay may be stuck: the process ends
// without joining it), 2 on bad options or an ibsim error.
#include "relay.hpp"
#include "sim_client.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

namespace {

using simhca_relay::SimClient;
using simhca_relay::ibsim::Packet;
using Clock = std::chrono::steady_clock;

constexpr std::uint8_t kSaClass = 0x03;
constexpr std::uint8_t kGet = 0x01;
constexpr std::uint16_t kNodeRecord = 0x0011;

// An SA Get (NodeRecord) with the given TID: any GMP request ibsim forwards to the SM slot.
void fill_get(std::uint8_t* mad, std::uint64_t tid) {
    std::memset(mad, 0, 256);
    mad[0] = 1; // base version
    mad[1] = kSaClass;
    mad[2] = 2; // class version
    mad[3] = kGet;
    for (int i = 15; i >= 8; --i, tid >>= 8)
        mad[i] = static_cast<std::uint8_t>(tid);
    mad[16] = kNodeRecord >> 8;
    mad[17] = kNodeRecord & 0xff;
}

} // namespace

int main(int argc, char** argv) {
    namespace po = boost::program_options;
    std::string node, peer, socket_name;
    int node_lid = 0, peer_lid = 0, count = 0, timeout_s = 0;
    po::options_description desc("Usage: sim-relay-flood --node N --node-lid L --peer P "
                                 "--peer-lid L [options]\nOptions");
    desc.add_options()("help,h", "this help")("node", po::value(&node)->required(),
                                              "ibsim node the relay attaches to")(
        "node-lid", po::value(&node_lid)->required(),
        "its LID")("peer", po::value(&peer)->required(), "ibsim node of the peer client")(
        "peer-lid", po::value(&peer_lid)->required(),
        "its LID")("count", po::value(&count)->default_value(4000), "MADs each way")(
        "timeout-s", po::value(&timeout_s)->default_value(30), "how long both may take")(
        "sim-socket",
        po::value(&socket_name)
            ->default_value(std::getenv("IBSIM_SOCKNAME") ? std::getenv("IBSIM_SOCKNAME") : "sim"),
        "ibsim socket name space (IBSIM_SOCKNAME)");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
        if (count <= 0 || timeout_s <= 0 || node_lid <= 0 || node_lid >= 0xc000 || peer_lid <= 0 ||
            peer_lid >= 0xc000)
            throw std::invalid_argument("--count, --timeout-s and the LIDs must be positive "
                                        "(LIDs unicast)");
    } catch (const std::exception& e) {
        std::cerr << "sim-relay-flood: " << e.what() << "\n" << desc << "\n";
        return 2;
    }
    spdlog::set_level(spdlog::level::warn);

    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
        std::perror("socketpair");
        return 2;
    }
    const int kernel_fd = pair[1];
    // simhca's write() never refuses a MAD (it is delivered or dropped at once, as on a wire);
    // room for every MAD of the run keeps the stand-in from refusing one either.
    const int room = 16 << 20;
    if (::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUFFORCE, &room, sizeof room) < 0)
        ::setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
    const int stop_fd = ::eventfd(0, EFD_CLOEXEC);
    std::unique_ptr<simhca_relay::Relay> relay;
    std::unique_ptr<SimClient> peer_client;
    try {
        simhca_relay::Options opts;
        opts.device = "socket pair";
        opts.device_fd = pair[0];
        opts.node = node;
        opts.sim_basename = socket_name;
        relay = std::make_unique<simhca_relay::Relay>(opts);
        peer_client = std::make_unique<SimClient>(
            socket_name, static_cast<std::uint32_t>(::getpid()) | 0x20000000u, peer, true, 10000);
    } catch (const std::exception& e) {
        std::cerr << "sim-relay-flood: " << e.what() << "\n";
        return 2;
    }

    std::atomic<int> to_peer{0}, to_device{0};
    std::atomic<bool> done{false};
    // The peer: reads what reaches it, and sends its Gets to the relay's node.
    std::thread peer_reader([&] {
        while (!done) {
            pollfd p{peer_client->data_fd(), POLLIN, 0};
            if (::poll(&p, 1, 100) > 0)
                while (auto pkt = peer_client->receive())
                    if (!pkt->status && pkt->mad[1] == kSaClass)
                        ++to_peer;
        }
    });
    std::thread peer_sender([&] {
        for (int i = 0; i < count; ++i) {
            Packet p{};
            p.dlid = htons(static_cast<std::uint16_t>(node_lid));
            p.slid = htons(static_cast<std::uint16_t>(peer_lid));
            p.dqp = htonl(1);
            p.sqp = htonl(1);
            p.length = htobe64(sizeof p.mad);
            fill_get(p.mad, 0x5000000000ULL + static_cast<std::uint64_t>(i));
            if (!peer_client->send(p))
                return;
        }
    });
    // The "kernel": reads what the relay delivers, and sends its Gets to the peer.
    std::thread kernel_reader([&] {
        while (!done) {
            pollfd p{kernel_fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0)
                continue;
            simhca_msg m{};
            while (::recv(kernel_fd, &m, sizeof m, MSG_DONTWAIT) == sizeof m)
                if (m.type == SIMHCA_MSG_MAD && m.mad.data[1] == kSaClass)
                    ++to_device;
        }
    });
    std::thread kernel_sender([&] {
        for (int i = 0; i < count; ++i) {
            simhca_msg m{};
            m.type = SIMHCA_MSG_MAD;
            m.mad.dlid = static_cast<std::uint16_t>(peer_lid);
            m.mad.slid = static_cast<std::uint16_t>(node_lid);
            m.mad.dqpn = 1;
            m.mad.sqpn = 1;
            m.mad.length = sizeof m.mad.data;
            fill_get(m.mad.data, 0x6000000000ULL + static_cast<std::uint64_t>(i));
            if (::send(kernel_fd, &m, sizeof m, 0) != sizeof m)
                return;
        }
    });
    // Both directions are loaded before the relay starts: the first thing it sees is a full
    // device and ibsim writing to it.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::atomic<bool> relay_failed{false};
    std::thread relay_thread([&] {
        try {
            relay->run(stop_fd);
        } catch (const std::exception& e) {
            std::cerr << "sim-relay-flood: relay: " << e.what() << "\n";
            relay_failed = true;
        }
    });

    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    while (Clock::now() < deadline && !relay_failed && (to_peer < count || to_device < count))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const bool ok = to_peer == count && to_device == count && !relay_failed;
    std::printf("to_peer %d/%d to_device %d/%d", to_peer.load(), count, to_device.load(), count);
    if (!ok) {
        std::printf(" (not all delivered within %d s)\n", timeout_s);
        std::fflush(stdout);
        ::_exit(1); // a stuck relay or sender cannot be joined
    }
    done = true;
    const std::uint64_t one = 1;
    (void)!::write(stop_fd, &one, sizeof one);
    relay_thread.join();
    peer_sender.join();
    kernel_sender.join();
    peer_reader.join();
    kernel_reader.join();
    const auto& c = relay->counters();
    std::printf(" relay: to_fabric %llu to_kernel %llu undeliverable %llu\n",
                static_cast<unsigned long long>(c.to_fabric),
                static_cast<unsigned long long>(c.to_kernel),
                static_cast<unsigned long long>(c.undeliverable));
    return 0;
}
