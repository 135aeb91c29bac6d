#include "transport/umad/umad_transport.hpp"

#include "ib/constants.hpp"

#include <boost/asio/post.hpp>
#include <infiniband/umad.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace localsa::transport {

namespace {

int register_agent(int fd, std::uint8_t mgmt_class, std::uint8_t version, std::uint8_t rmpp,
                   std::initializer_list<std::uint8_t> methods) {
    long mask[16 / sizeof(long)] = {};
    for (auto m : methods)
        mask[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
    errno = 0;
    const int id = umad_register(fd, mgmt_class, version, rmpp, methods.size() ? mask : nullptr);
    if (id < 0)
        throw TransportError(register_failure_message(mgmt_class, version, errno ? errno : -id));
    return id;
}

// PortInfo:CapabilityMask.IsSM: set while a subnet manager holds the port's issm device.
constexpr std::uint32_t kCapIsSm = 1u << 1;

// The device file behind an open umad fd ("/dev/infiniband/umad1"), for messages.
std::string umad_device_path(int fd) {
    char link[64];
    char target[256];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const auto n = ::readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return "(fd " + std::to_string(fd) + ")";
    std::string path(target, static_cast<std::size_t>(n));
    if (const auto deleted = path.find(" (deleted)"); deleted != std::string::npos)
        path.erase(deleted);
    return path;
}

} // namespace

std::string register_failure_message(std::uint8_t mgmt_class, std::uint8_t version,
                                     int kernel_errno) {
    char what[64];
    std::snprintf(what, sizeof what, "umad_register(class 0x%02x version %u)", mgmt_class, version);
    // The kernel's MAD layer refuses a registration whose methods overlap another agent's with
    // EINVAL; everything else it says is passed on as is.
    if (kernel_errno == EINVAL)
        return std::string(what) + " refused: its methods are already registered on this port by "
                                   "another agent (a subnet manager's SA, another localsad)";
    return std::string(what) + " failed: " + std::strerror(kernel_errno);
}

UmadTransport::UmadTransport(const UmadOptions& options, boost::asio::any_io_executor executor,
                             InboundHandler handler)
    : executor_(std::move(executor)), handler_(std::move(handler)) {
    if (umad_init() < 0)
        throw TransportError("umad_init failed: is ib_umad loaded?");
    auto reading = read_umad_port_with_cap_mask(options.ca, options.port);
    port_ = std::move(reading.port);
    // Whoever registers the SA methods of a port first keeps them: on a node whose SM (master or
    // standby) came first, the registration below would fail; on one whose SM starts later, the
    // SM's SA could never start. Under ibsim IsSM is localsad's own (claim_issm).
    if (options.sa_server && !options.claim_issm && (reading.cap_mask & kCapIsSm))
        throw PortHasSmError(
            "a subnet manager runs on " + port_.ca + " port " + std::to_string(port_.port) +
            " (IsSM is set in its CapabilityMask): its SA needs the SA methods of this port, so "
            "localsad does not start here. Run localsad on nodes without an SM, or stop the "
            "subnet manager on this node first if it is not needed there");
    watch_for_sm_ = options.sa_server && !options.claim_issm;
    fd_ = umad_open_port(port_.ca.c_str(), port_.port);
    if (fd_ < 0)
        throw TransportError("cannot open umad device of " + port_.ca + " port " +
                             std::to_string(port_.port) + ": " + std::strerror(-fd_) +
                             " (root needed for /dev/infiniband/umad*)");
    using namespace mad;
    sa_agent_ = register_agent(
        fd_, mgmt_class::kSubnAdm, kSaClassVersion, rmpp::kVersion,
        options.sa_server
            ? std::initializer_list<std::uint8_t>{method::kGet, method::kSet, method::kGetTable,
                                                  method::kGetTraceTable, method::kGetMulti,
                                                  method::kDelete, method::kReport}
            : std::initializer_list<std::uint8_t>{});
    if (options.claim_issm) {
        smp_lid_agent_ = register_agent(fd_, mgmt_class::kSubnLid, kSmpClassVersion, 0,
                                        {method::kGet, method::kSet, method::kTrapRepress});
        smp_dr_agent_ = register_agent(fd_, mgmt_class::kSubnDirected, kSmpClassVersion, 0,
                                       {method::kGet, method::kSet, method::kTrapRepress});
        // Only now, with an agent for every class the master will send, claim IsSM: a MAD of a
        // class without an agent kills an umad2sim client.
        char path[256];
        if (umad_get_issm_path(port_.ca.c_str(), port_.port, path, sizeof path) < 0 ||
            (issm_fd_ = ::open(path, O_RDWR)) < 0)
            throw TransportError("cannot open the issm device of " + port_.ca);
    }
    spdlog::info("umad: {} port {} LID {} SM LID {} GID {} (agents: SA {}{})", port_.ca, port_.port,
                 port_.lid, port_.sm_lid, port_.gid.str(), sa_agent_,
                 options.claim_issm ? ", SMP, IsSM" : "");
}

UmadTransport::~UmadTransport() {
    stopping_ = true;
    drain_pending_ = false;
    drain_pending_.notify_all();
    if (watcher_.joinable())
        watcher_.join();
    if (descriptor_) {
        boost::system::error_code ignored;
        descriptor_->cancel(ignored);
        descriptor_->release(); // the file is libibumad's to close
    }
    if (issm_fd_ >= 0)
        ::close(issm_fd_);
    if (fd_ >= 0)
        umad_close_port(fd_);
}

namespace {
// ib_umad marks the open file dead when its device goes away (driver unload, HCA reset): every
// read fails with EIO at once, forever, and the file never comes back (its poll says EPOLLERR,
// so each wait ends at once). A single EIO is not proof, a run of them is.
constexpr int kEioRunIsDeadDevice = 50;
// MADs read per wake-up at most: timers and other work get their turn in between.
constexpr int kMaxBatch = 64;
} // namespace

void UmadTransport::start() {
    recv_capacity_ = static_cast<int>(mad::kMadSize) * 8;
    recv_buf_.resize(umad_size() + static_cast<std::size_t>(recv_capacity_));
    inbound_.bytes.reserve(static_cast<std::size_t>(recv_capacity_));
    // A kernel file (fcntl knows it): the event loop waits on it. umad2sim's numbers are no
    // file of the process (fcntl, which it does not wrap, says EBADF).
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0 && ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) == 0) {
        boost::system::error_code ec;
        descriptor_.emplace(executor_);
        descriptor_->assign(fd_, ec);
        if (!ec) {
            wait_readable();
            return;
        }
        spdlog::warn("umad: the event loop cannot wait on {} ({}): a thread waits instead",
                     umad_device_path(fd_), ec.message());
        descriptor_.reset();
    }
    spdlog::debug("umad: fd {} is not a kernel file (umad2sim): a thread waits in poll()", fd_);
    watcher_ = std::thread([this] { watch_loop(); });
}

