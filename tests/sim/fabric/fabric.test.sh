#!/usr/bin/env bash
# sim tier: scripts/fabric itself. Brings up a 16-host fat tree (ibsim + OpenSM under
# umad2sim) and checks: generator, OpenSM MASTER, a LID on every host, PathRecord between two
# hosts, the independent SA request count, ibsim console commands, a second fabric next to the
# first, and that `down` leaves no process behind.
# Usage: fabric.test.sh [path/to/scripts/fabric [path/to/sa_flood]]
set -uo pipefail

FABRIC=${1:-$(cd "$(dirname "$0")/../../.." && pwd)/scripts/fabric}
FLOOD=${2:-}
[[ -x "$FABRIC" ]] || { echo "FAIL: $FABRIC not executable"; exit 1; }
[[ -z "$FLOOD" || -x "$FLOOD" ]] || { echo "FAIL: $FLOOD not executable"; exit 1; }

failures=0
t0=$SECONDS
pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() { # check DESCRIPTION COMMAND...
    local d=$1
    shift
    if "$@"; then pass "$d"; else fail "$d"; fi
}

WORK=$(mktemp -d /tmp/localsa-fabric-test.XXXXXX)
A=$WORK/a
B=$WORK/b
cleanup() {
    "$FABRIC" down --dir "$A" >/dev/null 2>&1
    "$FABRIC" down --dir "$B" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

alive() { # alive PID: running and not a zombie
    local s
    [[ -r /proc/$1/stat ]] || return 1
    read -r s <"/proc/$1/stat" 2>/dev/null || return 1
    s=${s##*) }
    [[ ${s:0:1} != Z && ${s:0:1} != X ]]
}

# PathRecord Get-or-table from NODE for SLID -> DLID; prints "slid dlid" of the answer
pr_query() { # DIR NODE SLID DLID
    "$FABRIC" run --dir "$1" --node "$2" -- saquery -p --slid "$3" --dlid "$4" 2>/dev/null |
        awk '/^[ \t]*slid\./ { sub(/.*\./, ""); s = $0 } /^[ \t]*dlid\./ { sub(/.*\./, ""); d = $0 }
             END { if (s != "") print s, d }'
}

# ---- generator ---------------------------------------------------------------------------
for n in 2 16 1024; do
    got=$("$FABRIC" gen --hosts "$n" | grep -cE '^Hca[[:space:]]+1[[:space:]]+"H[0-9]+"$')
    check "gen --hosts $n: $n hosts (got $got)" [ "$got" = "$n" ]
done
check "gen rejects a tree too big for the radix" \
    bash -c "! '$FABRIC' gen --hosts 100 --radix 8 >/dev/null 2>&1"
check "gen rejects 1 host" bash -c "! '$FABRIC' gen --hosts 1 >/dev/null 2>&1"
# every link is declared from both ends (ibsim needs consistent peers)
check "gen: every link declared on both ends" bash -c "'$FABRIC' gen --hosts 40 | awk '
    /^(Hca|Switch)/ { split(\$0, a, \"\\\"\"); node = a[2]; next }
    /^\\[/ { split(\$0, a, \"\\\"\"); lp = \$1; gsub(/[^0-9]/, \"\", lp); rp = a[3]; sub(/\\].*/, \"\", rp); sub(/^\\[/, \"\", rp)
            l[node \":\" lp] = a[2] \":\" rp }
    END { for (k in l) if (l[l[k]] != k) bad++; exit bad > 0 }'"

# ---- up --------------------------------------------------------------------------------
t_up=$SECONDS
if ! "$FABRIC" up --dir "$A" --hosts 16 --count-sa --timeout 60; then
    fail "up --hosts 16 --count-sa"
    exit 1
fi
pass "up --hosts 16 --count-sa ($((SECONDS - t_up)) s)"
# shellcheck disable=SC1091
source "$A/env"
check "env names the SM node H0" [ "$FABRIC_SM_NODE" = H0 ]
check "env has ibsim and opensm pids alive" alive "$FABRIC_IBSIM_PID"
check "opensm alive" alive "$FABRIC_OPENSM_PID"
check "env exports a socket name" [ -n "$IBSIM_SOCKNAME" ]
check "umad2sim library in env exists" [ -f "$FABRIC_PRELOAD" ]

# ---- OpenSM is MASTER (asked over the fabric, from another node) --------------------------
smi=$("$FABRIC" run --dir "$A" --node H9 -- sminfo 2>&1)
check "sminfo from H9 reports SMINFO_MASTER ($smi)" grep -q SMINFO_MASTER <<<"$smi"
check "sminfo's SM LID is the env's FABRIC_SM_LID ($FABRIC_SM_LID)" \
    grep -qE "sm lid $FABRIC_SM_LID( |,)" <<<"$smi"

# ---- every host has a LID, all distinct -----------------------------------------------------
declare -A lid
lids_ok=1
while read -r n l; do lid[$n]=$l; done < <("$FABRIC" lid --dir "$A" --all)
for ((i = 0; i < 16; i++)); do
    [[ "${lid[H$i]:-}" =~ ^[0-9]+$ && "${lid[H$i]}" -gt 0 ]] || { lids_ok=0; echo "     H$i has no LID (${lid[H$i]:-})"; }
done
check "every one of 16 hosts has a LID" [ "$lids_ok" = 1 ]
check "host LIDs are distinct" [ "$(printf '%s\n' "${lid[@]}" | sort -u | wc -l)" = 16 ]
check "SM node's LID matches env" [ "${lid[H0]}" = "$FABRIC_SM_LID" ]
check "lid H7 alone agrees with lid --all" [ "$("$FABRIC" lid --dir "$A" H7)" = "${lid[H7]}" ]
check "lid of an unknown node fails" bash -c "! '$FABRIC' lid --dir '$A' H99 >/dev/null 2>&1"

# ---- PathRecord between two hosts ---------------------------------------------------------
ans=$(pr_query "$A" H3 "${lid[H3]}" "${lid[H12]}")
check "PathRecord H3 -> H12 answered with slid ${lid[H3]} dlid ${lid[H12]} (got '$ans')" \
    [ "$ans" = "${lid[H3]} ${lid[H12]}" ]

# ---- independent SA count ------------------------------------------------------------------
pr0=$("$FABRIC" sa-count --dir "$A")
all0=$("$FABRIC" sa-count --dir "$A" --attr all)
K=12
sent=0
for ((i = 0; i < K; i++)); do
    s=H$((i % 16)) d=H$(((i * 7 + 3) % 16))
    [[ -n "$(pr_query "$A" "$s" "${lid[$s]}" "${lid[$d]}")" ]] && sent=$((sent + 1))
done
check "all $K PathRecord queries answered ($sent)" [ "$sent" = "$K" ]
pr1=$("$FABRIC" sa-count --dir "$A")
check "sa-count PathRecord grew by exactly $K ($pr0 -> $pr1)" [ "$((pr1 - pr0))" = "$K" ]
"$FABRIC" run --dir "$A" --node H5 -- saquery -c >/dev/null 2>&1 # one ClassPortInfo Get
pr2=$("$FABRIC" sa-count --dir "$A")
all2=$("$FABRIC" sa-count --dir "$A" --attr all)
cpi=$("$FABRIC" sa-count --dir "$A" --attr ClassPortInfo)
check "a ClassPortInfo query is not counted as PathRecord ($pr1 -> $pr2)" [ "$pr2" = "$pr1" ]
check "ClassPortInfo counted once ($cpi)" [ "$cpi" = 1 ]
check "sa-count all grew by $((K + 1)) ($all0 -> $all2)" [ "$((all2 - all0))" = "$((K + 1))" ]
if [[ -n "$FLOOD" ]]; then
    # volume: 2000 Gets, 16 outstanding, from one client
    pr3=$("$FABRIC" sa-count --dir "$A")
    fl=$("$FABRIC" run --dir "$A" --node H7 -- "$FLOOD" --count 2000 --depth 16 \
        --slid "${lid[H7]}" --dlid "${lid[H2]},${lid[H9]},${lid[H15]}" 2>&1)
    check "sa_flood: 2000 PathRecord Gets answered OK ($fl)" grep -q "answered 2000 ok 2000 " <<<"$fl"
    pr4=$("$FABRIC" sa-count --dir "$A")
    check "sa-count PathRecord grew by exactly 2000 ($pr3 -> $pr4)" [ "$((pr4 - pr3))" = 2000 ]
else
    echo "skip - sa_flood volume check (no sa_flood binary given)"
fi
check "sa-count rejects an unknown attribute" \
    bash -c "! '$FABRIC' sa-count --dir '$A' --attr Bogus >/dev/null 2>&1"

# ---- ibsim console: Unlink / ReLink ---------------------------------------------------------
"$FABRIC" cmd --dir "$A" 'Unlink "H12"' >/dev/null
gone=0
for ((i = 0; i < 50; i++)); do
    [[ -z "$(pr_query "$A" H3 "${lid[H3]}" "${lid[H12]}")" ]] && { gone=1; break; }
    sleep 0.1
done
check "after Unlink \"H12\" the master has no path H3 -> H12" [ "$gone" = 1 ]
"$FABRIC" cmd --dir "$A" 'ReLink "H12"' >/dev/null
back=0
for ((i = 0; i < 50; i++)); do
    [[ -n "$(pr_query "$A" H3 "${lid[H3]}" "${lid[H12]}")" ]] && { back=1; break; }
    sleep 0.1
done
check "after ReLink \"H12\" the path is back" [ "$back" = 1 ]
att=$("$FABRIC" cmd --dir "$A" Attached)
check "only OpenSM holds an ibsim client slot after the queries ($att)" \
    [ "$(grep -c '^Client' <<<"$att")" = 1 ]

# ---- a second fabric next to the first ----------------------------------------------------
if "$FABRIC" up --dir "$B" --hosts 4 --timeout 60 >/dev/null; then
    pass "second fabric up while the first runs"
    # shellcheck disable=SC1091
    sockB=$(. "$B/env"; echo "$IBSIM_SOCKNAME")
    check "the fabrics use different socket names" [ "$sockB" != "$IBSIM_SOCKNAME" ]
    l1=$("$FABRIC" lid --dir "$B" H1)
    l3=$("$FABRIC" lid --dir "$B" H3)
    ansB=$(pr_query "$B" H1 "$l1" "$l3")
    check "PathRecord in the second fabric ($ansB)" [ -n "$l3" ] && [ "$ansB" = "$l1 $l3" ]
    check "the first fabric still answers" [ -n "$(pr_query "$A" H3 "${lid[H3]}" "${lid[H12]}")" ]
    check "H5 does not exist in the 4-host fabric" \
        bash -c "! '$FABRIC' run --dir '$B' --node H5 true >/dev/null 2>&1"
else
    fail "second fabric up while the first runs"
fi

# ---- down ---------------------------------------------------------------------------------
pids_a="$FABRIC_IBSIM_PID $FABRIC_OPENSM_PID"
# shellcheck disable=SC1091
pids_b=$(. "$B/env" 2>/dev/null && echo "$FABRIC_IBSIM_PID $FABRIC_OPENSM_PID")
t_down=$SECONDS
check "down A" "$FABRIC" down --dir "$A"
check "down B" "$FABRIC" down --dir "$B"
left=""
for p in $pids_a $pids_b; do alive "$p" && left="$left $p"; done
check "no ibsim/opensm left running after down (left:${left:- none})" [ -z "$left" ]
check "ibsim's sockets are gone" bash -c "! grep -qE '@($IBSIM_SOCKNAME|${sockB:-none}):' /proc/net/unix"
check "down is idempotent" "$FABRIC" down --dir "$A"
check "down took under 10 s ($((SECONDS - t_down)) s)" [ $((SECONDS - t_down)) -lt 10 ]

# ---- partial start is cleaned up ------------------------------------------------------------
printf 'Hca\t1 "X0"\n[1]\t"nowhere"[1]\n\n' >"$WORK/bad.net"
check "up with a broken net file fails" bash -c "! '$FABRIC' up --dir '$WORK/c' --net '$WORK/bad.net' --timeout 10 >/dev/null 2>&1"
leftc=""
[[ -f "$WORK/c/pids" ]] && while read -r _ p; do alive "$p" && leftc="$leftc $p"; done <"$WORK/c/pids"
check "failed up left nothing running (left:${leftc:- none})" [ -z "$leftc" ]

echo "# $failures failure(s), $((SECONDS - t0)) s"
[[ $failures -eq 0 ]]
