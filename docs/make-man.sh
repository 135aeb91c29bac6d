#!/usr/bin/env bash
# Turn docs/localsad.md into the localsad(8) man page with go-md2man.
#   docs/make-man.sh IN.md OUT.8 VERSION
# The markdown's title line ("# localsad(8) — ...") becomes the NAME section; internal links
# keep their text only.
set -euo pipefail
in=${1:?usage: make-man.sh IN.md OUT.8 VERSION}
out=${2:?usage: make-man.sh IN.md OUT.8 VERSION}
version=${3:?usage: make-man.sh IN.md OUT.8 VERSION}
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$in")}" '+%B %Y')
{
    printf '%% LOCALSAD 8 "%s" "localsa %s" "System Administration"\n\n' "$date" "$version"
    printf '# NAME\n\nlocalsad, localsactl \\- local InfiniBand Subnet Administrator and its control tool\n\n'
    sed -e '1{/^# /d}' -e 's/\[\([^]]*\)\](#[^)]*)/\1/g' "$in"
} | go-md2man >"$out.tmp"
mv "$out.tmp" "$out"
