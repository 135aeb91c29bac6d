# shellcheck shell=bash
# Guest-side helpers for the tests that drive kernel/test/localsa_test.ko on simhca1 port 1 and
# read sa_redirect's per-port state (sourced after vm-checks.sh).

DBG=/sys/kernel/debug/localsa_test
RDBG=/sys/kernel/debug/ib_sa/simhca1/redirect

# op NAME ARGS...: run a localsa_test operation on simhca1 port 1, print its result line
op() {
    local name=$1
    shift
    echo "simhca1 1 $*" >"$DBG/$name" || { echo "status=write-failed"; return 0; }
    cat "$DBG/$name"
}
# val KEY RESULT: the number after KEY= in an operation's result line
val() { sed -n "s/.*\\b$1=\\(-\\{0,1\\}[0-9]*\\).*/\\1/p" <<<"$2"; }
# redir COLUMN: port 1's column of the redirect table (3 state, 4 redirected, 5 fallen back)
redir() { awk -v n="$1" '$1 == "1" { print $n }' "$RDBG"; }
state_is() { [[ $(redir 3) == "$1" ]]; }
