#include "transport/verbs/verbs_port_events.hpp"

#include <infiniband/verbs.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <utility>

namespace localsa::transport {

namespace {

struct FreeDeviceList {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

ibv_context* open_device(const std::string& ca) {
    int count = 0;
    const std::unique_ptr<ibv_device*, FreeDeviceList> list(ibv_get_device_list(&count));
    if (!list)
        throw VerbsUnavailable(std::string("no verbs devices (") + std::strerror(errno) +
                               "; is ib_uverbs loaded?)");
    for (int i = 0; i < count; ++i) {
        if (ca != ibv_get_device_name(list.get()[i]))
            continue;
        ibv_context* context = ibv_open_device(list.get()[i]);
        if (!context)
            throw VerbsUnavailable("cannot open verbs device " + ca + ": " + std::strerror(errno));
        return context;
    }
    throw VerbsUnavailable("no verbs device " + ca + " (" + std::to_string(count) +
                           " other verbs devices)");
}

// One event read from the device, acknowledged when it goes: ibv_close_device waits until
// every event read was acknowledged.
class AckedEvent {
public:
    explicit AckedEvent(const ibv_async_event& event) : event_(event) {}
    ~AckedEvent() { ibv_ack_async_event(&event_); }
    AckedEvent(const AckedEvent&) = delete;
    AckedEvent& operator=(const AckedEvent&) = delete;

    ibv_event_type type() const { return event_.event_type; }
    int port() const { return event_.element.port_num; }

private:
    ibv_async_event event_;
};

} // namespace

std::optional<PortEvent> port_event_of(int ibv_event_type) {
    switch (ibv_event_type) {
    case IBV_EVENT_PORT_ACTIVE:
        return PortEvent::kActive;
    case IBV_EVENT_PORT_ERR:
        return PortEvent::kError;
    case IBV_EVENT_LID_CHANGE:
        return PortEvent::kLidChange;
    case IBV_EVENT_PKEY_CHANGE:
        return PortEvent::kPkeyChange;
    case IBV_EVENT_SM_CHANGE:
        return PortEvent::kSmChange;
    case IBV_EVENT_CLIENT_REREGISTER:
        return PortEvent::kClientReregister;
    case IBV_EVENT_GID_CHANGE:
        return PortEvent::kGidChange;
    default:
        return std::nullopt;
    }
}

void VerbsPortEvents::CloseDevice::operator()(ibv_context* context) const {
    ibv_close_device(context);
}

VerbsPortEvents::VerbsPortEvents(boost::asio::any_io_executor executor, const std::string& ca,
                                 int port)
    : ca_(ca), port_(port), context_(open_device(ca)), descriptor_(executor) {
    // Non-blocking: the loop reads until the file is empty, ibv_get_async_event then fails
    // with EAGAIN instead of waiting.
    const int fd = context_->async_fd;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        throw VerbsUnavailable("cannot make the async event file of " + ca +
                               " non-blocking: " + std::strerror(errno));
    boost::system::error_code ec;
    descriptor_.assign(fd, ec);
    if (ec)
        throw VerbsUnavailable("the event loop cannot wait on the async event file of " + ca +
                               ": " + ec.message());
}

VerbsPortEvents::~VerbsPortEvents() {
    boost::system::error_code ignored;
    descriptor_.cancel(ignored);
    descriptor_.release(); // the file is the context's: ibv_close_device closes it
}

void VerbsPortEvents::start(EventsHandler on_events, LostHandler on_lost) {
    on_events_ = std::move(on_events);
    on_lost_ = std::move(on_lost);
    if (!lost_why_.empty()) {
        on_lost_(lost_why_);
        return;
    }
    running_ = true;
    // What came before start is dropped: the caller reads the port as it is now. The wait may
    // only begin on an empty file (the descriptor is edge-triggered).
    if (drain() == Drained::kLost) {
        running_ = false;
        on_lost_(lost_why_);
        return;
    }
    events_.clear();
    wait_readable();
}

void VerbsPortEvents::stop() {
    running_ = false;
    boost::system::error_code ignored;
    descriptor_.cancel(ignored);
}

void VerbsPortEvents::wait_readable() {
    descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [this](const boost::system::error_code& ec) {
                               if (ec == boost::asio::error::operation_aborted || !running_)
                                   return;
                               const auto drained = drain();
                               // Handed over as the batch's own: the handler may restart us.
                               if (const auto batch = std::exchange(events_, {}); !batch.empty())
                                   on_events_(batch);
                               if (drained == Drained::kLost) {
                                   running_ = false;
                                   on_lost_(lost_why_);
                                   return;
                               }
                               if (running_) // on_events_ may have stopped it
                                   wait_readable();
                           });
}

VerbsPortEvents::Drained VerbsPortEvents::drain() {
    events_.clear();
    ibv_async_event raw{};
    for (;;) {
        if (ibv_get_async_event(context_.get(), &raw) != 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return Drained::kAll;
            lost_why_ = "cannot read the async events of " + ca_ + ": " + std::strerror(errno);
            return Drained::kLost;
        }
        const AckedEvent event(raw);
        if (event.type() == IBV_EVENT_DEVICE_FATAL) {
            lost_why_ = "fatal error of verbs device " + ca_;
            return Drained::kLost;
        }
        const auto port_event = port_event_of(event.type());
        if (!port_event || event.port() != port_) {
            spdlog::debug("verbs {}: event {} not about port {}: ignored", ca_,
                          ibv_event_type_str(event.type()), port_);
            continue;
        }
        spdlog::debug("verbs {} port {}: {}", ca_, port_, port_event_name(*port_event));
        events_.push_back(*port_event);
    }
}

} // namespace localsa::transport