void UmadTransport::wait_readable() {
    // The descriptor is registered edge-triggered: a wait ends when a MAD arrives after it
    // began, so it may only begin once everything there has been read (drain() said so).
    descriptor_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                            [this](const boost::system::error_code& ec) {
                                if (ec != boost::asio::error::operation_aborted)
                                    drain_then([this] { wait_readable(); });
                            });
}

void UmadTransport::drain_then(std::function<void()> next) {
    if (drain()) {
        next();
        return;
    }
    // A full batch: the rest after whatever else is ready to run (timers, other handlers).
    boost::asio::post(executor_,
                      [this, next = std::move(next)]() mutable { drain_then(std::move(next)); });
}

void UmadTransport::watch_loop() {
    while (!stopping_) {
        // One batch at a time: poll() says readable until the loop has read what is there.
        drain_pending_.wait(true);
        if (stopping_)
            return;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0)
            continue;
        drain_pending_ = true;
        boost::asio::post(executor_, [this] {
            drain_then([this] {
                drain_pending_ = false;
                drain_pending_.notify_one();
            });
        });
    }
}

bool UmadTransport::drain() {
    for (int n = 0; n < kMaxBatch; ++n) {
        int len = recv_capacity_;
        const int agent = umad_recv(fd_, recv_buf_.data(), &len, 0);
        if (agent == -EIO) {
            // ib_umad's read says EIO only once the device is gone (no poll in umad_recv with
            // timeout 0); it says so again at once, which makes the run.
            if (++eio_run_ == kEioRunIsDeadDevice)
                // End the daemon (non-zero: the exception leaves io_context::run() in main),
                // so that the service manager starts a fresh one on the device once it is back.
                throw TransportError("umad device " + umad_device_path(fd_) +
                                     " went away (EIO): exiting so that the service manager "
                                     "restarts it");
            continue;
        }
        eio_run_ = 0;
        if (agent == -ENOSPC) {
            recv_capacity_ = len;
            recv_buf_.resize(umad_size() + static_cast<std::size_t>(recv_capacity_));
            continue;
        }
        if (agent == -EINTR)
            continue;
        // EAGAIN: all read (umad2sim says -EWOULDBLOCK, the same number, when its queue is
        // empty); anything else is no MAD either.
        if (agent < 0)
            return true;
        auto* umad = reinterpret_cast<ib_user_mad*>(recv_buf_.data());
        inbound_.status = umad_status(umad);
        inbound_.from = decode_umad_address(*umad_get_mad_addr(umad));
        const auto* data = static_cast<const std::uint8_t*>(umad_get_mad(umad));
        inbound_.bytes.assign(data, data + std::min(len, recv_capacity_));
        handler_(inbound_);
    }
    return false;
}

