// simhca-relay: connects one simhca device (/dev/simhcaN) to one node of an ibsim fabric.
#include "relay.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <sys/signalfd.h>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
    namespace po = boost::program_options;
    simhca_relay::Options opts;
    std::string level;
    po::options_description desc(
        "Usage: simhca-relay --device /dev/simhcaN --node NODE [options]\n"
        "Bridges a simhca soft HCA to an ibsim node: takes the node's SM slot in ibsim, relays\n"
        "every MAD between the kernel MAD layer and the fabric, and mirrors the port's\n"
        "attributes (LID, LMC, SM LID/SL, state, GID prefix, GUIDs, PKeys, CapabilityMask)\n"
        "from ibsim into the driver, which raises the matching port events.\n\nOptions");
    desc.add_options()("help,h", "this help")("device,d", po::value(&opts.device)->required(),
                                              "simhca character device")(
        "node,n", po::value(&opts.node)->required(), "ibsim node name (e.g. H1)")(
        "sim-socket",
        po::value(&opts.sim_basename)
            ->default_value(std::getenv("IBSIM_SOCKNAME") ? std::getenv("IBSIM_SOCKNAME") : "sim"),
        "ibsim socket name space (IBSIM_SOCKNAME)")(
        "poll-ms", po::value(&opts.poll_ms)->default_value(100), "PortInfo mirror period")(
        "connect-timeout-ms", po::value(&opts.connect_timeout_ms)->default_value(10000),
        "how long to wait for ibsim")(
        "drop-rate", po::value(&opts.drop_rate)->default_value(0.0),
        "loss injection: drop this share (0..1) of the GMPs (every class but the SMP classes\n"
        "0x01/0x81: SA, CM, ...) in each direction, to the fabric and to the kernel")(
        "drop-seed", po::value(&opts.drop_seed)->default_value(1), "seed of the loss injection")(
        "drop-rate-file", po::value(&opts.drop_rate_file),
        "read the drop rate from this file every poll period (tests change it at run time)")(
        "sa-delay-ms", po::value(&opts.sa_delay_ms)->default_value(0),
        "a slow master: hold every SA answer (class 0x03 response) on its way to the kernel\n"
        "this long (ms)")("sa-delay-file", po::value(&opts.sa_delay_file),
                          "read the SA answer delay (ms) from this file every poll period")(
        "counters-file", po::value(&opts.counters_file),
        "write the relay's counters (MADs each way, SA requests to the fabric) to this file\n"
        "every poll period")("log-level", po::value(&level)->default_value("info"),
                             "trace, debug, info, warn, error");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, desc), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
        if (opts.drop_rate < 0.0 || opts.drop_rate > 1.0)
            throw std::invalid_argument("--drop-rate must be between 0 and 1");
        if (opts.sa_delay_ms < 0)
            throw std::invalid_argument("--sa-delay-ms must not be negative");
    } catch (const std::exception& e) {
        std::cerr << "simhca-relay: " << e.what() << "\n" << desc << "\n";
        return 2;
    }
    spdlog::set_level(spdlog::level::from_str(level));
    spdlog::set_pattern("%H:%M:%S.%e simhca-relay[%P] %l: %v");

    // SIGINT and SIGTERM arrive as a readable signalfd the relay polls with its other sockets.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
    const int stop_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
    if (stop_fd < 0) {
        spdlog::error("signalfd: {}", std::strerror(errno));
        return 1;
    }
    try {
        simhca_relay::Relay relay(opts);
        relay.run(stop_fd);
        const auto& c = relay.counters();
        spdlog::info(
            "stopped: {} MADs to the fabric, {} to the kernel, {} undeliverable, {} port updates "
            "({} port reads late), {} + {} dropped by loss injection, {} SA answers delayed, "
            "{} waited for ibsim (queue up to {}, {} dropped when full)",
            c.to_fabric, c.to_kernel, c.undeliverable, c.port_updates, c.port_reads_late,
            c.dropped_to_fabric, c.dropped_to_kernel, c.delayed_to_kernel, c.to_fabric_waited,
            c.to_fabric_queue_max, c.to_fabric_overflow);
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    return 0;
}
