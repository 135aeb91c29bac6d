// localsad: the local SA daemon for one HCA port.
#include "control/client.hpp"
#include "daemon/cache_dump.hpp"
#include "daemon/control_server.hpp"
#include "daemon/kernel_redirect.hpp"
#include "daemon/metrics.hpp"
#include "daemon/metrics_server.hpp"
#include "daemon/options.hpp"
#include "daemon/privileges.hpp"
#include "daemon/reload.hpp"
#include "daemon/service_notifier.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "engine/netlink/local_service.hpp"
#include "ib/mad.hpp"
#include "transport/netlink/ls_socket.hpp"
#include "transport/sim/sim_quirks.hpp"
#include "transport/umad/umad_transport.hpp"
#include "transport/verbs/verbs_port_events.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#ifdef LOCALSA_HAVE_SYSTEMD
#include <spdlog/sinks/systemd_sink.h>
#endif
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

using namespace localsa;

namespace {

// Exit status when a subnet manager runs on the port: the unit does not restart on it
// (RestartPreventExitStatus), restarting would not help.
constexpr int kExitPortHasSm = 3;

// True when stderr is the journal's stream (systemd sets JOURNAL_STREAM to its device:inode).
bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    struct stat st {};
    if (!stream || ::fstat(STDERR_FILENO, &st) != 0)
        return false;
    unsigned long long dev = 0, ino = 0;
    return std::sscanf(stream, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev &&
           ino == st.st_ino;
}

void setup_logging(const DaemonOptions& o) {
    std::shared_ptr<spdlog::logger> logger;
    bool plain = !o.foreground; // syslog and the journal stamp time and level themselves
#ifdef LOCALSA_HAVE_SYSTEMD
    // Under systemd: straight to the journal, each line with its priority.
    if (o.foreground && stderr_is_journal()) {
        logger = spdlog::systemd_logger_mt("localsad", "localsad");
        plain = true;
    }
#endif
    if (!logger)
        logger = o.foreground
                     ? spdlog::stderr_color_mt("localsad")
                     : spdlog::syslog_logger_mt("localsad", "localsad", LOG_PID, LOG_DAEMON);
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(o.log_level));
    spdlog::set_pattern(plain ? "%v" : "%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
}

void reload_configuration(const std::vector<std::string>& args, DaemonOptions& running,
                          LocalSa& local_sa, coherence::Coherence& coherence) {
    // The command line again: it names the file, or the default one is read if it exists now
    // (as `--check-config`, which the unit's reload runs first, reads it).
    std::vector<const char*> argv;
    for (const auto& a : args)
        argv.push_back(a.c_str());
    ParsedCommandLine parsed;
    try {
        parsed = parse_command_line(static_cast<int>(argv.size()), argv.data());
    } catch (const UsageError& e) {
        spdlog::error("SIGHUP: configuration {} not reloaded, the running configuration stays: {}",
                      running.config_file.empty() ? default_config_file() : running.config_file,
                      e.what());
        return;
    }
    if (!parsed.options)
        return;
    if (parsed.options->config_file.empty()) {
        spdlog::warn("SIGHUP: no configuration file (no --config, and {} does not exist): "
                     "nothing to reload",
                     default_config_file());
        return;
    }
    running.config_file = parsed.options->config_file;
    const auto outcome = apply_reload(running, *parsed.options, local_sa, coherence);
    for (const auto& change : outcome.applied)
        spdlog::info("SIGHUP: {}", change);
    for (const auto& change : outcome.need_restart)
        spdlog::warn("SIGHUP: {} changed but applies only at start (kept until restart)", change);
    spdlog::info("SIGHUP: configuration {} reloaded ({} changes applied, cache kept with {} "
                 "entries)",
                 running.config_file, outcome.applied.size(), local_sa.cache().size());
}

} // namespace

