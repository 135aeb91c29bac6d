#include "relay.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace simhca_relay {
namespace {

constexpr std::uint32_t kIsSm = 1u << 1; // PortInfo:CapabilityMask.IsSM
constexpr std::uint8_t kSaClass = 0x03;
constexpr std::uint8_t kResponseBit = 0x80;
constexpr int kPathRecordAttr = 0x0035;
// QP1's well-known Q_Key (IBA 13.5.3.3); a MAD to QP0 carries none. (Test equipment below the
// engine's layer: it does not include the codec's ib/constants.hpp.)
constexpr std::uint32_t kGsiQkey = 0x80010000;
// MADs held for ibsim at most (a few MB): far more than the kernel's MAD layer has in flight.
constexpr std::size_t kToFabricQueueMax = 16384;

std::uint16_t wire_lid(std::uint32_t field) {
    return ntohs(static_cast<std::uint16_t>(field));
}

std::string errno_text() {
    return std::strerror(errno);
}

} // namespace

Relay::Relay(Options opts)
    : opts_(std::move(opts)), tids_(0), loss_(opts_.drop_rate, opts_.drop_seed) {
    if (opts_.device_fd >= 0) {
        dev_fd_ = opts_.device_fd;
        if (::fcntl(dev_fd_, F_SETFL, ::fcntl(dev_fd_, F_GETFL) | O_NONBLOCK) < 0) {
            ::close(dev_fd_);
            throw std::runtime_error(opts_.device + ": " + errno_text());
        }
    } else {
        dev_fd_ = ::open(opts_.device.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    }
    if (dev_fd_ < 0)
        throw std::runtime_error("open " + opts_.device + ": " + errno_text());
    try {
        sim_ =
            std::make_unique<SimClient>(opts_.sim_basename, static_cast<std::uint32_t>(::getpid()),
                                        opts_.node, true, opts_.connect_timeout_ms);
    } catch (...) {
        ::close(dev_fd_);
        throw;
    }
    tids_ = TidTranslator(sim_->id());
    node_info_ = sim_->node_info();
    spdlog::info("{} attached to ibsim node \"{}\" as client {} (SM slot)", opts_.device,
                 sim_->node(), sim_->id());
    mirror_port();
}

Relay::~Relay() {
    is_sm_.reset();
    sim_.reset();
    if (dev_fd_ >= 0)
        ::close(dev_fd_);
}

void Relay::write_device(const simhca_msg& m) {
    if (::write(dev_fd_, &m, sizeof m) != static_cast<ssize_t>(sizeof m))
        spdlog::warn("write {}: {}", opts_.device, errno_text());
}

void Relay::from_device() {
    for (;;) {
        simhca_msg m{};
        const ssize_t n = ::read(dev_fd_, &m, sizeof m);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n != static_cast<ssize_t>(sizeof m))
            throw std::runtime_error("read " + opts_.device + ": " + errno_text());
        if (m.type == SIMHCA_MSG_CAPMASK) {
            set_local_capmask(m.capmask.local_cap_mask);
            continue;
        }
        if (m.type != SIMHCA_MSG_MAD)
            continue;
        ibsim::Packet p{};
        p.dlid = htons(m.mad.dlid);
        p.slid = htons(m.mad.slid);
        p.dqp = htonl(m.mad.dqpn);
        p.sqp = htonl(m.mad.sqpn);
        p.status = 0;
        p.length = htobe64(sizeof p.mad);
        std::memcpy(p.mad, m.mad.data, std::min<std::size_t>(m.mad.length, sizeof p.mad));
        if (loss_.drop(p.mad)) {
            ++counters_.dropped_to_fabric;
            spdlog::trace("dropped (loss injection) -> dlid {} class 0x{:02x}", m.mad.dlid,
                          p.mad[1]);
            continue;
        }
        if (p.mad[1] == kSaClass && !(p.mad[3] & kResponseBit)) {
            ++counters_.sa_requests_to_fabric;
            if ((p.mad[16] << 8 | p.mad[17]) == kPathRecordAttr)
                ++counters_.pr_requests_to_fabric;
        }
        tids_.outgoing(p.mad);
        spdlog::trace("-> dlid {} dqp {} class 0x{:02x} method 0x{:02x} attr 0x{:04x}", m.mad.dlid,
                      m.mad.dqpn, p.mad[1], p.mad[3], p.mad[16] << 8 | p.mad[17]);
        to_fabric(p);
    }
}

