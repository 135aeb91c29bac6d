#!/usr/bin/env bash
# A staged install (DESTDIR) holds what an administrator needs, and the pieces agree: the
# binaries, the man page (rendered by man), the systemd unit naming the installed binary, docs.
#   tests/lint/install.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: tests/lint/install.sh BUILD_DIR}" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "install: $*" >&2; exit 1; }

DESTDIR=$stage cmake --install "$build" >/dev/null
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
root=$stage$prefix

for f in sbin/localsad bin/localsactl; do
    [[ -x $root/$f ]] || fail "$prefix/$f missing"
done
"$root/sbin/localsad" --version | grep -q '^localsad ' || fail "installed localsad --version"

unit=$root/lib/systemd/system/localsad@.service
[[ -f $unit ]] || fail "localsad@.service missing"
exe=$(sed -n 's/^ExecStart=.*exec \([^ ]*\) .*/\1/p' "$unit")
[[ -n $exe && -x $stage$exe ]] || fail "the unit starts '$exe', which the install does not hold"
grep -q '^Documentation=man:localsad(8)' "$unit" || fail "the unit names no man page"
grep -qx 'BindsTo=sys-subsystem-rdma-devices-%i-umad.device' "$unit" ||
    fail "the unit is not bound to its port's umad device"
umbrella=$root/lib/systemd/system/localsa.service
[[ -f $umbrella ]] || fail "localsa.service missing"
starter=$(sed -n 's/^ExecStart=//p' "$umbrella")
[[ -x $stage$starter ]] || fail "localsa.service starts '$starter', which the install does not hold"
[[ -f $root/lib/udev/rules.d/90-localsa.rules ]] || fail "90-localsa.rules missing"
# The instance name reaches localsad as --ca and --port. systemd expands specifiers (%i, %%) at
# load and ${NAME} at exec (an unset one to nothing, silently), so the shell's own ${...} must be
# written $${...}. Expanded as systemd would for localsad@mlx5_0-2, the command must give
# ca mlx5_0, port 2 (checked with --check-config, run from the stage). Instances are named
# CA:PORT, as rdma-core names ports (its umad device alias, srp_daemon_port@).
start=$(sed -n 's/^ExecStart=//p' "$unit")
if grep -qE '(^|[^$])\$\{' <<<"$start"; then
    fail "ExecStart holds a \${...} that systemd, not the shell, would expand: $start"
fi
start=$(sed -e 's/%i/mlx5_0:2/g' -e 's/%%/%/g' -e 's/\$\$/$/g' \
    -e "s|exec $exe |exec $stage$exe --check-config |" <<<"$start")
effective=$(eval "$start") || fail "the unit's command failed: $start"
grep -qx 'ca = mlx5_0' <<<"$effective" || fail "the unit does not pass --ca mlx5_0: $start"
grep -qx 'port = 2' <<<"$effective" || fail "the unit does not pass --port 2: $start"

conf=$stage$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt" | sed 's|^/usr$||')/etc/localsa/localsad.conf
[[ -f $conf ]] || fail "no default configuration file $conf"
for f in localsad.md localsad.conf.example; do
    [[ -f $root/share/doc/localsa/$f ]] || fail "share/doc/localsa/$f missing"
done

if command -v go-md2man >/dev/null; then
    man8=$root/share/man/man8
    [[ -f $man8/localsad.8 && -f $man8/localsactl.8 ]] || fail "man pages missing"
    if command -v man >/dev/null; then
        page=$(MANWIDTH=100 man -l "$man8/localsad.8" 2>/dev/null)
        grep -q '^NAME' <<<"$page" || fail "localsad(8) has no NAME section"
        grep -q 'localsad, localsactl' <<<"$page" || fail "localsad(8) NAME does not name both"
        for section in SYNOPSIS DESCRIPTION OPTIONS CONTROL 'SEE ALSO'; do
            grep -q "^$section" <<<"$page" || fail "localsad(8) has no $section section"
        done
    fi
fi
echo "install: $prefix: localsad, localsactl, localsad(8), localsad@.service, docs"