int main(int argc, char** argv) {
    ParsedCommandLine parsed;
    try {
        parsed = parse_command_line(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "localsad: " << e.what() << "\nTry 'localsad --help'.\n";
        return 2;
    }
    if (!parsed.options) {
        std::cout << parsed.text;
        return 0;
    }
    // The options as parsed; SIGHUP parses the same command line (and --config) again.
    const std::vector<std::string> args(argv, argv + argc);
    auto o = *parsed.options;
    if (!o.foreground && ::daemon(0, 0) != 0) {
        std::cerr << "localsad: cannot detach: " << std::strerror(errno) << "\n";
        return 1;
    }
    setup_logging(o);

    try {
        boost::asio::io_context io;
        SteadyClock clock; // the engine's time: real time
        std::unique_ptr<LocalSa> local_sa;
        transport::UmadOptions topt;
        topt.ca = o.ca;
        topt.port = o.port;
        topt.claim_issm = o.under_sim;
        const transport::InboundHandler to_local_sa = [&](const transport::InboundMad& in) {
            local_sa->dispatch(in);
        };
        // Under ibsim its MAD layer's quirks are absorbed in front of the dispatcher.
        std::unique_ptr<transport::sim::SimQuirks> sim_quirks;
        auto inbound = to_local_sa;
        if (o.under_sim)
            inbound = [&](const transport::InboundMad& in) { (*sim_quirks)(in); };
        transport::UmadTransport umad(topt, io.get_executor(), inbound);
        if (o.under_sim)
            sim_quirks = std::make_unique<transport::sim::SimQuirks>(umad, to_local_sa);
        // The kernel's netlink path queries enter the local SA as its own port's Gets; their
        // answers come back through this transport (it wraps umad).
        netlink::LocalServiceConfig nl_config;
        nl_config.answer_budget = o.local_sa.upstream.patience();
        netlink::LocalService netlink_service(io.get_executor(), clock, umad, nl_config);
        local_sa = std::make_unique<LocalSa>(io.get_executor(), clock, netlink_service, o.local_sa);
        // The port's events, so that it is read when it changes rather than polled often.
        // Opened before privileges drop; there is no verbs device under ibsim's umad2sim.
        std::unique_ptr<transport::VerbsPortEvents> port_events;
        try {
            port_events = std::make_unique<transport::VerbsPortEvents>(
                io.get_executor(), umad.port().ca, umad.port().port);
        } catch (const transport::VerbsUnavailable& e) {
            spdlog::info("port events: {}: the port is polled instead", e.what());
        }
        // The warm set's file is the port's: known once the port is (--ca may be empty).
        if (!o.state_dir.empty() && o.coherence.warm_set_max > 0)
            o.coherence.warm_file =
                std::filesystem::path(o.state_dir) /
                (umad.port().ca + "-" + std::to_string(umad.port().port) + ".warm");
        auto coherence_parts = local_sa->coherence_parts();
        coherence_parts.port_events = port_events.get();
        coherence::Coherence coherence(io.get_executor(), coherence_parts, o.coherence);

        const auto port = umad.port();
        // Joined before privileges drop (CAP_NET_ADMIN); without it the kernel asks the SA.
        std::unique_ptr<netlink::LsSocket> nl_socket;
        std::size_t nl_other_listeners = 0;
        boost::asio::steady_timer listener_check(io);
        if (o.netlink) {
            try {
                nl_socket = std::make_unique<netlink::LsSocket>(io.get_executor());
            } catch (const netlink::SocketError& e) {
                spdlog::warn("netlink local path service not answered: {}", e.what());
            }
        }
        const auto control_path =
            o.control.empty() ? control::default_socket_path(port.ca, port.port) : o.control;
        // Opened now: debugfs is root's, privileges drop below.
        KernelRedirectFile kernel_redirect(kernel_redirect_path(port.ca),
                                           static_cast<unsigned>(port.port));
        // The counters and gauges, for the control socket and the metrics endpoint.
        const auto full_stats = [&] {
            auto j = local_sa->stats();
            coherence.add_stats(j);
            j["master_known"] = local_sa->class_port_info().master().has_value();
            if (sim_quirks) {
                j["sminfo_answered"] = sim_quirks->sminfo_answered();
                j["short_requests_padded"] = sim_quirks->requests_padded();
            }
            j["nl_listening"] = nl_socket != nullptr;
            j["nl_other_listeners"] = nl_other_listeners;
            j["nl_pending"] = netlink_service.pending();
            if (const auto k = kernel_redirect.read())
                j["kernel_redirect"] = k->to_json();
            return j;
        };
        control::ControlServer control(
            io, control_path,
            [&](const nlohmann::json& req) {
                const auto cmd = req.value("cmd", "");
                if (cmd == "stats") {
                    auto j = full_stats();
                    if (req.value("format", "json") == "prometheus")
                        return nlohmann::json{{"prometheus", prometheus_text(j)}};
                    return j;
                }
                if (cmd == "flush") {
                    const auto n = local_sa->flush();
                    spdlog::info("cache flushed on request ({} entries)", n);
                    return nlohmann::json{{"flushed", n}};
                }
                return nlohmann::json{{"error", "unknown command '" + cmd + "'"}};
            },
            [&](const nlohmann::json& req) -> std::unique_ptr<control::ReplyStream> {
                // In slices between MADs: a whole dump holds the loop for seconds.
                if (req.value("cmd", "") == "dump")
                    return cache_dump_stream(local_sa->cache(), clock);
                return nullptr;
            });

        ServiceNotifier notifier(
            io.get_executor(), [&] { return local_sa->class_port_info().master().has_value(); },
            [&] { return coherence.class_port_info_deferred(); }, [&] { return local_sa->stats(); },
            ServiceNotifier::Config{});

        // Bound before privileges drop (a port below 1024 needs them).
        std::unique_ptr<MetricsServer> metrics;
        if (!o.metrics_listen.empty()) {
            metrics =
                std::make_unique<MetricsServer>(io, MetricsServer::parse_listen(o.metrics_listen),
                                                [&] { return prometheus_text(full_stats()); });
            spdlog::info("metrics: GET http://{}/metrics", o.metrics_listen);
        }

        boost::asio::signal_set stop(io, SIGINT, SIGTERM);
        stop.async_wait([&](auto, int sig) {
            spdlog::info("signal {}: shutting down", sig);
            notifier.stopping();
            listener_check.cancel();
            coherence.shutdown([&] { io.stop(); });
        });
        std::signal(SIGPIPE, SIG_IGN);

        boost::asio::signal_set hangup(io, SIGHUP);
        std::function<void()> await_hangup = [&] {
            hangup.async_wait([&](auto ec, int) {
                if (ec)
                    return;
                notifier.reloading();
                reload_configuration(args, o, *local_sa, coherence);
                notifier.reloaded();
                await_hangup();
            });
        };
        await_hangup();

        // Everything that needs privileges is open: the umad and issm devices, the control
        // socket. Before any thread starts (capabilities are per thread).
        if (!o.coherence.warm_file.empty())
            if (const auto why = hand_over_directory(o.state_dir, o.user); !why.empty())
                spdlog::warn("warm set: {}; it may not be kept", why);
        spdlog::info("privileges dropped: {}", drop_privileges(o.user, nl_socket != nullptr));

        // Another listener on RDMA_NL_GROUP_LS (ibacm) answers the same RESOLVEs; the kernel
        // takes whichever reply comes first. Said at start and whenever the number changes.
        std::function<void()> check_listeners = [&] {
            const auto n = netlink::other_ls_listeners(nl_socket->port_id());
            if (n != nl_other_listeners) {
                if (n)
                    spdlog::warn("netlink: {} other listener(s) on RDMA_NL_GROUP_LS (ibacm?) "
                                 "answer the kernel's path queries too; the kernel takes the "
                                 "first reply: stop ibacm or run localsad with --netlink off",
                                 n);
                else
                    spdlog::info("netlink: localsad is the only listener on RDMA_NL_GROUP_LS");
            }
            nl_other_listeners = n;
            listener_check.expires_after(std::chrono::seconds{10});
            listener_check.async_wait([&](auto ec) {
                if (!ec)
                    check_listeners();
            });
        };
        if (nl_socket) {
            netlink_service.connect(
                [&](netlink::Bytes m) { return nl_socket->send(m); },
                [&](const transport::InboundMad& in) { local_sa->dispatch(in); },
                [](const std::string& device, int p) {
                    // The local SA of that port listens on its control socket where
                    // localsactl looks for it.
                    return netlink::unix_socket_listening(control::default_socket_path(device, p));
                },
                local_sa->counters());
            nl_socket->start([&](const netlink::Message& m) { netlink_service.on_message(m); },
                             [&](const char* why) {
                                 ++local_sa->counters().nl_malformed;
                                 spdlog::warn("netlink: {}", why);
                             });
            if (!netlink_service.send_set_timeout())
                spdlog::warn("netlink: SET_TIMEOUT refused: {}", std::strerror(errno));
            nl_other_listeners = 0;
            check_listeners();
            spdlog::info("netlink: answering the kernel's path queries for {} port {} "
                         "(RDMA_NL_GROUP_LS, answer budget {} ms, receive buffer {} KiB)",
                         port.ca, port.port, nl_config.answer_budget.count(),
                         nl_socket->receive_buffer() / 1024);
        }

        umad.start();
        coherence.start();
        if (!coherence.class_port_info_deferred())
            local_sa->start(); // the master's ClassPortInfo now, unless the start's spread reads it
        notifier.start();
        spdlog::info("localsad {} serving {} port {} (LID {}), master SA at LID {}, control {}",
                     LOCALSA_VERSION, port.ca, port.port, port.lid, port.sm_lid, control_path);
        io.run();
    } catch (const transport::PortHasSmError& e) {
        spdlog::critical("{}", e.what());
        return kExitPortHasSm;
    } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
    return 0;
}
