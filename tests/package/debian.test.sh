#!/usr/bin/env bash
# The Debian packages, built, linted, installed and used as an administrator would:
#   1. dpkg-buildpackage builds localsa, localsa-ib-core-dkms and localsa-opensm-plugin from a
#      copy of the tree (BUILD_TESTING=OFF inside debian/rules);
#   2. lintian passes (errors and warnings fail; overrides live in debian/ with their reasons);
#   3. the versions of debian/changelog, CMakeLists.txt and dkms.conf agree;
#   4. both packages install with apt (dpkg -i semantics, dependencies from the archive or the
#      kernel cache), the files land where they should: conffile, units, udev rule, the
#      localsa account, the service enabled but not started (as ibacm), the DKMS tree;
#   5. DKMS builds ib_core with sa_redirect for the cached Debian 6.1 kernel and refuses a kernel
#      line it has no series for, naming the supported ones;
#   6. the real OpenSM, on a two-host ibsim fabric, loads the installed plugin by name;
#   7. the packages purge cleanly.
# Needs root (installs packages). The DKMS build needs the 6.1 kernel cache of scripts/vm
# prepare; without it that step is skipped and said so.
#   tests/package/debian.test.sh [SOURCE_DIR]
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
work=$(mktemp -d /var/tmp/localsa-package.XXXXXX)
cache=${LOCALSA_CACHE:-/var/cache/localsa}
installed=()
cleanup() {
    if ((${#installed[@]})); then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${installed[@]}" >/dev/null 2>&1 || true
    fi
    [[ ! -d $work/fabric ]] || "$src/scripts/fabric" down --dir "$work/fabric" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "package: FAIL: $*" >&2; exit 1; }
step() { echo "package: $*"; }

[[ $(id -u) == 0 ]] || { echo "package: needs root (it installs the packages)"; exit 77; }

# 1. Build from a copy holding exactly the tracked and new files (no build trees).
mkdir -p "$work/localsa"
(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
    tar -C "$work/localsa" -xf -
step "dpkg-buildpackage (log: $work/build.log)"
if ! (cd "$work/localsa" &&
    DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
    tail -40 "$work/build.log" >&2
    fail "dpkg-buildpackage failed"
fi
version=$(cd "$work/localsa" && dpkg-parsechangelog -SVersion)
deb=$work/localsa_${version}_$(dpkg --print-architecture).deb
dkms_deb=$work/localsa-ib-core-dkms_${version}_all.deb
plugin_deb=$work/localsa-opensm-plugin_${version}_$(dpkg --print-architecture).deb
[[ -f $deb && -f $dkms_deb && -f $plugin_deb ]] || fail "expected $deb, $dkms_deb and $plugin_deb"
# The package build configures without the test tree: no test binaries, no simulators.
if grep -qE 'catch2|Catch2|benchmark|localsa-fleet|simhca-relay' <(dpkg-deb -c "$deb"); then
    fail "the package holds test programs"
fi

# 2. lintian
step "lintian"
changes=$(ls "$work"/localsa_"${version}"_*.changes)
if ! lintian --fail-on error,warning --suppress-tags-from-file /dev/null "$changes" >"$work/lintian.log" 2>&1; then
    cat "$work/lintian.log" >&2
    fail "lintian"
fi
sed 's/^/  /' "$work/lintian.log"

# 3. One version everywhere.
cmake_version=$(sed -n 's/^project(localsa VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
dkms_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$src/kernel/ib_core/dkms.conf")
[[ $version == "$cmake_version" ]] || fail "debian/changelog $version != CMakeLists.txt $cmake_version"
[[ $version == "$dkms_version" ]] || fail "debian/changelog $version != dkms.conf $dkms_version"

# 4. Install. The DKMS package wants linux-source of a supported line: take the cached one.
source_debs=("$cache"/kernel/6.1/debs/linux-source-6.1_*.deb)
[[ -f ${source_debs[0]} ]] || source_debs=()
step "install"
installed=(localsa localsa-ib-core-dkms localsa-opensm-plugin)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "$deb" "$dkms_deb" "$plugin_deb" "${source_debs[@]}" >"$work/install.log" 2>&1 ||
    { tail -30 "$work/install.log" >&2; fail "apt-get install of the packages"; }

for f in /usr/sbin/localsad /usr/bin/localsactl; do
    [[ -x $f ]] || fail "$f missing"
done
/usr/sbin/localsad --version | grep -q "^localsad $version" || fail "installed localsad --version"
/usr/bin/localsactl --version | grep -q "^localsactl $version" || fail "installed localsactl --version"
for f in /lib/systemd/system/localsad@.service /lib/systemd/system/localsa.service \
    /lib/udev/rules.d/90-localsa.rules /usr/lib/sysusers.d/localsa.conf \
    /usr/libexec/localsa/start-on-all-ports /usr/share/man/man8/localsad.8.gz \
    /usr/share/doc/localsa/copyright /etc/localsa/localsad.conf \
    /usr/share/bash-completion/completions/localsactl; do
    [[ -e $f ]] || fail "$f missing"
done
dpkg-query -W -f='${Conffiles}\n' localsa | grep -q ' /etc/localsa/localsad.conf ' ||
    fail "/etc/localsa/localsad.conf is not a conffile"
getent passwd localsa >/dev/null || fail "no localsa account after installation"
# Enabled, not started: the enablement link exists, and no instance was asked for.
[[ -L /etc/systemd/system/multi-user.target.wants/localsa.service ]] ||
    fail "localsa.service is not enabled"
# The units as systemd reads them, and their sandboxing (systemd-analyze security: 0 is
# fully locked down, 10 fully exposed; the unit must stay in the "OK" band).
systemd-analyze verify --man=no /lib/systemd/system/localsa.service \
    /lib/systemd/system/localsad@.service || fail "systemd-analyze verify"
exposure=$(systemd-analyze security --offline=true /lib/systemd/system/localsad@.service 2>/dev/null |
    sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
[[ -n $exposure ]] || fail "systemd-analyze security gave no score"
step "localsad@.service exposure $exposure (systemd-analyze security)"
awk -v e="$exposure" 'BEGIN { exit !(e <= 3.5) }' || fail "localsad@.service exposure $exposure > 3.5"
# The installed default configuration is valid as shipped.
/usr/sbin/localsad --config /etc/localsa/localsad.conf --check-config >/dev/null ||
    fail "the shipped /etc/localsa/localsad.conf is refused by localsad --check-config"
# ... and read without --config: a setting made there is in effect.
echo 'negative-ttl-ms = 4321' >>/etc/localsa/localsad.conf
/usr/sbin/localsad --check-config | grep -qx 'negative-ttl-ms = 4321' ||
    fail "localsad does not read /etc/localsa/localsad.conf by default"
# The plugin: where OpenSM's dlopen("liblocalsaepoch.so") finds it, built for the installed
# OpenSM, which accepts it: OpenSM compares the version string the plugin carries with its own.
plugin=$(dpkg -L localsa-opensm-plugin | grep '/liblocalsaepoch\.so$' || true)
[[ -n $plugin && -f $plugin ]] || fail "liblocalsaepoch.so is not installed"
[[ $plugin == /usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/liblocalsaepoch.so ]] ||
    fail "liblocalsaepoch.so at $plugin, not in the linker's path"
step "OpenSM loads the plugin (ibsim fabric)"
# OpenSM loads it: the real OpenSM on a two-host ibsim fabric, its event plugin named as an
# admin names it (event_plugin_name localsaepoch), found by the dynamic linker.
fabric_dir=$work/fabric
(cd "$work" && LOCALSA_EPOCH_PLUGIN=$plugin "$src/scripts/fabric" up --dir "$fabric_dir" \
    --hosts 2 --timeout 60 >"$work/fabric.out" 2>&1) ||
    { cat "$work/fabric.out" >&2; fail "no fabric to load the plugin into"; }
grep -q "^event_plugin_name localsaepoch$" "$fabric_dir/opensm.conf" ||
    fail "the fabric did not name the plugin to OpenSM"
loaded=0
grep -q "localsa routing epoch plugin loaded" "$fabric_dir/osm.log" && loaded=1
"$src/scripts/fabric" down --dir "$fabric_dir" >/dev/null 2>&1 || true
((loaded)) || { tail -n 20 "$fabric_dir/osm.log" >&2; fail "OpenSM did not load liblocalsaepoch.so"; }
grep -aq "OpenSM $(dpkg-query -W -f='${Version}' opensm | sed 's/-.*//')" "$plugin" ||
    fail "liblocalsaepoch.so was not built against the installed OpenSM"
dkms status localsa-ib-core 2>/dev/null | grep -q "localsa-ib-core/$version" ||
    fail "dkms does not know localsa-ib-core/$version"
tree=/usr/src/localsa-ib-core-$version
for f in dkms.conf Makefile prepare-source patches/6.1 patches/6.12; do
    [[ -e $tree/$f ]] || fail "$tree/$f missing"
done

# 5. DKMS builds for a supported line, refuses another.
if [[ -f $cache/kernel/6.1/kernel.env && -n ${source_debs[*]} ]]; then
    # shellcheck disable=SC1091
    . "$cache/kernel/6.1/kernel.env"
    step "dkms build for $KERNEL_RELEASE (log: $work/dkms.log)"
    dkms build -m localsa-ib-core -v "$version" -k "$KERNEL_RELEASE" \
        --kernelsourcedir "$KERNEL_HEADERS" >"$work/dkms.log" 2>&1 ||
        { tail -30 "$work/dkms.log" >&2; fail "dkms build for $KERNEL_RELEASE"; }
    ko=$(find "/var/lib/dkms/localsa-ib-core/$version/$KERNEL_RELEASE" -name 'ib_core.ko*' | head -1)
    [[ -n $ko ]] || fail "dkms built no ib_core.ko"
    modinfo -F parm "$ko" | grep -q '^sa_redirect:' || fail "the DKMS ib_core has no sa_redirect"
    # A line without a series: the Makefile names the supported lines.
    out=$(make -C "$tree" KVER=6.5.0-1-amd64 KDIR=/nonexistent BUILD="$work/other" 2>&1) &&
        fail "the build for a 6.5 kernel did not fail"
    grep -q 'supported lines: 6.1 6.12' <<<"$out" || fail "no message naming the supported lines: $out"
    dkms remove -m localsa-ib-core -v "$version" -k "$KERNEL_RELEASE" >/dev/null 2>&1 || true
else
    step "dkms build skipped: no cached 6.1 kernel (scripts/vm prepare --kernel 6.1)"
fi

# 6. Purge.
step "purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq localsa localsa-ib-core-dkms localsa-opensm-plugin >"$work/purge.log" 2>&1 ||
    { tail -30 "$work/purge.log" >&2; fail "purge"; }
installed=()
[[ ! -e /usr/sbin/localsad && ! -e /etc/localsa/localsad.conf ]] || fail "files left after purge"
[[ ! -d $tree ]] || fail "$tree left after purge"
echo "package: localsa, localsa-ib-core-dkms and localsa-opensm-plugin $version built, lintian-clean, installed, DKMS-built, plugin loaded by OpenSM, purged"
