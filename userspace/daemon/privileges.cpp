#include "daemon/privileges.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <system_error>
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

// True when the capability sets hold `kept` (a CAP_* bit in the first word, or 0) and nothing
// else; `kept` only in the effective and permitted sets.
bool capability_sets_hold_only(std::uint32_t kept) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0)
        return false;
    return data[0].effective == kept && data[0].permitted == kept && !data[0].inheritable &&
           !data[1].effective && !data[1].permitted && !data[1].inheritable;
}

bool capability_sets_empty() {
    return capability_sets_hold_only(0);
}

} // namespace

std::string hand_over_directory(const std::string& dir, const std::string& user) {
    if (user.empty() || dir.empty() || ::geteuid() != 0)
        return {};
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return "cannot create " + dir + ": " + ec.message();
    Account account{};
    try {
        account = look_up(user);
    } catch (const PrivilegeError& e) {
        return e.what();
    }
    if (::chown(dir.c_str(), account.uid, account.gid) != 0)
        return "cannot give " + dir + " to " + user + ": " + std::strerror(errno);
    return {};
}

std::string drop_privileges(const std::string& user, bool keep_net_admin) {
    const int kept_cap = keep_net_admin ? CAP_NET_ADMIN : -1;
    const std::uint32_t kept_bits = keep_net_admin ? 1u << CAP_NET_ADMIN : 0;
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
        if (cap == kept_cap)
            continue;
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
        // The permitted set survives the change of uid only when asked (effective is cleared).
        if (keep_net_admin && ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
            fail("PR_SET_KEEPCAPS");
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
    data[0].effective = data[0].permitted = kept_bits;
    if (::syscall(SYS_capset, &header, data) != 0)
        fail(keep_net_admin ? "capset (keeping CAP_NET_ADMIN)" : "capset");
    if (keep_net_admin)
        ::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (!capability_sets_hold_only(kept_bits)) {
        errno = EPERM;
        fail("capabilities other than the kept ones present after capset");
    }
    const std::string kept = keep_net_admin ? "CAP_NET_ADMIN only" : "no capabilities";
    return kept +
           (bounding_emptied ? " (bounding set emptied of the rest, no_new_privs)"
                             : " (bounding set kept: no CAP_SETPCAP; no_new_privs)") +
           ", uid " + std::to_string(::getuid()) + " gid " + std::to_string(::getgid());
}

} // namespace localsa
