// localsad's command line and configuration file (the same option names in both).
#pragma once

#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace localsa {

struct DaemonOptions {
    std::string ca;
    int port = 1;
    std::string control; // empty: /run/localsa/<ca>-<port>.sock
    std::string config_file;
    std::string log_level = "info";
    bool foreground = false;
    bool sim_preload = false; // preload under ibsim too (tests)
    // ibsim only: claim IsSM and answer SMInfo ("auto": when running under umad2sim).
    std::string sim = "auto";
    bool under_sim = false; // `sim` resolved: on, or auto under umad2sim
    // After opening the devices: switch to this user (empty: stay, capabilities dropped anyway).
    std::string user;
    // Prometheus endpoint, "[ADDR:]PORT" (empty: none; a bare port listens on 127.0.0.1).
    std::string metrics_listen;
    // Answer the kernel's netlink local path service (RDMA_NL_LS) for this port.
    bool netlink = true;
    // Where the warm set is kept, as <dir>/<ca>-<port>.warm (empty: not kept).
    std::string state_dir = "/var/lib/localsa";
    LocalSaConfig local_sa;
    coherence::CoherenceConfig coherence;
};

class UsageError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What to do after parsing: run with the options, or print `text` (help, version) and exit 0.
struct ParsedCommandLine {
    std::optional<DaemonOptions> options;
    std::string text;
};

// Throws UsageError with a message naming the bad option or value.
// The file read when --config is not given and it exists (the build's sysconfdir).
const char* default_config_file();

ParsedCommandLine parse_command_line(int argc, const char* const argv[]);

} // namespace localsa