void Relay::to_fabric(const ibsim::Packet& p) {
    if (to_fabric_queue_.size() >= kToFabricQueueMax) {
        // what a congested link does: the MAD layer's retries and timeouts take it from here
        ++counters_.to_fabric_overflow;
        return;
    }
    to_fabric_queue_.push_back(p);
    flush_to_fabric();
    if (!to_fabric_queue_.empty()) { // in order: this MAD, the last, waits
        ++counters_.to_fabric_waited;
        counters_.to_fabric_queue_max =
            std::max(counters_.to_fabric_queue_max, to_fabric_queue_.size());
    }
}

void Relay::flush_to_fabric() {
    while (!to_fabric_queue_.empty()) {
        switch (sim_->try_send(to_fabric_queue_.front())) {
        case SimClient::SendResult::sent:
            ++counters_.to_fabric;
            to_fabric_queue_.pop_front();
            continue;
        case SimClient::SendResult::failed:
            throw std::runtime_error("ibsim send: " + errno_text());
        case SimClient::SendResult::busy:
            return;
        }
    }
}

void Relay::from_fabric(SimClient& c) {
    while (auto p = c.receive()) {
        if (p->status) {
            // ibsim returns what it could not route with a status: the wire drops it
            ++counters_.undeliverable;
            spdlog::debug("undeliverable MAD to lid {} (status {})", wire_lid(p->dlid),
                          ntohl(p->status));
            continue;
        }
        if (loss_.drop(p->mad)) {
            ++counters_.dropped_to_kernel;
            spdlog::trace("dropped (loss injection) <- slid {} class 0x{:02x}", wire_lid(p->slid),
                          p->mad[1]);
            continue;
        }
        simhca_msg m{};
        m.type = SIMHCA_MSG_MAD;
        m.mad.dlid = wire_lid(p->dlid);
        m.mad.slid = wire_lid(p->slid);
        m.mad.dqpn = ntohl(p->dqp);
        m.mad.sqpn = ntohl(p->sqp);
        m.mad.qkey = m.mad.dqpn ? kGsiQkey : 0;
        m.mad.pkey_index = 0;
        if (last_)
            for (std::uint16_t i = 0; i < SIMHCA_PKEY_TBL_LEN; ++i)
                if ((last_->port.pkeys[i] & 0x7fff) == 0x7fff) {
                    m.mad.pkey_index = i;
                    break;
                }
        tids_.incoming(p->mad);
        std::memcpy(m.mad.data, p->mad, sizeof m.mad.data);
        m.mad.length = sizeof m.mad.data;
        spdlog::trace("<- slid {} sqp {} class 0x{:02x} method 0x{:02x} attr 0x{:04x}", m.mad.slid,
                      m.mad.sqpn, p->mad[1], p->mad[3], p->mad[16] << 8 | p->mad[17]);
        if (opts_.sa_delay_ms > 0 && p->mad[1] == kSaClass && (p->mad[3] & kResponseBit)) {
            delayed_.emplace_back(
                std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.sa_delay_ms), m);
            ++counters_.delayed_to_kernel;
            continue;
        }
        write_device(m);
        ++counters_.to_kernel;
    }
}

void Relay::reload_sa_delay() {
    std::ifstream in(opts_.sa_delay_file);
    int ms = 0;
    if (!(in >> ms) || ms < 0 || ms == opts_.sa_delay_ms)
        return;
    opts_.sa_delay_ms = ms;
    spdlog::info("slow master: SA answers to the kernel held {} ms", ms);
}

void Relay::release_delayed() {
    const auto now = std::chrono::steady_clock::now();
    while (!delayed_.empty() && delayed_.front().first <= now) {
        write_device(delayed_.front().second);
        ++counters_.to_kernel;
        delayed_.pop_front();
    }
}

void Relay::write_counters() const {
    // Written aside and renamed: a reader never sees half a file.
    const auto tmp = opts_.counters_file + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << "to_fabric " << counters_.to_fabric << "\nto_kernel " << counters_.to_kernel
            << "\nsa_requests_to_fabric " << counters_.sa_requests_to_fabric
            << "\npr_requests_to_fabric " << counters_.pr_requests_to_fabric
            << "\ndelayed_to_kernel " << counters_.delayed_to_kernel << "\nto_fabric_waited "
            << counters_.to_fabric_waited << "\nto_fabric_overflow " << counters_.to_fabric_overflow
            << "\n";
    }
    if (std::rename(tmp.c_str(), opts_.counters_file.c_str()) != 0)
        spdlog::warn("rename {}: {}", tmp, errno_text());
}

std::optional<std::chrono::steady_clock::time_point> Relay::next_release() const {
    if (delayed_.empty())
        return std::nullopt;
    return delayed_.front().first;
}

