#!/usr/bin/env bash
# Minimal qemu boot for vm tests that need no fabric: boots the Debian kernel of a line
# (from scripts/kernel's cache) under TCG with a busybox initramfs, mounts the host's
# root read-only over 9p, and runs SCRIPT with bash in it (chroot; /tmp, /run and
# /var/tmp are tmpfs, /sys/kernel/debug is mounted). SCRIPT runs from a copy, in the
# current directory.
#   tests/vm/lib/qemu_boot.sh LINE SCRIPT [NAME=VALUE...]
# The NAME=VALUE pairs are exported to SCRIPT. Exits with SCRIPT's status, 125 if the
# guest did not get to run it, 124 on timeout (VM_TIMEOUT seconds, default 600).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
LINE=${1:?LINE}
SCRIPT=$(realpath "${2:?SCRIPT}")
shift 2
CACHE=${LOCALSA_CACHE:-/var/cache/localsa}
ENVF="$CACHE/kernel/$LINE/kernel.env"
[[ -f "$ENVF" ]] || bash "$ROOT/scripts/kernel" fetch --kernel "$LINE" >&2
# shellcheck disable=SC1090
. "$ENVF"
for t in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static cpio:cpio xz:xz-utils; do
    command -v "${t%%:*}" >/dev/null || { apt-get install -y -qq "${t#*:}" >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq "${t#*:}" >/dev/null; }; }
done

WORK=$(mktemp -d /tmp/vmboot.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/initrd"/{bin,dev,proc,sys,host,mod}
cp "$(command -v busybox)" "$WORK/initrd/bin/busybox"
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
    netfs fscache 9pnet 9pnet_virtio 9p; do
    f=$(find "$KERNEL_MODULES/kernel" -name "$m.ko" -o -name "$m.ko.xz" | head -n1)
    [[ -n "$f" ]] || continue # built in on this line
    case "$f" in
        *.xz) xz -dc "$f" >"$WORK/initrd/mod/$m.ko" ;;
        *) cp "$f" "$WORK/initrd/mod/$m.ko" ;;
    esac
    echo "$m" >>"$WORK/initrd/mod/order"
done
{
    echo "set -a"
    for kv in "$@"; do printf '%q\n' "$kv"; done
    echo "set +a"
    printf 'cd %q\n' "$PWD"
    echo 'bash /tmp/vmboot/script.sh'
} >"$WORK/run.sh"
cp "$SCRIPT" "$WORK/script.sh" # the guest's /tmp is its own: run a copy
cat >"$WORK/initrd/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in \$(cat /mod/order); do insmod /mod/\$m.ko || echo "vmboot: insmod \$m failed"; done
rc=125
if mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host; then
    mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
    mount -t debugfs none /host/sys/kernel/debug
    mkdir -p /vmboot; mount --bind /host$WORK /vmboot
    mkdir -p /vmcwd; mount --bind /host$PWD /vmcwd
    for d in tmp run var/tmp; do mount -t tmpfs tmpfs /host/\$d; done
    mkdir -p /host/tmp/vmboot; mount --bind /vmboot /host/tmp/vmboot
    # a checkout under /tmp, /run or /var/tmp is hidden by those tmpfs: put it back
    mkdir -p /host$PWD; mount --bind /vmcwd /host$PWD
    chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
        /bin/bash /tmp/vmboot/run.sh
    rc=\$?
fi
echo "VMBOOT-EXIT \$rc"
poweroff -f
INIT
chmod +x "$WORK/initrd/init"
(cd "$WORK/initrd" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initrd.gz"

set +e
timeout "${VM_TIMEOUT:-600}" qemu-system-x86_64 -m 1024 -smp 1 -nographic -no-reboot \
    -kernel "$KERNEL_VMLINUZ" -initrd "$WORK/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 loglevel=4" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -nic none </dev/null | tee "$WORK/console.log" | tr -d '\r'
qrc=${PIPESTATUS[0]}
set -e
((qrc == 124)) && { echo "vmboot: timeout" >&2; exit 124; }
rc=$(tr -d '\r' <"$WORK/console.log" | sed -n 's/^VMBOOT-EXIT \([0-9]*\)$/\1/p' | tail -n1)
[[ -n "$rc" ]] || { echo "vmboot: the guest did not run the script (qemu status $qrc)" >&2; exit 125; }
exit "$rc"
