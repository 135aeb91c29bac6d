#!/usr/bin/env bash
# docs/localsad.md (the man page) documents every option localsad and localsactl (each subcommand)
# accept and every counter localsad reports; docs/localsad.conf.example is a valid configuration whose options exist.
#   tests/lint/docs.sh BIN_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: tests/lint/docs.sh BIN_DIR}
doc=docs/localsad.md
missing=0
# every subcommand of localsactl has its own --help
helps() {
    if [[ $1 == localsactl ]]; then
        for sub in "" stats dump flush health "query pr" "query sa" "query raw"; do
            # shellcheck disable=SC2086 # the subcommand's words
            "$bin/localsactl" $sub --help 2>&1
        done
    else
        "$bin/$1" --help 2>&1
    fi
}
for tool in localsad localsactl; do
    options=$(helps "$tool" | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u)
    [[ -n "$options" ]] || { echo "docs: $tool --help lists no options" >&2; exit 1; }
    for o in $options; do
        if ! grep -qE -- "\`$o[\` ]|$o[ =]" "$doc"; then
            echo "docs: $tool option $o is not in $doc" >&2
            missing=1
        fi
    done
done
counters=$(grep -oE '^\s*X\([a-z_]+\)' userspace/engine/counters.hpp | grep -oE '[a-z_]+\)' | tr -d ')')
[[ -n "$counters" ]] || { echo "docs: no counters found in userspace/engine/counters.hpp" >&2; exit 1; }
for c in $counters; do
    if ! grep -q "\`$c\`" "$doc"; then
        echo "docs: counter $c is not in $doc" >&2
        missing=1
    fi
done
example=docs/localsad.conf.example
if ! err=$("$bin/localsad" --config "$example" --check-config 2>&1 >/dev/null); then
    echo "docs: $example is not a valid configuration: $err" >&2
    missing=1
fi
uncommented=$(sed -n 's/^# \([a-z-]*\) = .*/\1/p' "$example")
# The help is read once: grep -q leaves early, and a writer still writing then dies of SIGPIPE,
# which pipefail would report as an unknown option.
help=$("$bin/localsad" --help)
for o in $uncommented; do
    grep -q -- "--$o" <<<"$help" || { echo "docs: $example names --$o, unknown" >&2; missing=1; }
done
((missing == 0)) || exit 1
echo "docs: every option of localsad and localsactl and $(wc -w <<<"$counters") counters documented"