void Relay::set_local_capmask(std::uint32_t mask) {
    const bool want = mask & kIsSm;
    spdlog::info("local CapabilityMask 0x{:08x}", mask);
    if (want && !is_sm_) {
        // a second client sets IsSM in the node's PortInfo; the first keeps the SM slot
        is_sm_ = std::make_unique<SimClient>(opts_.sim_basename,
                                             static_cast<std::uint32_t>(::getpid()) | 0x40000000u,
                                             opts_.node, false, opts_.connect_timeout_ms);
        is_sm_->set_issm(true);
        spdlog::info("IsSM set on \"{}\"", opts_.node);
    } else if (!want && is_sm_) {
        is_sm_->set_issm(false);
        is_sm_.reset();
        spdlog::info("IsSM cleared on \"{}\"", opts_.node);
    }
}

void Relay::mirror_port() {
    PortSnapshot s = make_snapshot(node_info_, sim_->port_info(), sim_->pkeys());
    // ibsim 0.10 does not keep PortInfo:ClientReregister (it rebuilds PortInfo from its own
    // fields), so a new master SM is taken as the request: OpenSM sets ClientReregister on
    // every port in its first sweep as master.
    const bool new_master = s.port.sm_lid != 0 && (!last_ || last_->port.sm_lid != s.port.sm_lid);
    const bool rereg = (s.client_rereg && !(last_ && last_->client_rereg)) || new_master;
    if (last_ && same_port(last_->port, s.port) && !rereg) {
        last_->client_rereg = s.client_rereg;
        return;
    }
    simhca_msg m{};
    m.type = SIMHCA_MSG_PORT;
    m.flags = rereg ? SIMHCA_PORT_F_CLIENT_REREG : 0;
    m.port = s.port;
    write_device(m);
    ++counters_.port_updates;
    spdlog::info("port: {}{}", describe(s.port), rereg ? " (client reregister)" : "");
    last_ = s;
}

void Relay::run(int stop_fd) {
    auto next_poll = std::chrono::steady_clock::now();
    for (;;) {
        const short to_ibsim = to_fabric_queue_.empty() ? 0 : POLLOUT;
        pollfd fds[4] = {{dev_fd_, POLLIN, 0},
                         {sim_->data_fd(), static_cast<short>(POLLIN | to_ibsim), 0},
                         {-1, POLLIN, 0},
                         {stop_fd, POLLIN, 0}};
        if (is_sm_)
            fds[2].fd = is_sm_->data_fd();
        const auto now = std::chrono::steady_clock::now();
        const auto wake = std::min(next_poll, next_release().value_or(next_poll));
        const int wait = static_cast<int>(std::max<std::int64_t>(
            0, std::chrono::ceil<std::chrono::milliseconds>(wake - now).count()));
        const int n = ::poll(fds, 4, wait);
        if (n < 0 && errno != EINTR)
            throw std::runtime_error("poll: " + errno_text());
        if (n > 0 && fds[3].revents)
            return;
        if (n > 0) {
            if (fds[0].revents & (POLLERR | POLLHUP))
                throw std::runtime_error(opts_.device + " closed");
            if (fds[1].revents & (POLLIN | POLLERR | POLLHUP))
                from_fabric(*sim_);
            if (fds[1].revents & POLLOUT)
                flush_to_fabric();
            if (fds[2].revents && is_sm_)
                from_fabric(*is_sm_);
            if (fds[0].revents & POLLIN)
                from_device();
        }
        release_delayed();
        if (std::chrono::steady_clock::now() >= next_poll) {
            try {
                mirror_port();
            } catch (const CtlTimeout& e) {
                // ibsim is busy forwarding (a burst in a slow guest): the port is as it was;
                // read it at the next poll. Giving up here took the port off the fabric.
                ++counters_.port_reads_late;
                spdlog::warn("{}: port read again at the next poll", e.what());
            }
            if (!opts_.sa_delay_file.empty())
                reload_sa_delay();
            if (!opts_.counters_file.empty())
                write_counters();
            if (!opts_.drop_rate_file.empty() && loss_.reload_from(opts_.drop_rate_file))
                spdlog::info(
                    "loss injection: dropping {} of the GMPs in each direction ({} dropped so far)",
                    loss_.rate(), counters_.dropped_to_fabric + counters_.dropped_to_kernel);
            next_poll = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.poll_ms);
            if (next_poll > next_expire_) {
                tids_.expire(std::chrono::seconds(120));
                next_expire_ = next_poll + std::chrono::seconds(10);
            }
        }
    }
}

} // namespace simhca_relay
