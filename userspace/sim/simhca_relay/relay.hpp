// The relay proper: MADs between /dev/simhcaN and ibsim, port attributes from ibsim.
#pragma once

#include "loss.hpp"
#include "port_mirror.hpp"
#include "sim_client.hpp"
#include "tid_translator.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace simhca_relay {

struct Options {
    std::string device; // /dev/simhcaN
    // An already open device (tests: one end of a SOCK_SEQPACKET pair standing in for
    // /dev/simhcaN); the relay owns it. -1: open `device`.
    int device_fd = -1;
    std::string node;         // ibsim node name
    std::string sim_basename; // ibsim socket name space
    int poll_ms = 100;        // PortInfo mirror period
    int connect_timeout_ms = 10000;
    double drop_rate = 0; // share of GMPs dropped in each direction (loss.hpp)
    std::uint64_t drop_seed = 1;
    std::string drop_rate_file; // if set: the rate is read from it every poll period
    // A slow master: SA answers (class 0x03, response methods) on their way to the kernel are
    // held this long; read from the file every poll period when set.
    int sa_delay_ms = 0;
    std::string sa_delay_file;
    std::string counters_file; // if set: the counters are written to it every poll period
};

struct Counters {
    std::uint64_t to_fabric = 0;
    std::uint64_t to_kernel = 0;
    std::uint64_t undeliverable = 0;
    std::uint64_t port_updates = 0;
    std::uint64_t port_reads_late = 0; // ibsim too busy to answer a port read in time
    std::uint64_t dropped_to_fabric = 0;
    std::uint64_t dropped_to_kernel = 0;
    std::uint64_t delayed_to_kernel = 0;
    std::uint64_t sa_requests_to_fabric = 0; // what the node asks of the master SA
    std::uint64_t pr_requests_to_fabric = 0; // ... of which PathRecord queries
    std::uint64_t to_fabric_waited = 0;      // MADs that waited for room in ibsim's queue
    std::uint64_t to_fabric_overflow = 0;    // ... dropped: the wait queue was full
    std::size_t to_fabric_queue_max = 0;     // the longest the wait queue was
};

class Relay {
public:
    explicit Relay(Options opts);
    ~Relay();
    Relay(const Relay&) = delete;
    Relay& operator=(const Relay&) = delete;

    // Runs until stop becomes true. Throws on a fatal device or ibsim error.
    // Relays until `stop_fd` becomes readable (a signalfd for SIGINT/SIGTERM).
    void run(int stop_fd);
    const Counters& counters() const { return counters_; }

private:
    void from_device();
    void to_fabric(const ibsim::Packet& p);
    void flush_to_fabric();
    void from_fabric(SimClient& c);
    void mirror_port();
    void set_local_capmask(std::uint32_t mask);
    void write_device(const simhca_msg& m);
    void reload_sa_delay();
    void release_delayed();
    void write_counters() const;
    std::optional<std::chrono::steady_clock::time_point> next_release() const;

    Options opts_;
    int dev_fd_ = -1;
    std::unique_ptr<SimClient> sim_;   // the node's SM slot: every request for the port
    std::unique_ptr<SimClient> is_sm_; // present while the kernel has IsSM set
    TidTranslator tids_;
    LossInjector loss_;
    std::optional<PortSnapshot> last_;
    std::array<std::uint8_t, 64> node_info_{};
    Counters counters_;
    std::chrono::steady_clock::time_point next_expire_{};
    // SA answers held by the slow-master injection, in the order they are due (one delay for
    // all: arrival order is due order).
    std::deque<std::pair<std::chrono::steady_clock::time_point, simhca_msg>> delayed_;
    // MADs for ibsim while its queue for us is full. Sending never blocks: ibsim writes to us
    // until we read, and a relay blocked on ibsim while ibsim is blocked on the relay stops the
    // whole fabric (OpenSM's own SMPs included).
    std::deque<ibsim::Packet> to_fabric_queue_;
};

} // namespace simhca_relay
