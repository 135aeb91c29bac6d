#include "daemon/privileges.hpp"

#include <cerrno>
#include <cstring>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace localsa {

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw PrivilegeError("cannot drop privileges: " + what + ": " + std::strerror(errno));
}

struct Account {
    uid_t uid;
    gid_t gid;
};

Account look_up(const std::string& user) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    const int rc = ::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
    if (rc != 0 || !found) {
        errno = rc ? rc : ENOENT;
        fail("no user '" + user + "'");
    }
    return {found->pw_uid, found->pw_gid};
}

bool capability_sets_empty() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0)
        return false;
    for (const auto& d : data)
        if (d.effective || d.permitted || d.inheritable)
            return false;
    return true;
}

} // namespace

std::string drop_privileges(const std::string& user) {
    // Resolve the account first: NSS may need files this process cannot open afterwards.
    const auto account = user.empty() ? Account{::getuid(), ::getgid()} : look_up(user);

    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail("PR_SET_NO_NEW_PRIVS");
    // The bounding set needs CAP_SETPCAP, so it goes before the capabilities themselves. A
    // process started without capabilities cannot change it, and with no_new_privs set it can
    // never gain what the bounding set still allows.
    const bool had_capabilities = !capability_sets_empty();
    bool bounding_emptied = had_capabilities;
    for (int cap = 0; bounding_emptied && cap <= 63; ++cap) {
        if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1 ||
            ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
            continue;
        if (errno != EPERM)
            fail("PR_CAPBSET_DROP " + std::to_string(cap));
        bounding_emptied = false; // started without CAP_SETPCAP: no_new_privs covers it
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        fail("PR_CAP_AMBIENT_CLEAR_ALL");

    if (!user.empty()) {
        if (::setgroups(0, nullptr) != 0)
            fail("setgroups");
        if (::setresgid(account.gid, account.gid, account.gid) != 0)
            fail("setresgid " + std::to_string(account.gid));
        if (::setresuid(account.uid, account.uid, account.uid) != 0)
            fail("setresuid " + std::to_string(account.uid));
    }
    // Also as root: uid 0 without capabilities keeps only the rights of a file's owner.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capset, &header, data) != 0)
        fail("capset");
    if (!capability_sets_empty()) {
        errno = EPERM;
        fail("capabilities still present after capset");
    }
    return std::string(bounding_emptied ? "no capabilities (bounding set empty, no_new_privs)"
                                        : "no capabilities (bounding set kept: no CAP_SETPCAP; "
                                          "no_new_privs)") +
           ", uid " + std::to_string(::getuid()) + " gid " + std::to_string(::getgid());
}

} // namespace localsa
