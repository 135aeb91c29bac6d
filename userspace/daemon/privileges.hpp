// Dropping what localsad does not need once its devices and control socket are open.
#pragma once

#include <stdexcept>
#include <string>

namespace localsa {

class PrivilegeError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Call once, before any other thread starts (capabilities are per thread). Sets no_new_privs,
// empties the capability bounding set, the ambient, inheritable, permitted and effective sets,
// and, when `user` is not empty, switches to that user, its primary group and no supplementary
// groups. The open file descriptors (umad, issm, control socket) keep working: the kernel checks
// their permissions at open time. Returns a one-line description for the log. Throws
// PrivilegeError when a step fails (the daemon must not run with privileges it meant to shed).
// `keep_net_admin`: CAP_NET_ADMIN stays in the bounding, permitted and effective sets (and
// nothing else): the kernel checks it on every message sent to its netlink local path service
// (RDMA_NL_ADMIN_PERM, on the sending task), so answering that service needs it for good.
std::string drop_privileges(const std::string& user, bool keep_net_admin = false);

// Run as root before drop_privileges: creates `dir` if missing and gives it to `user`, who
// writes the warm set there afterwards (systemd's StateDirectory= makes it root's). Returns
// what failed ("" when done, or nothing to do: no user, no dir, not root).
std::string hand_over_directory(const std::string& dir, const std::string& user);

} // namespace localsa
