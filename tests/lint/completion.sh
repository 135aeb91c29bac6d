#!/usr/bin/env bash
# localsactl's bash completion offers the subcommands, each subcommand's options and the query
# kinds, and every option it offers is one `localsactl ... --help` lists.
#   tests/lint/completion.sh BIN_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: tests/lint/completion.sh BIN_DIR}
# shellcheck source=userspace/tools/localsactl.bash-completion
. userspace/tools/localsactl.bash-completion
complete_line() { # WORDS...: what completing the last word offers
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMPREPLY=()
    _localsactl
    echo "${COMPREPLY[*]}"
}
fail=0
expect() { # WHAT GOT WANTED
    if [[ " $2 " != *" $3 "* ]]; then
        echo "completion: $1: offered '$2', not '$3'" >&2
        fail=1
    fi
}
expect "subcommands" "$(complete_line localsactl "")" stats
expect "subcommands" "$(complete_line localsactl "")" query
expect "after -C CA" "$(complete_line localsactl -C mlx5_0 du)" dump
expect "query kinds" "$(complete_line localsactl query "")" pr
expect "query pr options" "$(complete_line localsactl query pr --s)" --sgid
expect "query sa options" "$(complete_line localsactl -j query sa --a)" --attr
expect "stats --format" "$(complete_line localsactl stats --format p)" prometheus
# Every option offered for a subcommand is one that subcommand's --help lists (or a global one).
global=$("$bin/localsactl" --help)
for sub in stats dump flush health "query pr" "query sa" "query raw"; do
    # shellcheck disable=SC2086 # the subcommand's words
    help=$("$bin/localsactl" $sub --help)$global
    # shellcheck disable=SC2086
    for o in $(complete_line localsactl $sub -); do
        [[ $o == -h || $o == --help ]] && continue
        grep -qE -- "(^|[ ,])$o([ ,]|$)" <<<"$help" ||
            { echo "completion: localsactl $sub offers $o, which its --help does not list" >&2; fail=1; }
    done
done
((fail == 0)) || exit 1
echo "completion: subcommands, query kinds and options offered, each one localsactl knows"
