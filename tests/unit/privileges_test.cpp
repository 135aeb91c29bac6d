// drop_privileges keeping CAP_NET_ADMIN for the netlink local path service, in a child process
// (capabilities are per process: the test runner keeps its own). Needs root.
#include "daemon/privileges.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string status_line(const std::string& key) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + ":", 0) == 0)
            return line.substr(line.find_first_not_of(" \t", key.size() + 1));
    return {};
}

// Runs drop_privileges(user, keep) in a child; its exit status says which check failed.
int child_status(const std::string& user, bool keep) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        try {
            localsa::drop_privileges(user, keep);
        } catch (...) {
            ::_exit(10);
        }
        const std::string kept = keep ? "0000000000001000" : "0000000000000000";
        if (status_line("CapEff") != kept)
            ::_exit(11);
        if (status_line("CapPrm") != kept)
            ::_exit(12);
        if (status_line("CapBnd") != kept)
            ::_exit(13);
        if (status_line("CapInh") != "0000000000000000" ||
            status_line("CapAmb") != "0000000000000000")
            ::_exit(14);
        if (!user.empty() && ::getuid() == 0)
            ::_exit(15);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

TEST_CASE("privileges: CAP_NET_ADMIN alone is kept for the netlink service", "[privileges]") {
    if (::geteuid() != 0) {
        WARN("not root: skipped");
        return;
    }
    CHECK(child_status("", false) == 0);
    CHECK(child_status("", true) == 0);
    CHECK(child_status("nobody", true) == 0); // across the change of user (PR_SET_KEEPCAPS)
    CHECK(child_status("nobody", false) == 0);
}