bool UmadTransport::send(mad::Bytes bytes, const MadAddress& to,
                         std::chrono::milliseconds response_timeout) {
    send_buf_.assign(umad_size() + bytes.size(), 0);
    auto* umad = reinterpret_cast<ib_user_mad*>(send_buf_.data());
    umad_set_addr(umad, to.lid, static_cast<int>(to.qpn), to.sl, static_cast<int>(to.qkey));
    umad_set_pkey(umad, to.pkey_index);
    if (to.has_grh) {
        ib_mad_addr grh{};
        grh.grh_present = 1;
        std::memcpy(grh.gid, to.gid.raw.data(), 16);
        grh.gid_index = to.gid_index;
        grh.hop_limit = to.hop_limit;
        grh.traffic_class = to.traffic_class;
        grh.flow_label = htonl(to.flow_label);
        umad_set_grh(umad, &grh);
    }
    std::memcpy(umad_get_mad(umad), bytes.data(), bytes.size());
    int agent = sa_agent_;
    if (bytes[1] == mad::mgmt_class::kSubnLid)
        agent = smp_lid_agent_;
    else if (bytes[1] == mad::mgmt_class::kSubnDirected)
        agent = smp_dr_agent_;
    if (agent < 0)
        return false;
    const int rc = umad_send(fd_, agent, umad, static_cast<int>(bytes.size()),
                             static_cast<int>(response_timeout.count()), 0);
    if (rc < 0) {
        spdlog::warn("umad_send to LID {} failed: {}", to.lid, std::strerror(-rc));
        return false;
    }
    return true;
}

const PortState& UmadTransport::refresh_port(PortRead what) {
    auto reading = what == PortRead::kWithPkeys ? read_umad_port_with_cap_mask(port_.ca, port_.port)
                                                : read_port_attributes(port_.ca, port_.port);
    if (what == PortRead::kAttributes)
        reading.port.pkeys = std::move(port_.pkeys);
    port_ = std::move(reading.port);
    if (watch_for_sm_) {
        // An SM started on this port after localsad: its SA cannot register the SA methods
        // localsad holds (OpenSM then stops). Said once per appearance.
        const bool sm = reading.cap_mask & kCapIsSm;
        if (sm && !sm_on_port_)
            spdlog::error("a subnet manager started on {} port {} (IsSM set in its "
                          "CapabilityMask): its SA cannot register the SA methods localsad "
                          "holds; stop localsad on this node if the SM is to serve here",
                          port_.ca, port_.port);
        else if (!sm && sm_on_port_)
            spdlog::info("the subnet manager on {} port {} is gone (IsSM clear)", port_.ca,
                         port_.port);
        sm_on_port_ = sm;
    }
    return port_;
}

} // namespace localsa::transport
