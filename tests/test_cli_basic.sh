#!/usr/bin/env bash
# tests/test_cli_basic.sh -- the headscope program's basic contract:
#   `headscope --help` exits 0 and prints the usage with the command list on stdout;
#   an unknown subcommand exits 2 with exactly one line on stderr, nothing on stdout;
#   no arguments is a usage error (2).
# Run as: bash tests/test_cli_basic.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_cli_basic.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_cli_basic.sh BUILD_DIR HEADSCOPE_BIN}
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR}/cli_basic.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# --help: exit 0, usage on stdout, nothing on stderr
rc=0
"$HS" --help >"$TMP/out" 2>"$TMP/err" || rc=$?
[ "$rc" -eq 0 ] || fail "headscope --help exited $rc, expected 0"
grep -q '^usage: headscope' "$TMP/out" || fail "--help: no 'usage: headscope' line on stdout"
for cmd in train eval inspect circuit weights demo; do
    grep -q "^  $cmd " "$TMP/out" || fail "--help does not list the '$cmd' command"
done
[ ! -s "$TMP/err" ] || fail "--help wrote to stderr: $(cat "$TMP/err")"
# prompts --help names every command that reads a prompt set (--data)
"$HS" prompts --help | tr '\n' ' ' >"$TMP/prompts_help"
for cmd in $(sed -n 's/^  \([a-z]*\) .*/\1/p' "$TMP/out"); do
    "$HS" "$cmd" --help 2>/dev/null | grep -e '^  --data ' >/dev/null || continue
    grep -e "[ ,]$cmd[ ,]" "$TMP/prompts_help" >/dev/null ||
        fail "prompts --help does not name $cmd, which reads a prompt set: $(cat "$TMP/prompts_help")"
done

# unknown subcommand: exit 2, one line on stderr naming it, nothing on stdout
rc=0
"$HS" frobnicate --x >"$TMP/out" 2>"$TMP/err" || rc=$?
[ "$rc" -eq 2 ] || fail "unknown subcommand exited $rc, expected 2"
lines=$(wc -l <"$TMP/err")
[ "$lines" -eq 1 ] || fail "unknown subcommand: $lines lines on stderr, expected 1: $(cat "$TMP/err")"
grep -q "frobnicate" "$TMP/err" || fail "unknown subcommand: message does not name it: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "unknown subcommand wrote to stdout: $(cat "$TMP/out")"

# no arguments: usage error
rc=0
"$HS" >"$TMP/out" 2>"$TMP/err" || rc=$?
[ "$rc" -eq 2 ] || fail "no arguments exited $rc, expected 2"

# the OpenBLAS kernels: --version names the core in use; a core set by the
# user is kept; started through the dynamic loader the program still runs
# (its re-exec with OPENBLAS_CORETYPE would start the loader, not headscope)
v=$(OPENBLAS_CORETYPE=Prescott "$HS" --version) || fail "--version with OPENBLAS_CORETYPE failed"
case "$v" in "headscope "*"(OpenBLAS core Prescott)") ;; *) fail "--version does not keep the user's core: $v" ;; esac
"$HS" --version | grep "OpenBLAS core [A-Za-z0-9]" >/dev/null || fail "--version does not name the OpenBLAS core"
LDSO=
for f in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do [ -x "$f" ] && LDSO=$f && break; done
if [ -n "$LDSO" ]; then
    v=$(env -u OPENBLAS_CORETYPE "$LDSO" "$HS" --version) || fail "headscope through $LDSO failed"
    case "$v" in "headscope "*) ;; *) fail "headscope through $LDSO printed: $v" ;; esac
fi

# the program's RUNPATH has no empty entry (an empty one is the current
# directory: the loader would look there for every library first)
rp=$(readelf -d "$HS" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p; s/.*(RPATH).*\[\(.*\)\]/\1/p')
[ -z "$rp" ] || case ":$rp:" in
    *::*) fail "headscope's RUNPATH '$rp' has an empty entry (the current directory)" ;;
esac

echo "cli_basic: ok"

